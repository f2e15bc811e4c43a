package gen

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	// The extensions the generators emit, registered for anypb.UnmarshalNew even if the
	// generator code stops importing one of them.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

type validator interface{ ValidateAll() error }

// validateDeep runs ValidateAll on m and on every message packed in an Any anywhere inside it,
// recursively (ValidateAll itself does not descend into Any). It returns how many Anys it
// unpacked.
func validateDeep(m proto.Message) (int, error) {
	var errs []error
	n := 0
	var walk func(path string, msg protoreflect.Message)
	check := func(path string, pm proto.Message) {
		v, ok := pm.(validator)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %T has no ValidateAll", path, pm))
			return
		}
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	walk = func(path string, msg protoreflect.Message) {
		if a, ok := msg.Interface().(*anypb.Any); ok {
			inner, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: unpack %s: %w", path, a.GetTypeUrl(), err))
				return
			}
			n++
			check(path+"<"+a.GetTypeUrl()+">", inner)
			walk(path+"<"+a.GetTypeUrl()+">", inner.ProtoReflect())
			return
		}
		msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			p := path + "." + string(fd.Name())
			switch {
			case fd.IsList() && fd.Message() != nil:
				l := v.List()
				for i := range l.Len() {
					walk(fmt.Sprintf("%s[%d]", p, i), l.Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(fmt.Sprintf("%s[%v]", p, k.Interface()), mv.Message())
					return true
				})
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(p, v.Message())
			}
			return true
		})
	}
	check("", m)
	walk("", m.ProtoReflect())
	return n, errors.Join(errs...)
}

func TestValidateDeepCatchesInvalidTypedConfig(t *testing.T) {
	// A listener wrapping an HCM without stat_prefix passes Listener.ValidateAll but must fail
	// the deep check.
	l := &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{
		hcmFilter(&hcmv3.HttpConnectionManager{}),
	}}}}
	if err := l.ValidateAll(); err != nil {
		t.Fatalf("shallow validation unexpectedly failed: %v", err)
	}
	if _, err := validateDeep(l); err == nil || !strings.Contains(err.Error(), "StatPrefix") {
		t.Fatalf("deep validation: got %v, want a StatPrefix error", err)
	}
	bad := &anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type", Value: []byte{1}}
	l2 := &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: "x", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: bad}}}}}}
	if _, err := validateDeep(l2); err == nil || !strings.Contains(err.Error(), "unpack") {
		t.Fatalf("unknown Any: got %v, want an unpack error", err)
	}
}

type generated map[string][]Resource // by type URL

// generateAll runs every generator the way an Envoy sidecar (or grpc-go) asks: wildcard CDS and
// LDS, then EDS for the EDS clusters and RDS for the route names the listeners reference.
func generateAll(t testing.TB, p *model.Proxy, s *model.Snapshot) (generated, error) {
	t.Helper()
	out := generated{}
	var errs []error
	run := func(typeURL string, names []string) {
		rs, err := ForType(typeURL, p).Generate(p, s, names)
		if err != nil {
			errs = append(errs, err)
		}
		out[typeURL] = rs
	}
	if p.IsGRPC() {
		var lnames []string
		for _, svc := range s.Services() {
			for _, port := range svc.Ports {
				lnames = append(lnames, HostPortName(svc.Hostname, port.Number))
			}
		}
		run(ListenerType, lnames)
	} else {
		run(ListenerType, nil)
	}
	run(RouteType, routeNames(out[ListenerType]))
	run(ClusterType, nil)
	run(EndpointType, edsNames(out[ClusterType]))
	return out, errors.Join(errs...)
}

func routeNames(listeners []Resource) []string {
	var names []string
	for _, r := range listeners {
		l := r.Message.(*listenerv3.Listener)
		var hcms []*anypb.Any
		if a := l.GetApiListener().GetApiListener(); a != nil {
			hcms = append(hcms, a)
		}
		for _, fc := range append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain()) {
			for _, f := range fc.GetFilters() {
				if f.GetName() == hcmFilterName {
					hcms = append(hcms, f.GetTypedConfig())
				}
			}
		}
		for _, a := range hcms {
			h := &hcmv3.HttpConnectionManager{}
			if err := a.UnmarshalTo(h); err != nil {
				panic(err)
			}
			if n := h.GetRds().GetRouteConfigName(); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

func edsNames(clusters []Resource) []string {
	var names []string
	for _, r := range clusters {
		c := r.Message.(*clusterv3.Cluster)
		if c.GetType() == clusterv3.Cluster_EDS {
			names = append(names, c.GetEdsClusterConfig().GetServiceName())
		}
	}
	return names
}

// checkResources asserts what Envoy and grpc-go need beyond PGV: deep validity, unique names,
// sorted output, sorted deps, unique listener addresses and filter chain matches, EDS for every
// EDS cluster, a route configuration for every RDS name, unique domains; for gRPC clients no
// STATIC clusters, non-zero weights and no duplicate addresses or localities.
func checkResources(t *testing.T, p *model.Proxy, g generated) {
	t.Helper()
	anys := 0
	for typeURL, rs := range g {
		seen := map[string]bool{}
		for i, r := range rs {
			if seen[r.Name] {
				t.Errorf("%s: duplicate resource %q", typeURL, r.Name)
			}
			seen[r.Name] = true
			if i > 0 && rs[i-1].Name > r.Name {
				t.Errorf("%s: resources not sorted: %q before %q", typeURL, rs[i-1].Name, r.Name)
			}
			n, err := validateDeep(r.Message)
			anys += n
			if err != nil {
				t.Errorf("%s %s: %v", typeURL, r.Name, err)
			}
			if !slices.IsSortedFunc(r.Deps, func(a, b istioconfig.Key) int { return strings.Compare(a.String(), b.String()) }) && len(r.Deps) > 1 {
				// sortDeps orders by kind, namespace, name: the same as String() for our keys.
				t.Errorf("%s %s: deps not sorted: %v", typeURL, r.Name, r.Deps)
			}
			if nameOf(r.Message) != r.Name {
				t.Errorf("%s: resource %q carries a message named %q", typeURL, r.Name, nameOf(r.Message))
			}
		}
	}
	if anys == 0 {
		t.Errorf("no typed_config found: the deep check checked nothing")
	}
	// Listeners: unique addresses; within a listener, unique filter chain matches.
	addrs := map[string]string{}
	for _, r := range g[ListenerType] {
		l := r.Message.(*listenerv3.Listener)
		if p.IsGRPC() {
			if l.GetApiListener() == nil || l.GetAddress() != nil {
				t.Errorf("grpc listener %s: want an API listener without address", r.Name)
			}
			continue
		}
		sa := l.GetAddress().GetSocketAddress()
		a := fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())
		if pipe := l.GetAddress().GetPipe(); pipe != nil {
			a = "pipe:" + pipe.GetPath() // a unix socket listener (httpproxy.go)
		}
		if prev, ok := addrs[a]; ok {
			t.Errorf("listeners %s and %s share address %s", prev, r.Name, a)
		}
		addrs[a] = r.Name
		matches := map[string]bool{}
		for _, fc := range l.GetFilterChains() {
			k := fc.GetFilterChainMatch().String()
			if matches[k] {
				t.Errorf("listener %s: duplicate filter chain match %q", r.Name, k)
			}
			matches[k] = true
		}
	}
	// Every RDS name referenced has a route configuration; domains unique within one.
	routes := map[string]*routev3.RouteConfiguration{}
	for _, r := range g[RouteType] {
		routes[r.Name] = r.Message.(*routev3.RouteConfiguration)
	}
	for _, n := range routeNames(g[ListenerType]) {
		rc := routes[n]
		if rc == nil {
			t.Errorf("route configuration %q referenced by a listener was not generated", n)
			continue
		}
		domains := map[string]string{}
		for _, vh := range rc.GetVirtualHosts() {
			for _, d := range vh.GetDomains() {
				if prev, ok := domains[d]; ok {
					t.Errorf("route %s: domain %q in both %s and %s", n, d, prev, vh.GetName())
				}
				domains[d] = vh.GetName()
			}
		}
	}
	// Every EDS cluster has its assignment.
	cla := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, r := range g[EndpointType] {
		cla[r.Name] = r.Message.(*endpointv3.ClusterLoadAssignment)
	}
	for _, n := range edsNames(g[ClusterType]) {
		if cla[n] == nil {
			t.Errorf("EDS cluster %q has no ClusterLoadAssignment", n)
		}
	}
	if !p.IsGRPC() {
		return
	}
	for _, r := range g[ClusterType] {
		c := r.Message.(*clusterv3.Cluster)
		switch c.GetType() {
		case clusterv3.Cluster_EDS:
		case clusterv3.Cluster_LOGICAL_DNS:
			if n := len(c.GetLoadAssignment().GetEndpoints()); n != 1 || len(c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()) != 1 {
				t.Errorf("grpc cluster %s: LOGICAL_DNS needs exactly one endpoint", r.Name)
			}
		default:
			t.Errorf("grpc cluster %s: type %s is rejected by grpc-go", r.Name, c.GetType())
		}
		switch c.GetLbPolicy() {
		case clusterv3.Cluster_ROUND_ROBIN, clusterv3.Cluster_RING_HASH, clusterv3.Cluster_LEAST_REQUEST:
		default:
			t.Errorf("grpc cluster %s: lb_policy %s is rejected by grpc-go", r.Name, c.GetLbPolicy())
		}
	}
	for _, c := range cla {
		checkGRPCAssignment(t, c)
	}
}

func checkGRPCAssignment(t *testing.T, c *endpointv3.ClusterLoadAssignment) {
	t.Helper()
	locs := map[string]bool{}
	addrs := map[netip.AddrPort]bool{}
	for _, l := range c.GetEndpoints() {
		k := l.GetLocality().String()
		if locs[k] {
			t.Errorf("EDS %s: duplicate locality %s", c.GetClusterName(), k)
		}
		locs[k] = true
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			t.Errorf("EDS %s: locality %s has weight 0", c.GetClusterName(), k)
		}
		for _, e := range l.GetLbEndpoints() {
			if e.GetLoadBalancingWeight().GetValue() == 0 {
				t.Errorf("EDS %s: endpoint with weight 0", c.GetClusterName())
			}
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			ap := netip.AddrPortFrom(netip.MustParseAddr(sa.GetAddress()), uint16(sa.GetPortValue()))
			if addrs[ap] {
				t.Errorf("EDS %s: duplicate address %s", c.GetClusterName(), ap)
			}
			addrs[ap] = true
		}
	}
}

func nameOf(m proto.Message) string {
	switch v := m.(type) {
	case *clusterv3.Cluster:
		return v.GetName()
	case *endpointv3.ClusterLoadAssignment:
		return v.GetClusterName()
	case *listenerv3.Listener:
		return v.GetName()
	case *routev3.RouteConfiguration:
		return v.GetName()
	}
	return ""
}

func TestLargeTopologyIsValid(t *testing.T) {
	top := buildTopology(500, 6)
	s := top.snapshot(1)
	for _, p := range []*model.Proxy{sidecarProxy("10.0.0.1", "ns-0"), grpcProxy("ns-1")} {
		t.Run(p.Generator+"/"+string(p.Type), func(t *testing.T) {
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			checkResources(t, p, g)
			for _, typeURL := range Types() {
				if len(g[typeURL]) == 0 {
					t.Errorf("%s: nothing generated", typeURL)
				}
			}
			if !p.IsGRPC() {
				if _, ok := find(g[ClusterType], "inbound|18000||"); !ok {
					t.Errorf("sidecar at 10.0.0.1 (an endpoint of %s) has no inbound cluster", host(0))
				}
			}
		})
	}
}

func find(rs []Resource, name string) (Resource, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}
