package xds

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

// TestLocalityAssignmentClasses: with outlier detection on one service, its named assignment is
// cached once per proxy locality (proxies of one locality share the bytes, proxies of another
// get their own ranking), while every other service's assignment stays shared by all proxies;
// a change of the DestinationRule rebuilds it, and removing the rule makes it shared again.
func TestLocalityAssignmentClasses(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := topology(2, 2)
	in.Endpoints[in.Services[0].Hostname][1].Locality = model.Locality{Region: "r2", Zone: "z1"}
	dr := &model.Config{Meta: model.Meta{Kind: model.KindDestinationRule, Name: "svc-0", Namespace: "ns-0"}, Spec: &networking.DestinationRule{
		Host: in.Services[0].Hostname, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{}}}}
	in.Configs = []*model.Config{dr}
	snap1 := model.NewSnapshot(1, in)
	s.Push(snap1, &model.PushRequest{Full: true})
	dep, shared := gen.ClusterName(gen.Outbound, 8080, "", in.Services[0].Hostname), gen.ClusterName(gen.Outbound, 8080, "", in.Services[1].Hostname)
	proxy := func(i int, region string) *model.Proxy {
		p := benchProxy(i)
		p.Locality = model.Locality{Region: region, Zone: "z1"}
		return p
	}
	get := func(p *model.Proxy) map[string]uint64 {
		t.Helper()
		res, err := s.resources(p, s.current(), gen.EndpointType, []string{dep, shared}, false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, r := range res {
			out[r.Name] = uintptr64(r)
		}
		return out
	}
	a1, a2, b := get(proxy(1, "r1")), get(proxy(2, "r1")), get(proxy(3, "r2"))
	if a1[dep] != a2[dep] {
		t.Error("two proxies of one locality do not share the ranked assignment")
	}
	if a1[dep] == b[dep] {
		t.Error("proxies of different localities share a ranked assignment")
	}
	if a1[shared] != b[shared] || a1[shared] != a2[shared] {
		t.Error("an assignment without locality load balancing is not shared by every proxy")
	}
	if gen.LocalityClass(gen.EndpointType, proxy(1, "r1"), snap1) == gen.LocalityClass(gen.EndpointType, proxy(3, "r2"), snap1) {
		t.Error("the locality classes of r1 and r2 are equal")
	}

	// The rule without outlier detection: the assignment is rebuilt, and shared again.
	dr2 := &model.Config{Meta: dr.Meta, Spec: &networking.DestinationRule{Host: in.Services[0].Hostname}}
	snap2 := snap1.Apply(2, model.SnapshotDelta{Configs: map[model.ConfigKey]*model.Config{dr.Key(): dr2}})
	s.Push(snap2, &model.PushRequest{Full: true, ConfigsUpdated: map[model.ConfigKey]struct{}{dr.Key(): {}}})
	c1, c2 := get(proxy(1, "r1")), get(proxy(3, "r2"))
	if c1[dep] != c2[dep] {
		t.Error("without outlier detection the assignment is still per locality")
	}
	if c1[dep] == a1[dep] || c1[dep] == b[dep] {
		t.Error("the ranked assignment survived the DestinationRule change")
	}
	if c1[shared] != a1[shared] {
		t.Error("a change of svc-0's DestinationRule rebuilt svc-1's assignment")
	}
}
