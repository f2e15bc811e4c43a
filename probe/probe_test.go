package probe

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
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
