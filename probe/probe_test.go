package probe

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type view map[string]proto.Message

func (v view) Resource(typeURL, name string) proto.Message { return v[typeURL+"/"+name] }

func cla(name string, addrs ...string) *endpointv3.ClusterLoadAssignment {
	var lbs []*endpointv3.LbEndpoint
	for _, a := range addrs {
		lbs = append(lbs, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: a, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}}}}})
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}}}
}

func TestPredicates(t *testing.T) {
	const c = "outbound|8080||a.ns.svc.cluster.local"
	v := view{
		resource.EndpointType + "/" + c: cla(c, "10.0.0.1", "10.0.0.2"),
		resource.ClusterType + "/" + c:  &clusterv3.Cluster{Name: c, LbPolicy: clusterv3.Cluster_LEAST_REQUEST},
		resource.RouteType + "/8080": &routev3.RouteConfiguration{Name: "8080", VirtualHosts: []*routev3.VirtualHost{{
			Domains: []string{"a.ns.svc.cluster.local"},
			Routes: []*routev3.Route{{Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
				WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
					{Name: "outbound|8080|v1|a.ns.svc.cluster.local", Weight: wrapperspb.UInt32(80)},
					{Name: "outbound|8080|v2|a.ns.svc.cluster.local", Weight: wrapperspb.UInt32(20)}}}}}}}},
		}}},
	}
	tests := []struct {
		p    Predicate
		want bool
	}{
		{Predicate{Op: EndpointPresent, Resource: c, Address: "10.0.0.2", Port: 8080}, true},
		{Predicate{Op: EndpointPresent, Resource: c, Address: "10.0.0.3", Port: 8080}, false},
		{Predicate{Op: EndpointPresent, Resource: c, Address: "10.0.0.2", Port: 9090}, false},
		{Predicate{Op: EndpointAbsent, Resource: c, Address: "10.0.0.3", Port: 8080}, true},
		{Predicate{Op: EndpointAbsent, Resource: "missing", Address: "10.0.0.3", Port: 8080}, true},
		{Predicate{Op: EndpointCount, Resource: c, Count: 2}, true},
		{Predicate{Op: EndpointCount, Resource: "missing", Count: 0}, true},
		{Predicate{Op: ClusterPresent, Resource: c}, true},
		{Predicate{Op: ClusterAbsent, Resource: c}, false},
		{Predicate{Op: ClusterAbsent, Resource: "gone"}, true},
		{Predicate{Op: ClusterLbPolicy, Resource: c, Value: "LEAST_REQUEST"}, true},
		{Predicate{Op: ClusterLbPolicy, Resource: c, Value: "RANDOM"}, false},
		{Predicate{Op: ListenerAbsent, Resource: "0.0.0.0_8080"}, true},
		{Predicate{Op: RouteTo, Resource: "8080", Host: "a.ns.svc.cluster.local", Cluster: "outbound|8080|v2|a.ns.svc.cluster.local", Weight: 20}, true},
		{Predicate{Op: RouteTo, Resource: "8080", Host: "a.ns.svc.cluster.local", Cluster: "outbound|8080|v2|a.ns.svc.cluster.local", Weight: 50}, false},
		{Predicate{Op: RouteTo, Resource: "8080", Host: "b.ns.svc.cluster.local", Cluster: "outbound|8080|v2|a.ns.svc.cluster.local"}, false},
	}
	for _, tc := range tests {
		if err := tc.p.Validate(); err != nil {
			t.Errorf("%v: %v", tc.p, err)
		}
		if got := tc.p.Holds(v); got != tc.want {
			t.Errorf("%s: holds=%v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestValidateAndSupersede(t *testing.T) {
	bad := []Predicate{{Op: "nope", Resource: "x"}, {Op: EndpointPresent}, {Op: EndpointPresent, Resource: "c"},
		{Op: ClusterLbPolicy, Resource: "c", Value: "FASTEST"}, {Op: RouteTo, Resource: "8080"}}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	if (Expectation{}).Validate() == nil {
		t.Error("an expectation without predicates validated")
	}
	add := Expectation{All: []Predicate{{Op: EndpointPresent, Resource: "c", Address: "1.1.1.1", Port: 80}}}
	del := Expectation{All: []Predicate{{Op: EndpointAbsent, Resource: "c", Address: "1.1.1.1", Port: 80}}}
	other := Expectation{All: []Predicate{{Op: EndpointAbsent, Resource: "c", Address: "2.2.2.2", Port: 80}}}
	if !del.Supersedes(add) || del.Supersedes(del) || other.Supersedes(add) {
		t.Error("supersede rules broken")
	}
	r := Reach{Groups: []string{"a"}, Namespaces: []string{"ns-1"}}
	if !r.Includes("a", "ns-1", "") || r.Includes("b", "ns-1", "") || r.Includes("a", "ns-2", "sidecar") || !(Reach{}).Includes("x", "y", "") {
		t.Error("reach rules broken")
	}
}

func TestReachProxyType(t *testing.T) {
	tests := []struct {
		reach         Reach
		ns, proxyType string
		want          bool
	}{
		{Reach{}, "a", "router", true},
		{Reach{ProxyType: ProxyRouter}, "a", "router", true},
		{Reach{ProxyType: ProxyRouter}, "a", "sidecar", false},
		{Reach{ProxyType: ProxyRouter}, "a", "", false},
		{Reach{ProxyType: ProxySidecar}, "a", "", true}, // unknown type counts as a sidecar
		{Reach{ProxyType: ProxySidecar}, "a", "router", false},
		{Reach{Namespaces: []string{"b"}}, "a", "router", true}, // no Sidecar scoping for routers
		{Reach{Namespaces: []string{"b"}}, "a", "sidecar", false},
		{Reach{Groups: []string{"g"}}, "a", "router", false},
	}
	for _, tt := range tests {
		if got := tt.reach.Includes("x", tt.ns, tt.proxyType); got != tt.want {
			t.Errorf("%+v.Includes(x, %q, %q) = %v, want %v", tt.reach, tt.ns, tt.proxyType, got, tt.want)
		}
	}
}

func TestPredicateNamespaces(t *testing.T) {
	a := Predicate{Op: EndpointAbsent, Resource: "outbound|80||a.ns-a.svc.cluster.local", Address: "1.1.1.1", Port: 80}
	b := Predicate{Op: EndpointCount, Resource: "outbound|80||b.ns-b.svc.cluster.local", Count: 2}
	c := Predicate{Op: ClusterPresent, Resource: "outbound|80||c.ns-c.svc.cluster.local"}
	e := Expectation{EventID: 3, Kind: "zone-failure", All: []Predicate{a, b, c},
		Reach: Reach{Namespaces: []string{"ns-a", "ns-b", "ns-x"}, PredicateNamespaces: [][]string{{"ns-a", "ns-x"}, {"ns-b", "ns-x"}, nil}}}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ns, proxyType string
		want          []Predicate // nil: not reached
	}{
		{"ns-a", ProxySidecar, []Predicate{a, c}},
		{"ns-b", "", []Predicate{b, c}},
		{"ns-x", ProxySidecar, []Predicate{a, b, c}},
		{"ns-y", ProxySidecar, []Predicate{c}}, // an empty entry limits nothing
		{"ns-y", ProxyRouter, []Predicate{a, b, c}},
	}
	for _, tt := range tests {
		got, ok := e.For(tt.ns, tt.proxyType)
		if ok != (tt.want != nil) || !slices.Equal(got.All, tt.want) {
			t.Errorf("For(%q, %q) = %v, %v; want %v", tt.ns, tt.proxyType, got.All, ok, tt.want)
		}
		if got.Reach.PredicateNamespaces != nil {
			t.Errorf("For(%q): the client's expectation keeps per-predicate reach", tt.ns)
		}
	}
	narrow := e
	narrow.Reach.PredicateNamespaces = [][]string{{"ns-a"}, {"ns-b"}, {"ns-b"}}
	if _, ok := narrow.For("ns-x", ProxySidecar); ok {
		t.Error("a client no predicate applies to is reached")
	}
	if whole, ok := (Expectation{All: []Predicate{a}}).For("any", ""); !ok || len(whole.All) != 1 {
		t.Error("an expectation without per-predicate reach is not itself")
	}
	short := e
	short.Reach.PredicateNamespaces = short.Reach.PredicateNamespaces[:2]
	if err := short.Validate(); err == nil || !strings.Contains(err.Error(), "one per predicate") {
		t.Errorf("2 entries for 3 predicates: %v", err)
	}
	// It travels in the event's JSON (the probe stream to fleet shards, recorded scenarios).
	b2, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Expectation
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(back.Reach.PredicateNamespaces, e.Reach.PredicateNamespaces, slices.Equal) {
		t.Errorf("JSON round trip: %v, want %v", back.Reach.PredicateNamespaces, e.Reach.PredicateNamespaces)
	}
}

// rbacListener is a virtualInbound-like listener: an HTTP chain whose HCM holds a DENY and an
// ALLOW RBAC filter (the ALLOW one with a shadow rule), and a TCP chain with a network RBAC
// filter that lost one ALLOW rule (HTTP-only conditions), as istiod builds them.
func rbacListener(t *testing.T) *listenerv3.Listener {
	t.Helper()
	pol := func(names ...string) map[string]*rbacv3.Policy {
		m := map[string]*rbacv3.Policy{}
		for _, n := range names {
			m[n] = &rbacv3.Policy{}
		}
		return m
	}
	mustAny := func(m proto.Message) *anypb.Any {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	deny := &rbachttpv3.RBAC{Rules: &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: pol("ns[a]-policy[d]-rule[0]")}}
	allow := &rbachttpv3.RBAC{
		Rules:       &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: pol("ns[a]-policy[p]-rule[0]", "ns[a]-policy[p]-rule[1]", "ns[a]-policy[p1]-rule[0]")},
		ShadowRules: &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: pol("ns[a]-policy[dry]-rule[0]")},
	}
	hcm := &hcmv3.HttpConnectionManager{HttpFilters: []*hcmv3.HttpFilter{
		{Name: "envoy.filters.http.rbac", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(deny)}},
		{Name: "envoy.filters.http.rbac", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(allow)}},
		{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routev3.RouteConfiguration{})}},
	}}
	tcp := &rbactcpv3.RBAC{StatPrefix: "tcp.", Rules: &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: pol("ns[a]-policy[p]-rule[0]", "ns[a]-policy[t]-rule[0]")}}
	return &listenerv3.Listener{Name: "virtualInbound", FilterChains: []*listenerv3.FilterChain{
		{Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)}}}},
		{Filters: []*listenerv3.Filter{
			{Name: "envoy.filters.network.rbac", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(tcp)}},
			{Name: "envoy.filters.network.tcp_proxy"},
		}},
	}}
}

func TestListenerRBACPolicies(t *testing.T) {
	v := view{resource.ListenerType + "/virtualInbound": rbacListener(t)}
	tests := []struct {
		resource, prefix string
		count            int
		want             bool
	}{
		{"virtualInbound", "ns[a]-policy[p]-rule[", 2, true}, // HTTP chain has both, TCP one: distinct names count once
		{"virtualInbound", "ns[a]-policy[p]-rule[", 1, false},
		{"virtualInbound", "ns[a]-policy[p]-rule[", 3, false},
		{"virtualInbound", "ns[a]-policy[p1]-rule[", 1, true},  // the prefix ends with "-rule[": p does not match p1
		{"virtualInbound", "ns[a]-policy[d]-rule[", 1, true},   // DENY filter
		{"virtualInbound", "ns[a]-policy[dry]-rule[", 1, true}, // shadow rules
		{"virtualInbound", "ns[a]-policy[t]-rule[", 1, true},   // network RBAC filter
		{"virtualInbound", "ns[b]-policy[p]-rule[", 0, true},   // another namespace's policy: none
		{"virtualInbound", "ns[a]-", 6, true},
		{"missing", "ns[a]-policy[p]-rule[", 0, true}, // an absent listener holds none
		{"missing", "ns[a]-policy[p]-rule[", 2, false},
	}
	for _, tc := range tests {
		p := Predicate{Op: ListenerRBACPolicies, Resource: tc.resource, Value: tc.prefix, Count: tc.count}
		if err := p.Validate(); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if p.Op.TypeURL() != resource.ListenerType {
			t.Fatalf("type %s", p.Op.TypeURL())
		}
		if got := p.Holds(v); got != tc.want {
			t.Errorf("%s: holds=%v, want %v", p, got, tc.want)
		}
	}
	for _, bad := range []Predicate{
		{Op: ListenerRBACPolicies, Resource: "virtualInbound"},
		{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "x", Count: -1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	// A later count for the same policy supersedes an earlier one; another policy does not.
	a := Expectation{All: []Predicate{{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "ns[a]-policy[p]-rule[", Count: 2}}}
	b := Expectation{All: []Predicate{{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "ns[a]-policy[p]-rule[", Count: 3}}}
	c := Expectation{All: []Predicate{{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "ns[a]-policy[q]-rule[", Count: 3}}}
	if !b.Supersedes(a) || c.Supersedes(a) {
		t.Errorf("supersedes: b>a %v (want true), c>a %v (want false)", b.Supersedes(a), c.Supersedes(a))
	}
}

// TestListenerRBACPoliciesGarbage: typed_config bytes that do not parse count nothing.
func TestListenerRBACPoliciesGarbage(t *testing.T) {
	l := rbacListener(t)
	for _, fc := range l.FilterChains {
		for _, f := range fc.Filters {
			if tc := f.GetTypedConfig(); tc != nil {
				// Keep the prefix in the bytes so the pre-check passes, and cut the message short.
				tc.Value = append([]byte{0x2a, 0xff, 0xff}, []byte("ns[a]-policy[p]-rule[0]")...)
			}
		}
	}
	p := Predicate{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "ns[a]-policy[p]-rule[", Count: 0}
	if !p.Holds(view{resource.ListenerType + "/virtualInbound": l}) {
		t.Error("garbage counted")
	}
}

func BenchmarkListenerRBACPolicies(b *testing.B) {
	t := &testing.T{}
	v := view{resource.ListenerType + "/virtualInbound": rbacListener(t)}
	p := Predicate{Op: ListenerRBACPolicies, Resource: "virtualInbound", Value: "ns[a]-policy[p]-rule[", Count: 2}
	b.ReportAllocs()
	for b.Loop() {
		if !p.Holds(v) {
			b.Fatal("does not hold")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/eval")
}

// TestSupersedesByRemoval: a service port's deletion (ClusterAbsent of its own cluster)
// supersedes earlier expectations about what it takes away: the port's assignment, its subsets'
// clusters and lb policies, the routes to it. Other service ports, a subset cluster's absence
// and an identical deletion do not. A host's route superseded by the host routed elsewhere is
// here too: the same question, one subject.
func TestSupersedesByRemoval(t *testing.T) {
	const c = "outbound|80||svc-20.ns-0.svc.cluster.local"
	del := Predicate{Op: ClusterAbsent, Resource: c}
	tests := []struct {
		name    string
		later   Predicate
		earlier Predicate
		want    bool
	}{
		{"endpoint count of the deleted port", del, Predicate{Op: EndpointCount, Resource: c, Count: 2}, true},
		{"endpoint of the deleted port", del, Predicate{Op: EndpointPresent, Resource: c, Address: "10.0.0.1", Port: 8080}, true},
		{"lb policy of a subset", del, Predicate{Op: ClusterLbPolicy, Resource: "outbound|80|v1|svc-20.ns-0.svc.cluster.local", Value: "RANDOM"}, true},
		{"route to a subset", del, Predicate{Op: RouteTo, Resource: "80", Host: "svc-20.ns-0.svc.cluster.local", Cluster: "outbound|80|v2|svc-20.ns-0.svc.cluster.local"}, true},
		{"presence of the same cluster (same subject)", del, Predicate{Op: ClusterPresent, Resource: c}, true},
		{"the same deletion", del, del, false},
		{"another port", del, Predicate{Op: EndpointCount, Resource: "outbound|81||svc-20.ns-0.svc.cluster.local", Count: 2}, false},
		{"another service", del, Predicate{Op: EndpointCount, Resource: "outbound|80||svc-2.ns-0.svc.cluster.local", Count: 2}, false},
		{"a subset's absence removes no port", Predicate{Op: ClusterAbsent, Resource: "outbound|80|v1|svc-20.ns-0.svc.cluster.local"}, Predicate{Op: EndpointCount, Resource: c, Count: 2}, false},
		{"a plain cluster name is its own scope", Predicate{Op: ClusterAbsent, Resource: "c1"}, Predicate{Op: EndpointCount, Resource: "c1", Count: 1}, true},
		{"a listener is no service port", Predicate{Op: ClusterAbsent, Resource: "c1"}, Predicate{Op: ListenerPresent, Resource: "c1"}, false},
		{"a creation supersedes nothing of another subject", Predicate{Op: ClusterPresent, Resource: c}, Predicate{Op: EndpointCount, Resource: c, Count: 2}, false},
		// A host re-bound to another cluster: where it routes is one state (istiod pushes only
		// the later binding when one debounce holds both).
		{"a host routed elsewhere", Predicate{Op: RouteTo, Resource: "http.80", Host: "h-22.gw-0.example.com", Cluster: "outbound|8080||svc-30.ns-0.svc.cluster.local"},
			Predicate{Op: RouteTo, Resource: "http.80", Host: "h-22.gw-0.example.com", Cluster: "outbound|8080||svc-27.ns-7.svc.cluster.local"}, true},
		{"a weight changed", Predicate{Op: RouteTo, Resource: "80", Host: "a", Cluster: "outbound|80|v1|a", Weight: 30},
			Predicate{Op: RouteTo, Resource: "80", Host: "a", Cluster: "outbound|80|v1|a", Weight: 50}, true},
		{"another host", Predicate{Op: RouteTo, Resource: "http.80", Host: "h-22.gw-2.example.com", Cluster: "outbound|8080||svc-30.ns-0.svc.cluster.local"},
			Predicate{Op: RouteTo, Resource: "http.80", Host: "h-22.gw-0.example.com", Cluster: "outbound|8080||svc-27.ns-7.svc.cluster.local"}, false},
		{"the same route", Predicate{Op: RouteTo, Resource: "http.80", Host: "h", Cluster: "outbound|8080||s"}, Predicate{Op: RouteTo, Resource: "http.80", Host: "h", Cluster: "outbound|8080||s"}, false},
	}
	for _, tc := range tests {
		later, earlier := Expectation{All: []Predicate{tc.later}}, Expectation{All: []Predicate{tc.earlier}}
		if got := later.Supersedes(earlier); got != tc.want {
			t.Errorf("%s: Supersedes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
