package xds

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
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
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "svc-0", Namespace: "ns-0"}, Spec: &networking.DestinationRule{
		Host: in.Services[0].Hostname, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{}}}}
	in.Configs = []*istioconfig.Config{dr}
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
	dr2 := &istioconfig.Config{Meta: dr.Meta, Spec: &networking.DestinationRule{Host: in.Services[0].Hostname}}
	snap2 := snap1.Apply(2, model.SnapshotDelta{Configs: map[istioconfig.Key]*istioconfig.Config{dr.Key(): dr2}})
	s.Push(snap2, &model.PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{dr.Key(): {}}})
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

// Routers with an HTTPS server (a credential the server cannot serve) and sidecars in two
// localities under a DestinationRule with outlier detection (ranked assignments): the realistic
// fake Envoys accept everything, routers activate the HTTPS listener once the credential's
// fetch timeout passes (as with istiod and a missing secret), nothing is NACKed.
func TestFakeEnvoysHTTPSGatewayAndLocality(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(30, 2)
	backend := "svc-7.ns-1.svc.cluster.local"
	// fakeenvoy's identities put sidecars in zones zone-0..2 of region-0: ranked 0 and 1 for
	// some, both 0 for others.
	in.Endpoints[backend][0].Locality = model.Locality{Region: "region-0", Zone: "zone-0"}
	in.Endpoints[backend][1].Locality = model.Locality{Region: "region-0", Zone: "zone-1"}
	in.Configs = gatewayConfigs(backend)
	gw := in.Configs[0].Spec.(*networking.Gateway)
	gw.Servers = append(gw.Servers, &networking.Server{Port: &networking.Port{Number: 8443, Name: "https", Protocol: "HTTPS"},
		Hosts: []string{"*/app.example.com"}, Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialName: "app-cert"}})
	in.Configs = append(in.Configs, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "svc-7", Namespace: "ns-1"},
		Spec: &networking.DestinationRule{Host: backend, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{}}}})
	ts.push(in, true)

	const n = 6
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	router := fakeenvoy.IdentityTemplate{Type: "router", Namespace: "istio-system", IPBase: "10.200.0.1", Labels: map[string]string{"istio": "ingressgateway"}}
	sidecar := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.201.0.1"}
	routerWants := probe.Expectation{All: []probe.Predicate{
		{Op: probe.ListenerPresent, Resource: "0.0.0.0_8443"},
		{Op: probe.RouteTo, Resource: "https.8443.https.ingress.istio-system", Host: "app.example.com", Cluster: gen.ClusterName(gen.Outbound, 8080, "", backend)},
	}}
	views := make([]*viewHolder, n)
	runFakeEnvoys(t, ts, rec, n, 30*time.Second, func(i int) fakeEnvoy {
		if i < 2 {
			views[i] = &viewHolder{want: routerWants}
			return fakeEnvoy{node: router.Node(i), delta: i%2 == 1, hooks: hookTee{rec, views[i]}, fetchTimeout: 300 * time.Millisecond}
		}
		return fakeEnvoy{node: sidecar.Node(i), delta: i%2 == 1}
	})
	for i := range 2 {
		if !views[i].holds() {
			t.Errorf("router %d's full config fails %v", i, routerWants.All)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}
