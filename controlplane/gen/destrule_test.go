package gen

import (
	"slices"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestDestinationRuleSelection: istiod's order (PushContext.destinationRule): the proxy's
// namespace (its most specific host, even a wildcard, over an exact one elsewhere), then the
// service's namespace, then the root namespace; a third namespace's rules never; rules of one
// namespace for one host merged (subsets combined, the first traffic policy kept); the most
// specific host chosen before exportTo is checked.
func TestDestinationRuleSelection(t *testing.T) {
	const host = "s.svc-ns.svc.cluster.local"
	dr := func(name, ns, h string, tp bool, subsets []string, exportTo ...string) *istioconfig.Config {
		spec := &networking.DestinationRule{Host: h, ExportTo: exportTo}
		if tp {
			spec.TrafficPolicy = &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}}
		}
		for _, s := range subsets {
			spec.Subsets = append(spec.Subsets, &networking.Subset{Name: s, Labels: map[string]string{"v": s}})
		}
		return drConfig(name, ns, spec)
	}
	tests := []struct {
		name    string
		proxyNS string
		drs     []*istioconfig.Config
		want    string   // the chosen rule's name, "" for none
		subsets []string // of the chosen (merged) rule
	}{
		{"service namespace", "client", []*istioconfig.Config{dr("svc", "svc-ns", host, true, nil)}, "svc", nil},
		{"proxy namespace first", "client", []*istioconfig.Config{dr("svc", "svc-ns", host, true, nil), dr("mine", "client", host, true, nil)}, "mine", nil},
		{"a proxy-namespace wildcard beats an exact rule elsewhere", "client", []*istioconfig.Config{dr("svc", "svc-ns", host, true, nil), dr("wild", "client", "*.svc.cluster.local", true, nil)}, "wild", nil},
		{"a third namespace is ignored", "client", []*istioconfig.Config{dr("third", "third", host, true, nil)}, "", nil},
		{"root namespace last", "client", []*istioconfig.Config{dr("root", model.RootNamespace, host, true, nil), dr("svc", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil)}, "svc", nil},
		{"root namespace", "client", []*istioconfig.Config{dr("root", model.RootNamespace, "*.cluster.local", true, nil)}, "root", nil},
		{"not exported to the proxy", "client", []*istioconfig.Config{dr("svc", "svc-ns", host, true, nil, "other")}, "", nil},
		{"exported to the proxy by name", "client", []*istioconfig.Config{dr("svc", "svc-ns", host, true, nil, "client")}, "svc", nil},
		// istiod picks the most specific host before it filters by exportTo (MostSpecificHostMatch).
		{"an exact rule exported elsewhere hides the namespace's wildcard", "client", []*istioconfig.Config{
			dr("wild", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil, "*"), dr("team", "svc-ns", host, true, nil, "team")}, "", nil},
		{"... and the root namespace's rule applies", "client", []*istioconfig.Config{
			dr("wild", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil, "*"), dr("team", "svc-ns", host, true, nil, "team"), dr("root", model.RootNamespace, host, true, nil)}, "root", nil},
		{"a longer wildcard exported elsewhere hides a shorter one", "client", []*istioconfig.Config{
			dr("wide", "svc-ns", "*.cluster.local", true, nil, "*"), dr("narrow", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil, "team")}, "", nil},
		{"... not from the namespace it is exported to", "team", []*istioconfig.Config{
			dr("wide", "svc-ns", "*.cluster.local", true, nil, "*"), dr("narrow", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil, "team")}, "narrow", nil},
		{"a private rule hides nothing", "client", []*istioconfig.Config{
			dr("wild", "svc-ns", "*.svc-ns.svc.cluster.local", true, nil, "*"), dr("own", "svc-ns", host, true, nil, ".")}, "wild", nil},
		{"merged in one namespace", "client", []*istioconfig.Config{
			createdAt(dr("b", "svc-ns", host, false, []string{"v1", "v2"}), 1), createdAt(dr("a", "svc-ns", host, true, []string{"v2", "v3"}), 2)}, "b", []string{"v1", "v2", "v3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &model.Service{Hostname: host, Namespace: "svc-ns", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: tt.drs})
			p := sidecarProxy("10.0.0.9", tt.proxyNS)
			got := newIndex(s, s.ScopeFor(p)).destinationRule(host)
			if (got == nil) != (tt.want == "") || got != nil && got.Name != tt.want {
				t.Fatalf("rule %v, want %q", got, tt.want)
			}
			if got == nil {
				return
			}
			var names []string
			for _, ss := range drSpec(got).GetSubsets() {
				names = append(names, ss.GetName())
			}
			if !slices.Equal(names, tt.subsets) {
				t.Errorf("subsets %v, want %v", names, tt.subsets)
			}
			if tt.name == "merged in one namespace" && drSpec(got).GetTrafficPolicy() == nil {
				t.Error("the merged rule lost the later rule's traffic policy, which the first lacks")
			}
		})
	}
}

// TestDestinationRuleNamespaceKey: when a namespace has rules of its own, its proxies may get
// other clusters than the rest, so they must not share cached bytes; a named assignment (shared
// by all) still finds a subset that only a client namespace's rule defines.
func TestDestinationRuleNamespaceKey(t *testing.T) {
	const host = "s.svc-ns.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "svc-ns", Addresses: []string{"10.96.0.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	eps := map[string][]*model.Endpoint{host: {{Service: host, Address: "10.1.0.1", Labels: map[string]string{"v": "x"}, Weight: 1, Health: model.Healthy}}}
	mine := drConfig("mine", "client", &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "x", Labels: map[string]string{"v": "x"}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps, Configs: []*istioconfig.Config{mine}})
	client, other, other2 := sidecarProxy("10.0.0.9", "client"), sidecarProxy("10.0.0.9", "other"), sidecarProxy("10.0.0.9", "other2")
	for _, typeURL := range []string{ClusterType, ListenerType, RouteType} {
		if cacheClass(typeURL, client, s) == cacheClass(typeURL, other, s) {
			t.Errorf("%s: a proxy whose namespace has its own rule shares a class with one whose has none", typeURL)
		}
		if typeURL != RouteType && cacheClass(typeURL, other, s) != cacheClass(typeURL, other2, s) { // RDS is keyed by namespace anyway
			t.Errorf("%s: proxies of namespaces without rules do not share a class", typeURL)
		}
	}
	gc, _ := generateAll(t, client, s)
	go1, _ := generateAll(t, other, s)
	subsetCluster := ClusterName(Outbound, 80, "x", host)
	if _, ok := find(gc[ClusterType], subsetCluster); !ok {
		t.Errorf("the client namespace's proxy lacks %s", subsetCluster)
	}
	if _, ok := find(go1[ClusterType], subsetCluster); ok {
		t.Errorf("another namespace's proxy got %s", subsetCluster)
	}
	rs, err := endpoints(other, s, []string{subsetCluster})
	if err != nil || len(rs) != 1 || len(summarize(rs[0].Message.(*endpointv3.ClusterLoadAssignment))) == 0 {
		t.Errorf("named assignment %s: %v, %v; want its endpoint", subsetCluster, rs, err)
	}
}

// TestNamedAssignmentFollowsProxyNamespaceRule: a subset that both the proxy's namespace and the
// service's namespace define, differently: the proxy's cluster follows its own namespace's rule,
// and so must the named assignment it asks for (not the service namespace's, shared by all).
func TestNamedAssignmentFollowsProxyNamespaceRule(t *testing.T) {
	const host = "s.svc-ns.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "svc-ns", Addresses: []string{"10.96.0.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	eps := map[string][]*model.Endpoint{host: {
		{Service: host, Address: "10.1.0.1", Labels: map[string]string{"version": "x"}, Weight: 1, Health: model.Healthy},
		{Service: host, Address: "10.1.0.2", Labels: map[string]string{"version": "y"}, Weight: 1, Health: model.Healthy},
	}}
	rule := func(ns, version string) *istioconfig.Config {
		return drConfig("r", ns, &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": version}}}})
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps, Configs: []*istioconfig.Config{rule("client", "x"), rule("svc-ns", "y")}})
	name := ClusterName(Outbound, 80, "v1", host)
	for _, tc := range []struct{ ns, want string }{{"client", "10.1.0.1"}, {"other", "10.1.0.2"}} {
		p := sidecarProxy("10.0.0.9", tc.ns)
		rs, err := endpoints(p, s, []string{name})
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %v, %v", tc.ns, rs, err)
		}
		got := summarize(rs[0].Message.(*endpointv3.ClusterLoadAssignment))
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("proxy in %s: %s has %v, want only %s", tc.ns, name, got, tc.want)
		}
	}
	if ViewKey(EndpointType, sidecarProxy("10.0.0.9", "client"), s, false) == ViewKey(EndpointType, sidecarProxy("10.0.0.9", "other"), s, false) {
		t.Error("the named assignment of a proxy whose namespace's rule comes first shares the others' cache key")
	}
}

// TestDestinationRuleOwnServicesShareClass: a namespace whose rules are public and for its own
// services chooses for its proxies what every proxy gets (the service namespace's rule): its
// proxies keep sharing classes with the rest; a private rule splits them.
func TestDestinationRuleOwnServicesShareClass(t *testing.T) {
	const host = "s.svc-ns.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "svc-ns", Addresses: []string{"10.96.0.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	own := drConfig("own", "svc-ns", &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "x", Labels: map[string]string{"v": "x"}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{own}})
	inNS, other := sidecarProxy("10.0.0.9", "svc-ns"), sidecarProxy("10.0.0.9", "other")
	if k := drNamespaceKey(inNS, s); k != "" {
		t.Errorf("a namespace with public rules for its own service: key %q, want none", k)
	}
	if cacheClass(ClusterType, inNS, s) != cacheClass(ClusterType, other, s) {
		t.Error("its proxies no longer share clusters with the rest")
	}
	private := drConfig("own", "svc-ns", &networking.DestinationRule{Host: host, ExportTo: []string{"."}})
	s2 := model.NewSnapshot(2, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{private}})
	if k := drNamespaceKey(inNS, s2); k != "svc-ns" {
		t.Errorf("a private rule: key %q, want the namespace", k)
	}
}
