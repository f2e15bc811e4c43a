package validate

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// What Envoy rejects as it builds a resource, past its PGV constraints (Top, Anys): one
// resource at a time (CdsApiHelper and LdsApiImpl apply the others of a CDS or LDS response;
// an RDS response's route configuration is built whole). Only what is certain is here.

// Cluster reports what makes Envoy reject cluster c as it builds it (ClusterFactoryImplBase,
// the factories of the built-in cluster types, ClusterManagerImpl::loadCluster, the ring hash
// load balancer).
func Cluster(c *clusterv3.Cluster) error {
	custom := c.GetClusterType() != nil // a cluster_type extension: its own rules
	typ := c.GetType()
	lb := c.GetLbPolicy()
	extLB := c.GetLoadBalancingPolicy() != nil // lb_policy is not used
	if !custom {
		switch typ {
		case clusterv3.Cluster_ORIGINAL_DST:
			if lb != clusterv3.Cluster_CLUSTER_PROVIDED && !extLB {
				return fmt.Errorf("cluster: LB policy %s is not valid for Cluster type ORIGINAL_DST. Only 'CLUSTER_PROVIDED' is allowed with cluster type 'ORIGINAL_DST'", lb)
			}
		default:
			if lb == clusterv3.Cluster_CLUSTER_PROVIDED && !extLB {
				return fmt.Errorf("cluster manager: cluster provided LB specified but cluster did not provide one. Check cluster documentation.")
			}
		}
		switch typ {
		case clusterv3.Cluster_EDS:
			if c.GetEdsClusterConfig() == nil {
				return fmt.Errorf("cannot create an EDS cluster without an EDS config")
			}
		case clusterv3.Cluster_LOGICAL_DNS:
			eps := c.GetLoadAssignment().GetEndpoints()
			if len(eps) != 1 || len(eps[0].GetLbEndpoints()) != 1 {
				return fmt.Errorf("LOGICAL_DNS clusters must have a single locality_lb_endpoint and a single lb_endpoint")
			}
		}
	}
	if err := dynamicForwardProxy(c); err != nil {
		return err
	}
	if lb == clusterv3.Cluster_RING_HASH && !extLB {
		rh := c.GetRingHashLbConfig()
		lo, hi := uint64(1024), uint64(8388608) // Envoy's defaults
		if v := rh.GetMinimumRingSize(); v != nil {
			lo = v.GetValue()
		}
		if v := rh.GetMaximumRingSize(); v != nil {
			hi = v.GetValue()
		}
		if lo > hi {
			return fmt.Errorf("ring hash: minimum_ring_size (%d) > maximum_ring_size (%d)", lo, hi)
		}
	}
	return nil
}

// dynamicForwardProxy reports what Envoy's dynamic forward proxy cluster factory rejects
// (ClusterFactory::createClusterWithConfig): unless allow_insecure_cluster_options, the
// cluster's upstream HTTP options must turn auto_sni and auto_san_validation on. Without typed
// HttpProtocolOptions nor the deprecated upstream_http_protocol_options Envoy turns both on
// itself; typed options replace that default with theirs, which must then set both.
func dynamicForwardProxy(c *clusterv3.Cluster) error {
	ct := c.GetClusterType()
	if ct.GetName() != "envoy.clusters.dynamic_forward_proxy" {
		return nil
	}
	cfg := &dfpclusterv3.ClusterConfig{}
	if err := ct.GetTypedConfig().UnmarshalTo(cfg); err != nil || cfg.GetAllowInsecureClusterOptions() {
		return nil // an undecodable config is Deep's to report
	}
	opts := c.GetUpstreamHttpProtocolOptions()
	if a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; a != nil {
		typed := &upstreamhttpv3.HttpProtocolOptions{}
		if err := a.UnmarshalTo(typed); err != nil {
			return nil // Deep's to report
		}
		opts = typed.GetUpstreamHttpProtocolOptions()
	} else if opts == nil {
		return nil // Envoy's default: both on
	}
	if !opts.GetAutoSni() || !opts.GetAutoSanValidation() {
		return errors.New("dynamic_forward_proxy cluster must have auto_sni and auto_san_validation true unless allow_insecure_cluster_options is set")
	}
	return nil
}

// HashWeightsOverflow reports whether the weights of the healthy hosts (health status unknown
// or healthy, weight 1 unless set) of one priority of cla sum over 4294967295: a ring hash or
// Maglev load balancer without locality-weighted balancing then rejects the assignment
// (normalizeHostWeights: "The sum of weights of all upstream hosts in a locality exceeds
// 4294967295"). It uses those hosts, or in panic every host of the priority, whose weights sum
// to no less.
func HashWeightsOverflow(cla *endpointv3.ClusterLoadAssignment) bool {
	type sum struct {
		prio uint32
		w    uint64
	}
	var buf [4]sum
	sums := buf[:0]
	for _, l := range cla.GetEndpoints() {
		var w uint64
		for _, e := range l.GetLbEndpoints() {
			switch e.GetHealthStatus() {
			case corev3.HealthStatus_UNKNOWN, corev3.HealthStatus_HEALTHY:
			default:
				continue
			}
			if lw := e.GetLoadBalancingWeight(); lw != nil {
				w += uint64(lw.GetValue())
			} else {
				w++
			}
		}
		i := 0
		for i < len(sums) && sums[i].prio != l.GetPriority() {
			i++
		}
		if i == len(sums) {
			sums = append(sums, sum{prio: l.GetPriority()})
		}
		if sums[i].w += w; sums[i].w > math.MaxUint32 {
			return true
		}
	}
	return false
}

// HashWeightsMatter reports whether cluster c balances with a ring hash or Maglev over the
// flat set of a priority's hosts (lb_policy, no locality-weighted balancing), for
// HashWeightsOverflow.
func HashWeightsMatter(c *clusterv3.Cluster) bool {
	switch c.GetLbPolicy() {
	case clusterv3.Cluster_RING_HASH, clusterv3.Cluster_MAGLEV:
	default:
		return false
	}
	return c.GetLoadBalancingPolicy() == nil && c.GetCommonLbConfig().GetLocalityWeightedLbConfig() == nil
}

// ErrHashWeights is the error of an assignment HashWeightsOverflow reports, for a cluster
// HashWeightsMatter reports.
var ErrHashWeights = errors.New("The sum of weights of all upstream hosts in a locality exceeds 4294967295")

// Listener reports what makes Envoy reject listener l as it builds it (ListenerManagerImpl,
// ListenerImpl; the order of every filter chain's network filters, terminalOrder; the HTTP
// connection manager's config, HCM). A listener with
// an api_listener is not built as one (and Envoy ignores it over LDS).
func Listener(l *listenerv3.Listener) error {
	if l.GetApiListener() != nil {
		return nil
	}
	if l.GetAddress() == nil {
		return fmt.Errorf("error adding listener named '%s': address is necessary", l.GetName())
	}
	// A connectionless UDP listener (not QUIC) needs no filter chain.
	connless := l.GetAddress().GetSocketAddress().GetProtocol() == corev3.SocketAddress_UDP && l.GetUdpListenerConfig().GetQuicOptions() == nil
	if len(l.GetFilterChains()) == 0 && l.GetDefaultFilterChain() == nil && !connless {
		return fmt.Errorf("error adding listener '%s': no filter chains specified", l.GetName())
	}
	check := func(fc *listenerv3.FilterChain) error {
		fs := fc.GetFilters()
		for i, f := range fs {
			a := f.GetTypedConfig()
			if err := terminalOrder("network", f.GetName(), a, i == len(fs)-1); err != nil {
				return err
			}
			if a.GetTypeUrl() != HCMType {
				continue
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := a.UnmarshalTo(hcm); err != nil {
				return fmt.Errorf("http connection manager: %w", err)
			}
			if err := HCM(hcm); err != nil {
				return err
			}
		}
		return nil
	}
	for _, fc := range l.GetFilterChains() {
		if err := check(fc); err != nil {
			return err
		}
	}
	if d := l.GetDefaultFilterChain(); d != nil {
		return check(d)
	}
	return nil
}

// terminal says whether a filter of the type a packs is terminal: true or false for the
// filters linked here (see envoy.go), known false for a type not linked (it may be either).
func terminal(a *anypb.Any) (term, known bool) {
	switch ShortType(a.GetTypeUrl()) {
	case "envoy.extensions.filters.http.router.v3.Router",
		"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
		"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":
		return true, true
	case "envoy.extensions.filters.http.cors.v3.Cors",
		"envoy.extensions.filters.http.fault.v3.HTTPFault",
		"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig",
		"envoy.extensions.filters.http.grpc_web.v3.GrpcWeb",
		"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
		"envoy.extensions.filters.http.lua.v3.Lua",
		"envoy.extensions.filters.http.rbac.v3.RBAC",
		"envoy.extensions.filters.network.rbac.v3.RBAC":
		return false, true
	}
	return false, false
}

// terminalOrder is Config::Utility::validateTerminalFilters for a filter of a chain (kind
// "http" or "network") named name, packed in a, last or not: a terminal filter must be last,
// a non-terminal one must not.
func terminalOrder(kind, name string, a *anypb.Any, last bool) error {
	term, known := terminal(a)
	switch {
	case !known:
		return nil
	case term && !last:
		return fmt.Errorf("Error: terminal filter named %s of type %s must be the last filter in a %s filter chain.", name, ShortType(a.GetTypeUrl()), kind)
	case !term && last:
		return fmt.Errorf("Error: non-terminal filter named %s of type %s is the last filter in a %s filter chain.", name, ShortType(a.GetTypeUrl()), kind)
	}
	return nil
}

// HCM reports what makes Envoy reject an HTTP connection manager's config: a terminal HTTP
// filter (the router) anywhere but last, or a non-terminal one last (terminalOrder); an inline
// route configuration Envoy rejects.
func HCM(h *hcmv3.HttpConnectionManager) error {
	fs := h.GetHttpFilters()
	for i, f := range fs {
		if err := terminalOrder("http", f.GetName(), f.GetTypedConfig(), i == len(fs)-1); err != nil {
			return err
		}
	}
	if rc := h.GetRouteConfig(); rc != nil {
		return RouteConfig(rc)
	}
	return nil
}

// RouteConfig reports what makes Envoy reject a route configuration as it builds it
// (RouteMatcher, RouteEntryImplBase): a domain in two virtual hosts (or twice in one; domains
// compare lower-cased), more than one "*", a safe_regex RE2 does not compile.
func RouteConfig(rc *routev3.RouteConfiguration) error {
	seen := make(map[string]struct{})
	wildcard := false
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			if d == "*" {
				if wildcard {
					return fmt.Errorf("Only a single wildcard domain is permitted in route %s", rc.GetName())
				}
				wildcard = true
				continue
			}
			if _, dup := seen[d]; dup {
				return fmt.Errorf("Only unique values for domains are permitted. Duplicate entry of domain %s in route %s", d, rc.GetName())
			}
			seen[d] = struct{}{}
		}
		for _, r := range vh.GetRoutes() {
			if err := routeRegexes(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// routeRegexes checks the RE2 regexes of a route's match and its regex_rewrite.
func routeRegexes(r *routev3.Route) error {
	m := r.GetMatch()
	check := func(rm *matcherv3.RegexMatcher) error {
		if rm == nil {
			return nil
		}
		if _, err := syntax.Parse(rm.GetRegex(), syntax.Perl); err != nil {
			return fmt.Errorf("route %s: regex %q: %v", r.GetName(), rm.GetRegex(), err)
		}
		return nil
	}
	if err := check(m.GetSafeRegex()); err != nil {
		return err
	}
	for _, h := range m.GetHeaders() {
		if err := check(h.GetSafeRegexMatch()); err != nil {
			return err
		}
		if err := check(h.GetStringMatch().GetSafeRegex()); err != nil {
			return err
		}
	}
	for _, q := range m.GetQueryParameters() {
		if err := check(q.GetStringMatch().GetSafeRegex()); err != nil {
			return err
		}
	}
	return check(r.GetRoute().GetRegexRewrite().GetPattern())
}
