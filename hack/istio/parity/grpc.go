package parity

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// FetchGRPC connects to the ADS server at addr as p (a proxyless gRPC client: p.Generator
// "grpc") and fetches what grpc-go's xDS client asks for when it dials each of listeners
// ("HOST:PORT" targets): LDS by name, then RDS for the route configurations those API listeners
// name, CDS for the clusters their routes send to, EDS for those clusters' service names,
// ACKing each response. With listeners nil it makes one wildcard LDS request and stops there
// (the names a control plane offers; grpc-go never asks so).
func FetchGRPC(ctx context.Context, addr string, p Proxy, listeners []string) (*Dump, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	get, closeConn, err := openADS(ctx, addr, p)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	d := newDump()
	rs, err := get(listenerType, listeners)
	if err != nil {
		return nil, err
	}
	routeNames, err := d.addListeners(addr, rs, func(l *listenerv3.Listener, routeNames map[string]bool) {
		if n := apiListenerHCM(l).GetRds().GetRouteConfigName(); n != "" {
			routeNames[n] = true
		}
	})
	if err != nil {
		return nil, err
	}
	if listeners == nil || len(routeNames) == 0 {
		return d, nil
	}
	if rs, err = get(routeType, slices.Sorted(maps.Keys(routeNames))); err != nil {
		return nil, err
	}
	clusterNames := map[string]bool{}
	for _, a := range rs {
		r := &routev3.RouteConfiguration{}
		if err := a.UnmarshalTo(r); err != nil {
			return nil, fmt.Errorf("ADS %s: route: %w", addr, err)
		}
		d.Routes[r.GetName()] = r
		for _, vh := range r.GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if c := rt.GetRoute().GetCluster(); c != "" {
					clusterNames[c] = true
				}
				for _, wc := range rt.GetRoute().GetWeightedClusters().GetClusters() {
					clusterNames[wc.GetName()] = true
				}
			}
		}
	}
	if len(clusterNames) == 0 {
		return d, nil
	}
	if rs, err = get(clusterType, slices.Sorted(maps.Keys(clusterNames))); err != nil {
		return nil, err
	}
	edsNames, err := d.addClusters(addr, rs)
	if err != nil {
		return nil, err
	}
	if err := d.fetchEndpoints(get, addr, edsNames); err != nil {
		return nil, err
	}
	return d, nil
}

// apiListenerHCM is the HTTP connection manager of l's API listener, nil without one.
func apiListenerHCM(l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	h := &hcmv3.HttpConnectionManager{}
	if a := l.GetApiListener().GetApiListener(); a == nil || a.UnmarshalTo(h) != nil {
		return nil
	}
	return h
}

// GRPCRouteName is the name a proxyless gRPC route configuration is compared under: istiod
// names it as the service's default cluster ("outbound|PORT||HOST"), xdslab as the listener
// ("HOST:PORT"). The name only links an API listener to its RDS resource, which grpc-go
// follows either way, so both are folded into "HOST:PORT".
func GRPCRouteName(name string) string {
	parts := strings.Split(name, "|")
	if len(parts) == 4 && parts[0] == "outbound" && parts[2] == "" {
		if _, err := strconv.Atoi(parts[1]); err == nil {
			return net.JoinHostPort(parts[3], parts[1])
		}
	}
	return name
}

// ProjectGRPC builds the View of a proxyless gRPC client's dump: Project's, on what grpc-go's
// xDS client reads (grpcReads), after folding route configuration names (GRPCRouteName, in the
// listeners' RDS references too). Virtual host domains keep their ports (grpc-go matches the
// dialled "HOST:PORT" against them, with no ignore_port_in_host_matching), less IP addresses
// and CIDRs (grpc-go only ever looks up a listener by a service's host name, so an IP domain is never
// matched) and the absolute FQDN form with a trailing dot (as Project drops it).
func ProjectGRPC(d *Dump) View {
	n := &Dump{
		Clusters:  map[string]*clusterv3.Cluster{},
		Endpoints: d.Endpoints,
		Listeners: map[string]*listenerv3.Listener{},
		Routes:    map[string]*routev3.RouteConfiguration{},
	}
	for name, c := range d.Clusters {
		n.Clusters[name] = grpcCluster(c)
	}
	for name, l := range d.Listeners {
		n.Listeners[name] = grpcListener(l)
	}
	for name, r := range d.Routes {
		n.Routes[GRPCRouteName(name)] = grpcRouteConfiguration(r)
	}
	v := View{}
	for name, c := range n.Clusters {
		v["cluster "+name] = clusterLines(c, n.Endpoints)
	}
	for name, l := range n.Listeners {
		v["listener "+name] = listenerLines(l, false)
	}
	for name, r := range n.Routes {
		v["route "+name] = routeLinesWith(r, true)
	}
	for k, lines := range v {
		slices.Sort(lines)
		v[k] = slices.Compact(lines)
	}
	return v
}

// grpcListener is what grpc-go reads of a client's API listener: the connection manager's
// RDS reference (its config source only needs to be ADS) or inline routes, HTTP filters and
// max_stream_duration. The listener's address is not read (istiod fills the service's VIP and
// port, xdslab nothing).
func grpcListener(l *listenerv3.Listener) *listenerv3.Listener {
	out := &listenerv3.Listener{Name: l.GetName()}
	h := apiListenerHCM(l)
	if h == nil {
		return grpcServerListener(l)
	}
	read := &hcmv3.HttpConnectionManager{HttpFilters: h.GetHttpFilters(), RouteSpecifier: h.GetRouteSpecifier()}
	if d := h.GetCommonHttpProtocolOptions().GetMaxStreamDuration(); d != nil {
		read.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: d}
	}
	if rds := h.GetRds(); rds != nil {
		read.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    grpcConfigSource(rds.GetConfigSource()),
			RouteConfigName: GRPCRouteName(rds.GetRouteConfigName()),
		}}
	}
	if a, err := anypb.New(read); err == nil {
		out.ApiListener = &listenerv3.ApiListener{ApiListener: a}
	}
	return out
}

// grpcConfigSource is what grpc-go reads of a config source: ADS or not (resource_api_version
// and initial_fetch_timeout are not read).
func grpcConfigSource(cs *corev3.ConfigSource) *corev3.ConfigSource {
	if cs.GetAds() != nil {
		return &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	}
	return cs
}

// grpcCluster is what grpc-go reads of a cluster: its discovery type, EDS service name and
// config source, inline assignment (LOGICAL_DNS), load balancing policy and its config, the
// max_requests circuit breaker (default priority; unset means grpc-go's 1024), outlier
// detection, transport socket and LRS server. Connect timeouts, HTTP protocol options, DNS
// settings and common_lb_config are not read.
func grpcCluster(c *clusterv3.Cluster) *clusterv3.Cluster {
	out := &clusterv3.Cluster{
		Name:                 c.GetName(),
		ClusterDiscoveryType: c.GetClusterDiscoveryType(),
		LoadAssignment:       c.GetLoadAssignment(),
		LbPolicy:             c.GetLbPolicy(),
		LbConfig:             c.GetLbConfig(),
		LoadBalancingPolicy:  c.GetLoadBalancingPolicy(),
		OutlierDetection:     c.GetOutlierDetection(),
		TransportSocket:      grpcTransportSocket(c.GetTransportSocket()),
		LrsServer:            c.GetLrsServer(),
	}
	if eds := c.GetEdsClusterConfig(); eds != nil {
		out.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: grpcConfigSource(eds.GetEdsConfig()), ServiceName: eds.GetServiceName()}
	}
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		if th.GetPriority() == corev3.RoutingPriority_DEFAULT && th.GetMaxRequests() != nil {
			out.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: th.GetMaxRequests()}}}
			break
		}
	}
	return out
}

// grpcRouteConfiguration is what grpc-go reads of a route configuration: virtual hosts (less IP
// domains) with their routes, retry policy and per-filter configs.
func grpcRouteConfiguration(r *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	out := &routev3.RouteConfiguration{Name: r.GetName(), ClusterSpecifierPlugins: r.GetClusterSpecifierPlugins()}
	for _, vh := range r.GetVirtualHosts() {
		v := &routev3.VirtualHost{Name: vh.GetName(), RetryPolicy: grpcRetryPolicy(vh.GetRetryPolicy()), TypedPerFilterConfig: vh.GetTypedPerFilterConfig()}
		for _, d := range vh.GetDomains() {
			h := d
			if host, _, err := net.SplitHostPort(d); err == nil {
				h = host
			}
			_, _, cidrErr := net.ParseCIDR(h)
			if net.ParseIP(strings.Trim(h, "[]")) == nil && cidrErr != nil && !strings.HasSuffix(h, ".") {
				v.Domains = append(v.Domains, d)
			}
		}
		for _, rt := range vh.GetRoutes() {
			v.Routes = append(v.Routes, grpcRoute(rt))
		}
		out.VirtualHosts = append(out.VirtualHosts, v)
	}
	return out
}

// grpcRoute is what grpc-go reads of a route: its match, its action — for a route action the
// clusters, hash policies (header and filter state; others are skipped), max_stream_duration
// and retry policy; other actions make RPCs fail either way and are kept whole — and per-filter
// configs. Timeouts other than max_stream_duration, header operations, mirrors, rewrites and
// CORS are not read.
func grpcRoute(rt *routev3.Route) *routev3.Route {
	out := &routev3.Route{Name: rt.GetName(), Match: rt.GetMatch(), TypedPerFilterConfig: rt.GetTypedPerFilterConfig()}
	ra := rt.GetRoute()
	if ra == nil {
		out.Action = rt.GetAction()
		return out
	}
	read := &routev3.RouteAction{
		ClusterSpecifier: ra.GetClusterSpecifier(),
		RetryPolicy:      grpcRetryPolicy(ra.GetRetryPolicy()),
	}
	if msd := ra.GetMaxStreamDuration(); msd != nil {
		read.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: msd.GetMaxStreamDuration(), GrpcTimeoutHeaderMax: msd.GetGrpcTimeoutHeaderMax()}
	}
	for _, hp := range ra.GetHashPolicy() {
		if hp.GetHeader() != nil || hp.GetFilterState() != nil {
			read.HashPolicy = append(read.HashPolicy, hp)
		}
	}
	out.Action = &routev3.Route_Route{Route: read}
	return out
}

// grpcRetryPolicy is what grpc-go reads of a retry policy: the gRPC status codes of retry_on
// (other conditions are ignored; without a code it never retries, as without a policy),
// num_retries and retry_back_off.
func grpcRetryPolicy(rp *routev3.RetryPolicy) *routev3.RetryPolicy {
	if rp == nil {
		return nil
	}
	var codes []string
	for _, c := range strings.Split(rp.GetRetryOn(), ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if slices.Contains(grpcRetryCodes, c) && !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	if len(codes) == 0 {
		return nil
	}
	slices.Sort(codes)
	return &routev3.RetryPolicy{RetryOn: strings.Join(codes, ","), NumRetries: rp.GetNumRetries(), RetryBackOff: rp.GetRetryBackOff()}
}

// grpcRetryCodes are the retry_on conditions grpc-go knows (gRPC status codes).
var grpcRetryCodes = []string{"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// grpcServerListener is what grpc-go's xDS server reads of its listener (not an API listener):
// the address, listener filters and use_original_dst (which it NACKs), and per filter chain
// (default one included) the match, the transport socket (grpcTransportSocket) and the
// network filters, of an HTTP connection manager its HTTP filters and routes (inline:
// grpcRouteConfiguration; RDS: its name and config source). Other filters are kept whole.
func grpcServerListener(l *listenerv3.Listener) *listenerv3.Listener {
	out := &listenerv3.Listener{Name: l.GetName(), Address: l.GetAddress(), ListenerFilters: l.GetListenerFilters(), UseOriginalDst: l.GetUseOriginalDst()}
	chain := func(fc *listenerv3.FilterChain) *listenerv3.FilterChain {
		if fc == nil {
			return nil
		}
		o := &listenerv3.FilterChain{Name: fc.GetName(), FilterChainMatch: fc.GetFilterChainMatch(), TransportSocket: grpcTransportSocket(fc.GetTransportSocket())}
		for _, f := range fc.GetFilters() {
			h := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(h) != nil {
				o.Filters = append(o.Filters, f)
				continue
			}
			read := &hcmv3.HttpConnectionManager{HttpFilters: grpcHTTPFilters(h.GetHttpFilters()), RouteSpecifier: h.GetRouteSpecifier()}
			if rc := h.GetRouteConfig(); rc != nil {
				read.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: grpcRouteConfiguration(rc)}
			}
			if rds := h.GetRds(); rds != nil {
				read.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: grpcConfigSource(rds.GetConfigSource()), RouteConfigName: GRPCRouteName(rds.GetRouteConfigName())}}
			}
			a, err := anypb.New(read)
			if err != nil {
				o.Filters = append(o.Filters, f)
				continue
			}
			o.Filters = append(o.Filters, &listenerv3.Filter{Name: f.GetName(), ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}})
		}
		return o
	}
	for _, fc := range l.GetFilterChains() {
		out.FilterChains = append(out.FilterChains, chain(fc))
	}
	out.DefaultFilterChain = chain(l.GetDefaultFilterChain())
	return out
}

// grpcHTTPFilters are a gRPC server's HTTP filters as grpc-go reads them: an RBAC policy with
// neither permissions nor principals (istiod's grpcgen sends one for a rule it cannot
// generate) matches no request, so it reads as the policy that says so (not any, not any),
// which xdslab sends because Envoy's schema rejects an empty one. Other filters are kept.
func grpcHTTPFilters(fs []*hcmv3.HttpFilter) []*hcmv3.HttpFilter {
	out := make([]*hcmv3.HttpFilter, 0, len(fs))
	for _, f := range fs {
		r := &rbachttpv3.RBAC{}
		if !f.GetTypedConfig().MessageIs(r) || f.GetTypedConfig().UnmarshalTo(r) != nil {
			out = append(out, f)
			continue
		}
		changed := false
		for _, rules := range []*rbacv3.RBAC{r.GetRules(), r.GetShadowRules()} {
			for name, pol := range rules.GetPolicies() {
				if len(pol.GetPermissions()) == 0 && len(pol.GetPrincipals()) == 0 && pol.GetCondition() == nil && pol.GetCheckedCondition() == nil {
					rules.Policies[name] = &rbacv3.Policy{
						Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_NotRule{NotRule: &rbacv3.Permission{Rule: &rbacv3.Permission_Any{Any: true}}}}},
						Principals:  []*rbacv3.Principal{{Identifier: &rbacv3.Principal_NotId{NotId: &rbacv3.Principal{Identifier: &rbacv3.Principal_Any{Any: true}}}}},
					}
					changed = true
				}
			}
		}
		a, err := anypb.New(r)
		if !changed || err != nil {
			out = append(out, f)
			continue
		}
		out = append(out, &hcmv3.HttpFilter{Name: f.GetName(), ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}})
	}
	return out
}

// grpcTransportSocket is what gRPC reads of a TLS transport socket: its name, and of the
// Upstream or DownstreamTlsContext the certificate provider instances (current and deprecated
// fields), the peer SAN matchers, system roots, SNI and whether client certificates are
// required. SDS secret configs are not read while a certificate provider instance is named
// (grpc-go NACKs an identity given only by SDS), so they are dropped then. Another socket is
// kept whole.
func grpcTransportSocket(ts *corev3.TransportSocket) *corev3.TransportSocket {
	if ts == nil {
		return nil
	}
	var read proto.Message
	up, down := &tlsv3.UpstreamTlsContext{}, &tlsv3.DownstreamTlsContext{}
	switch {
	case ts.GetTypedConfig().MessageIs(up) && ts.GetTypedConfig().UnmarshalTo(up) == nil:
		read = &tlsv3.UpstreamTlsContext{CommonTlsContext: grpcCommonTLS(up.GetCommonTlsContext()), Sni: up.GetSni()}
	case ts.GetTypedConfig().MessageIs(down) && ts.GetTypedConfig().UnmarshalTo(down) == nil:
		read = &tlsv3.DownstreamTlsContext{CommonTlsContext: grpcCommonTLS(down.GetCommonTlsContext()), RequireClientCertificate: down.GetRequireClientCertificate()}
	default:
		return ts
	}
	a, err := anypb.New(read)
	if err != nil {
		return ts
	}
	return &corev3.TransportSocket{Name: ts.GetName(), ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

// grpcCommonTLS is what gRPC reads of a CommonTlsContext (grpcTransportSocket).
func grpcCommonTLS(c *tlsv3.CommonTlsContext) *tlsv3.CommonTlsContext {
	if c == nil {
		return nil
	}
	out := &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance:            c.GetTlsCertificateProviderInstance(),
		TlsCertificateCertificateProviderInstance: c.GetTlsCertificateCertificateProviderInstance(), //nolint:staticcheck // read by older gRPC
		TlsParams:        c.GetTlsParams(),
		CustomHandshaker: c.GetCustomHandshaker(),
	}
	if out.TlsCertificateProviderInstance == nil && out.TlsCertificateCertificateProviderInstance == nil {
		out.TlsCertificateSdsSecretConfigs = c.GetTlsCertificateSdsSecretConfigs()
		out.TlsCertificates = c.GetTlsCertificates()
	}
	vc := func(v *tlsv3.CertificateValidationContext) *tlsv3.CertificateValidationContext {
		if v == nil {
			return nil
		}
		return &tlsv3.CertificateValidationContext{CaCertificateProviderInstance: v.GetCaCertificateProviderInstance(), MatchSubjectAltNames: v.GetMatchSubjectAltNames(), SystemRootCerts: v.GetSystemRootCerts()}
	}
	switch t := c.GetValidationContextType().(type) {
	case *tlsv3.CommonTlsContext_ValidationContext:
		out.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc(t.ValidationContext)}
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		cv := t.CombinedValidationContext
		out.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:                     vc(cv.GetDefaultValidationContext()),
			ValidationContextCertificateProviderInstance: cv.GetValidationContextCertificateProviderInstance(), //nolint:staticcheck // read by older gRPC
		}}
	default:
		out.ValidationContextType = c.GetValidationContextType()
	}
	return out
}

// InboundPorts connects to the ADS server at addr as p's Envoy sidecar (p without its
// generator) and returns the ports of its inbound clusters ("inbound|PORT||"), sorted: the
// ports its workload serves, those a proxyless gRPC server of the workload may ask its
// listener for.
func InboundPorts(ctx context.Context, addr string, p Proxy) ([]uint32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.Generator = ""
	get, closeConn, err := openADS(ctx, addr, p)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	rs, err := get(clusterType, nil)
	if err != nil {
		return nil, err
	}
	var out []uint32
	for _, a := range rs {
		c := &clusterv3.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			return nil, fmt.Errorf("ADS %s: cluster: %w", addr, err)
		}
		parts := strings.Split(c.GetName(), "|")
		if len(parts) != 4 || parts[0] != "inbound" {
			continue
		}
		if n, err := strconv.ParseUint(parts[1], 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
