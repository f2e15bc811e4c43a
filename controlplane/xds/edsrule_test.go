package xds

import (
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// sidecarMesh is topology(n, 2) with every endpoint's workload running a sidecar (its
// assignments carry tlsMode "istio" unless a rule says otherwise).
func sidecarMesh(n int) model.SnapshotInput {
	in := topology(n, 2)
	for _, eps := range in.Endpoints {
		for _, ep := range eps {
			ep.Labels = map[string]string{"app": "x", gen.TLSModeLabel: "istio"}
		}
	}
	return in
}

// tlsRule is a DestinationRule for host in ns-0 with TLS mode m, exported to exportTo.
func tlsRule(host string, m networking.ClientTLSSettings_TLSmode, exportTo ...string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "plain", Namespace: "ns-0"},
		Spec: &networking.DestinationRule{Host: host, ExportTo: exportTo, TrafficPolicy: &networking.TrafficPolicy{
			Tls: &networking.ClientTLSSettings{Mode: m},
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_LEAST_REQUEST}}}},
		}}}
}

// mtlsEndpoints reports whether every endpoint of the encoded assignment r carries tlsMode
// "istio" (and fails the test when only some do).
func mtlsEndpoints(t *testing.T, r *cache.Resource) bool {
	t.Helper()
	var resp discoveryv3.DiscoveryResponse // Framed is the resources field of a response
	if err := proto.Unmarshal(r.Framed, &resp); err != nil || len(resp.Resources) != 1 {
		t.Fatalf("%s: %v", r.Name, err)
	}
	var cla endpointv3.ClusterLoadAssignment
	if err := resp.Resources[0].UnmarshalTo(&cla); err != nil {
		t.Fatal(err)
	}
	return claMTLS(t, &cla)
}

func claMTLS(t *testing.T, cla *endpointv3.ClusterLoadAssignment) bool {
	t.Helper()
	with, n := 0, 0
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			n++
			if e.GetMetadata().GetFilterMetadata()["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue() == "istio" {
				with++
			}
		}
	}
	if n == 0 || with != 0 && with != n {
		t.Fatalf("%s: %d of %d endpoints with tlsMode istio", cla.GetClusterName(), with, n)
	}
	return with == n
}

func nsProxy(ns string, i int) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.1." + string(rune('1'+i))}, ID: "pod.ns", Namespace: ns}
}

// TestNamedAssignmentFollowsRuleChange: a DestinationRule that sets DISABLE for a service takes
// the tlsMode metadata off its named assignment, and removing it puts it back: the cached
// assignment of before the change is never served for the new rule. Other services'
// assignments keep their cached bytes.
func TestNamedAssignmentFollowsRuleChange(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := sidecarMesh(2)
	host := in.Services[0].Hostname
	names := []string{gen.ClusterName(gen.Outbound, 8080, "", host), gen.ClusterName(gen.Outbound, 8080, "", in.Services[1].Hostname)}
	p := nsProxy("ns-1", 0)
	get := func() (rule, other *cache.Resource) {
		t.Helper()
		res, err := s.resources(p, s.current(), gen.EndpointType, names, false)
		if err != nil || len(res) != 2 {
			t.Fatalf("%d assignments, %v", len(res), err)
		}
		byName := map[string]*cache.Resource{res[0].Name: res[0], res[1].Name: res[1]}
		return byName[names[0]], byName[names[1]]
	}
	snap := model.NewSnapshot(1, in)
	s.Push(snap, &model.PushRequest{Full: true})
	r0, o0 := get()
	if !mtlsEndpoints(t, r0) {
		t.Fatal("without a rule: no tlsMode istio")
	}
	dr := tlsRule(host, networking.ClientTLSSettings_DISABLE)
	key := istioconfig.Key{Kind: dr.Kind, Name: dr.Name, Namespace: dr.Namespace}
	for i, c := range []*istioconfig.Config{dr, nil, dr} {
		snap = snap.Apply(snap.Seq+1, model.SnapshotDelta{Configs: map[istioconfig.Key]*istioconfig.Config{key: c}})
		s.Push(snap, &model.PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key: {}}})
		r, o := get()
		if got, want := mtlsEndpoints(t, r), c == nil; got != want {
			t.Errorf("change %d (rule %v): tlsMode istio %v, want %v", i, c != nil, got, want)
		}
		if o != o0 {
			t.Errorf("change %d: the other service's assignment was rebuilt", i)
		}
		if c == nil && r != r0 {
			t.Errorf("change %d: without the rule, the first entry was not served again", i)
		}
	}
}

// TestNamedAssignmentRuleExportIsolation: a rule exported to ns-1 alone changes the assignment
// of ns-1's proxies only, whichever namespace asks first and through either path (per name,
// or a whole subscription's shared answer); the proxies of ns-2 and ns-3, which do not see the
// rule, share one entry with each other, and the two proxies of ns-1 share theirs.
func TestNamedAssignmentRuleExportIsolation(t *testing.T) {
	in := sidecarMesh(2)
	host := in.Services[0].Hostname
	in.Configs = []*istioconfig.Config{tlsRule(host, networking.ClientTLSSettings_DISABLE, "ns-1")}
	names := []string{gen.ClusterName(gen.Outbound, 8080, "", host)}
	for _, shared := range []bool{false, true} {
		for _, order := range [][]string{{"ns-1", "ns-2", "ns-3", "ns-1"}, {"ns-2", "ns-1", "ns-3", "ns-1"}} {
			s, err := New(testOptions())
			if err != nil {
				t.Fatal(err)
			}
			s.Push(model.NewSnapshot(1, in), &model.PushRequest{Full: true})
			set := s.sets.Intern(map[string]struct{}{names[0]: {}})
			got := map[string][]*cache.Resource{}
			for i, ns := range order {
				p := nsProxy(ns, i)
				var res []*cache.Resource
				if shared {
					res, err = s.subscribed(p, s.current(), gen.EndpointType, set)
				} else {
					res, err = s.resources(p, s.current(), gen.EndpointType, names, false)
				}
				if err != nil || len(res) != 1 {
					t.Fatalf("%d assignments, %v", len(res), err)
				}
				if mtls, want := mtlsEndpoints(t, res[0]), ns != "ns-1"; mtls != want {
					t.Errorf("shared %v, order %v: proxy of %s: tlsMode istio %v, want %v", shared, order, ns, mtls, want)
				}
				got[ns] = append(got[ns], res[0])
			}
			if got["ns-2"][0] != got["ns-3"][0] {
				t.Errorf("shared %v, order %v: ns-2 and ns-3 see the same rules but got two entries", shared, order)
			}
			if got["ns-1"][0] != got["ns-1"][1] {
				t.Errorf("shared %v, order %v: two proxies of ns-1 got two entries", shared, order)
			}
		}
	}
}

// TestRuleChangePushesOnlyChangedAssignments: a rule exported to ns-1 arrives (a full push that
// names it). The proxy of ns-1 gets one EDS response with the one assignment that changed, in
// plaintext; the proxy of ns-2, which does not see the rule, gets no EDS response.
func TestRuleChangePushesOnlyChangedAssignments(t *testing.T) {
	ts := startServer(t, testOptions())
	in := sidecarMesh(2)
	host := in.Services[0].Hostname
	ts.push(in, true)
	names := []string{gen.ClusterName(gen.Outbound, 8080, "", host), gen.ClusterName(gen.Outbound, 8080, "", in.Services[1].Hostname)}
	sees := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-1", ""))
	blind := dial(t, ts.addr, sidecarNode(t, "10.200.0.2", "ns-2", ""))
	for _, c := range []*adsClient{sees, blind} {
		c.send(gen.EndpointType, "", "", names, "")
		r := c.recv()
		for name, cla := range decode(t, r, func() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} }) {
			if !claMTLS(t, cla) {
				t.Fatalf("%s without a rule: no tlsMode istio", name)
			}
		}
		c.ack(r)
	}
	ts.settle(t)

	in.Configs = []*istioconfig.Config{tlsRule(host, networking.ClientTLSSettings_DISABLE, "ns-1")}
	ts.seq++
	ts.Push(model.NewSnapshot(ts.seq, in), &model.PushRequest{Full: true, Start: time.Now(),
		ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: istioconfig.KindDestinationRule, Name: "plain", Namespace: "ns-0"}: {}}})
	r := sees.recv()
	got := decode(t, r, func() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} })
	if r.TypeUrl != gen.EndpointType || len(got) != 1 || got[names[0]] == nil {
		t.Fatalf("ns-1 got %s with %d resources, want the assignment of %s alone", r.TypeUrl, len(got), host)
	}
	if claMTLS(t, got[names[0]]) {
		t.Error("ns-1: the rule's DISABLE left tlsMode istio")
	}
	sees.ack(r)
	ts.settle(t)
	sees.barrier()
	blind.barrier()
}
