package validate

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func edsCluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "c",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{}}},
	}
}

func typed(c *clusterv3.Cluster, ty clusterv3.Cluster_DiscoveryType) *clusterv3.Cluster {
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: ty}
	return c
}

func lbEndpoint(port uint32) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "a.example", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}}}}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestClusterBuild: the clusters Envoy rejects as it builds them, and their valid neighbours.
func TestClusterBuild(t *testing.T) {
	logical := func(localities ...int) *clusterv3.Cluster {
		c := typed(edsCluster(), clusterv3.Cluster_LOGICAL_DNS)
		c.EdsClusterConfig = nil
		c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: "c"}
		for _, n := range localities {
			l := &endpointv3.LocalityLbEndpoints{}
			for i := range n {
				l.LbEndpoints = append(l.LbEndpoints, lbEndpoint(uint32(80+i)))
			}
			c.LoadAssignment.Endpoints = append(c.LoadAssignment.Endpoints, l)
		}
		return c
	}
	ring := func(lo, hi uint64) *clusterv3.Cluster {
		c := edsCluster()
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{}}
		if lo > 0 {
			c.GetRingHashLbConfig().MinimumRingSize = wrapperspb.UInt64(lo)
		}
		if hi > 0 {
			c.GetRingHashLbConfig().MaximumRingSize = wrapperspb.UInt64(hi)
		}
		return c
	}
	with := func(c *clusterv3.Cluster, f func(*clusterv3.Cluster)) *clusterv3.Cluster { f(c); return c }
	// A dynamic forward proxy cluster: allow_insecure_cluster_options, and typed upstream HTTP
	// options (nil: none) with their auto_sni and auto_san_validation (nil: unset).
	dfp := func(insecure bool, opts *corev3.UpstreamHttpProtocolOptions, typedOpts bool) *clusterv3.Cluster {
		c := &clusterv3.Cluster{Name: "outbound|80||*.example.com", LbPolicy: clusterv3.Cluster_CLUSTER_PROVIDED,
			ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
				Name: "envoy.clusters.dynamic_forward_proxy", TypedConfig: mustAny(t, &dfpclusterv3.ClusterConfig{AllowInsecureClusterOptions: insecure})}}}
		if typedOpts {
			c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, &upstreamhttpv3.HttpProtocolOptions{
				UpstreamHttpProtocolOptions: opts,
				UpstreamProtocolOptions: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig{
					ProtocolConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}}}},
			})}
		}
		return c
	}
	const dfpAuto = "must have auto_sni and auto_san_validation true"
	for _, tc := range []struct {
		name string
		c    *clusterv3.Cluster
		want string // "" valid
	}{
		{"eds", edsCluster(), ""},
		{"eds cluster provided", with(edsCluster(), func(c *clusterv3.Cluster) { c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED }), "cluster provided LB specified but cluster did not provide one"},
		{"eds without eds_cluster_config", with(edsCluster(), func(c *clusterv3.Cluster) { c.EdsClusterConfig = nil }), "without an EDS config"},
		{"original dst round robin", typed(edsCluster(), clusterv3.Cluster_ORIGINAL_DST), "Only 'CLUSTER_PROVIDED' is allowed"},
		{"original dst cluster provided", with(typed(edsCluster(), clusterv3.Cluster_ORIGINAL_DST), func(c *clusterv3.Cluster) { c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED }), ""},
		{"logical dns one endpoint", logical(1), ""},
		{"logical dns two endpoints", logical(2), "single locality_lb_endpoint and a single lb_endpoint"},
		{"logical dns two localities", logical(1, 1), "single locality_lb_endpoint"},
		{"logical dns no load assignment", with(logical(), func(c *clusterv3.Cluster) { c.LoadAssignment = nil }), "single locality_lb_endpoint"},
		{"ring hash defaults", ring(0, 0), ""},
		{"ring hash min over max", ring(4096, 2048), "minimum_ring_size (4096) > maximum_ring_size (2048)"},
		{"ring hash min over default max", ring(8388608, 0), ""},
		{"dfp without protocol options", dfp(false, nil, false), ""},
		{"dfp typed options without auto", dfp(false, nil, true), dfpAuto},
		{"dfp typed options, auto_sni only", dfp(false, &corev3.UpstreamHttpProtocolOptions{AutoSni: true}, true), dfpAuto},
		{"dfp typed options, both", dfp(false, &corev3.UpstreamHttpProtocolOptions{AutoSni: true, AutoSanValidation: true}, true), ""},
		{"dfp insecure, typed options without auto", dfp(true, nil, true), ""},
		{"dfp deprecated options without san", with(dfp(false, nil, false), func(c *clusterv3.Cluster) {
			c.UpstreamHttpProtocolOptions = &corev3.UpstreamHttpProtocolOptions{AutoSni: true}
		}), dfpAuto},
	} {
		err := Cluster(tc.c)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func listener(t *testing.T, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name: "l",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)}}}}},
	}
}

func httpFilter(t *testing.T, name string, m proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, m)}}
}

func routes(domains ...[]string) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "r"}
	for i, d := range domains {
		rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{Name: string(rune('a' + i)), Domains: d})
	}
	return rc
}

// TestListenerBuild: the listeners Envoy rejects as it builds them (the HCM's filters, its
// inline routes), and their valid neighbours.
func TestListenerBuild(t *testing.T) {
	router, cors := httpFilter(t, "router", &routerv3.Router{}), httpFilter(t, "cors", &corsv3.Cors{})
	hcm := func(rc *routev3.RouteConfiguration, fs ...*hcmv3.HttpFilter) *hcmv3.HttpConnectionManager {
		h := &hcmv3.HttpConnectionManager{StatPrefix: "s", HttpFilters: fs}
		if rc != nil {
			h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
		}
		return h
	}
	with := func(l *listenerv3.Listener, f func(*listenerv3.Listener)) *listenerv3.Listener { f(l); return l }
	for _, tc := range []struct {
		name string
		l    *listenerv3.Listener
		want string
	}{
		{"cors, router", listener(t, hcm(nil, cors, router)), ""},
		{"router, cors", listener(t, hcm(nil, router, cors)), "terminal filter named router"},
		{"cors last", listener(t, hcm(nil, cors)), "non-terminal filter named cors"},
		{"rbac, hcm", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			fc := l.FilterChains[0]
			fc.Filters = append([]*listenerv3.Filter{{Name: "rbac", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &netrbacv3.RBAC{StatPrefix: "r"})}}}, fc.Filters...)
		}), ""},
		{"hcm, rbac", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			fc := l.FilterChains[0]
			fc.Filters = append(fc.Filters, &listenerv3.Filter{Name: "rbac", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &netrbacv3.RBAC{StatPrefix: "r"})}})
		}), "terminal filter named hcm of type envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager must be the last filter in a network filter chain"},
		{"rbac alone", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			l.FilterChains[0].Filters = []*listenerv3.Filter{{Name: "rbac", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &netrbacv3.RBAC{StatPrefix: "r"})}}}
		}), "non-terminal filter named rbac"},
		{"no filter chains", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) { l.FilterChains = nil }), "no filter chains specified"},
		{"default filter chain only", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			l.DefaultFilterChain, l.FilterChains = l.FilterChains[0], nil
		}), ""},
		{"udp without filter chains", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			l.FilterChains = nil
			l.GetAddress().GetSocketAddress().Protocol = corev3.SocketAddress_UDP
		}), ""},
		{"quic without filter chains", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) {
			l.FilterChains = nil
			l.GetAddress().GetSocketAddress().Protocol = corev3.SocketAddress_UDP
			l.UdpListenerConfig = &listenerv3.UdpListenerConfig{QuicOptions: &listenerv3.QuicProtocolOptions{}}
		}), "no filter chains specified"},
		{"no address", with(listener(t, hcm(nil, router)), func(l *listenerv3.Listener) { l.Address = nil }), "address is necessary"},
		{"api listener", &listenerv3.Listener{Name: "a", ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, hcm(nil, router))}}, ""},
		{"inline routes", listener(t, hcm(routes([]string{"a", "*"}, []string{"b"}), router)), ""},
		{"inline duplicate domain", listener(t, hcm(routes([]string{"a"}, []string{"b", "A"}), router)), "Duplicate entry of domain a in route r"},
	} {
		err := Listener(tc.l)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRouteConfigBuild: duplicate domains, two wildcards, regexes RE2 does not compile.
func TestRouteConfigBuild(t *testing.T) {
	regex := func(re string) *routev3.RouteConfiguration {
		rc := routes([]string{"a"})
		rc.VirtualHosts[0].Routes = []*routev3.Route{{Name: "x", Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}}}
		return rc
	}
	header := func(re string) *routev3.RouteConfiguration {
		rc := routes([]string{"a"})
		rc.VirtualHosts[0].Routes = []*routev3.Route{{Name: "x", Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
			Headers: []*routev3.HeaderMatcher{{Name: "h", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}}}}}}}
		return rc
	}
	for _, tc := range []struct {
		name string
		rc   *routev3.RouteConfiguration
		want string
	}{
		{"distinct", routes([]string{"a", "*.a", "a*"}, []string{"b", "*"}), ""},
		{"same domain twice", routes([]string{"a"}, []string{"a"}), "Only unique values for domains are permitted"},
		{"same suffix wildcard twice", routes([]string{"*.a"}, []string{"*.a"}), "Only unique values"},
		{"two wildcards", routes([]string{"*"}, []string{"*"}), "Only a single wildcard domain"},
		{"regex", regex("^/a/[0-9]+$"), ""},
		{"bad regex", regex("(a"), "missing closing )"},
		{"bad header regex", header("[z-a]"), "invalid character class range"},
	} {
		err := RouteConfig(tc.rc)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestHashWeightsOverflow: the healthy hosts' weights of one priority summing over 2^32-1.
func TestHashWeightsOverflow(t *testing.T) {
	ep := func(w uint32, h corev3.HealthStatus) *endpointv3.LbEndpoint {
		e := lbEndpoint(80)
		e.LoadBalancingWeight = wrapperspb.UInt32(w)
		e.HealthStatus = h
		return e
	}
	loc := func(prio uint32, eps ...*endpointv3.LbEndpoint) *endpointv3.LocalityLbEndpoints {
		return &endpointv3.LocalityLbEndpoints{Priority: prio, LbEndpoints: eps}
	}
	const big = 1 << 31
	for _, tc := range []struct {
		name string
		locs []*endpointv3.LocalityLbEndpoints
		want bool
	}{
		{"at the limit", []*endpointv3.LocalityLbEndpoints{loc(0, ep(big, 0), ep(big-1, 0))}, false},
		{"over in one locality", []*endpointv3.LocalityLbEndpoints{loc(0, ep(big, 0), ep(big, corev3.HealthStatus_HEALTHY))}, true},
		{"over across localities of a priority", []*endpointv3.LocalityLbEndpoints{loc(1, ep(big, 0)), loc(1, ep(big, 0))}, true},
		{"split across priorities", []*endpointv3.LocalityLbEndpoints{loc(0, ep(big, 0)), loc(1, ep(big, 0))}, false},
		{"unhealthy host left out", []*endpointv3.LocalityLbEndpoints{loc(0, ep(big, 0), ep(big, corev3.HealthStatus_UNHEALTHY))}, false},
	} {
		if got := HashWeightsOverflow(&endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: tc.locs}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
