package gen

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	dfphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// A ServiceEntry of resolution DYNAMIC_DNS (model.Service.DynamicForwardProxy: its hosts are
// wildcards) has no endpoints: istiod serves its HTTP, HTTP2, GRPC and TLS ports through
// Envoy's dynamic forward proxy, which resolves the host each request names, and xdslab builds
// the same:
//   - the cluster "outbound|PORT||HOST" is envoy.clusters.dynamic_forward_proxy with the DNS
//     cache "HOST_dfp_dns_cache" (IPv4 lookups, as every DNS cluster here), lb_policy
//     CLUSTER_PROVIDED, the DestinationRule's connection pool, outlier detection and TLS (no
//     load balancer, no subsets); its TLS leaves the SNI to Envoy (auto_sni) and checks the
//     certificate against the request's host (auto_san_validation), as dfpAutoVerify says;
//   - the HTTP connection manager of the port's 0.0.0.0_PORT listener gets the
//     envoy.filters.http.dynamic_forward_proxy filter (same cache) before the router when the
//     service is the one istiod builds the listener's HTTP chain from (the first in its
//     order); its routes go to the cluster like any service's;
//   - a TLS port's SNI chain gets envoy.filters.network.sni_dynamic_forward_proxy (same cache,
//     the listener's port) before its tcp_proxy, unless a tls route of a VirtualService
//     builds the chain.
//
// Proxyless gRPC clients (istiod's grpcgen) and a gateway's AUTO_PASSTHROUGH (SNI-DNAT)
// clusters get EDS clusters instead, without endpoints.

// The names of the dynamic forward proxy extensions, as istiod spells them. Envoy finds a
// filter's factory by its typed_config's type, so the SNI filter's name, which istiod takes
// from the extension's proto package rather than Envoy's "envoy.filters.network.…" name, is
// only a label.
const (
	dfpClusterTypeName    = "envoy.clusters.dynamic_forward_proxy"
	dfpHTTPFilterName     = "envoy.filters.http.dynamic_forward_proxy"
	sniDFPFilterName      = "envoy.extensions.filters.network.sni_dynamic_forward_proxy"
	dfpDNSCacheNameSuffix = "_dfp_dns_cache"
)

// dfpServesPort reports whether istiod builds a dynamic forward proxy cluster for a port of
// protocol p (validation admits only these on a DYNAMIC_DNS entry).
func dfpServesPort(p model.Protocol) bool {
	switch p {
	case model.ProtocolHTTP, model.ProtocolHTTP2, model.ProtocolGRPC, model.ProtocolTLS:
		return true
	}
	return false
}

// dnsCacheConfig is the DNS cache the cluster and filters of host share on proxy p: Envoy
// keeps one cache per name, so they must agree on every setting. Its family is p's DNS
// clusters' (V6_ONLY on an IPv6-only proxy, as istiod's SelectDNSLookupFamily).
func dnsCacheConfig(host string, p *model.Proxy) *dfpcommonv3.DnsCacheConfig {
	return &dfpcommonv3.DnsCacheConfig{Name: host + dfpDNSCacheNameSuffix, DnsLookupFamily: dnsLookupFamily(p)}
}

// dfpCluster builds the dynamic forward proxy cluster name of svc's port with the traffic
// policy of dr (nil: none) for the port, as istiod's buildDFPCluster and applyDestinationRule
// do.
func dfpCluster(sh *shared, s *model.Snapshot, name string, svc *model.Service, port model.Port, dr *networking.DestinationRule) *clusterv3.Cluster {
	c := &clusterv3.Cluster{Name: name, LbPolicy: clusterv3.Cluster_CLUSTER_PROVIDED}
	pol := effectivePolicy(dr, port.Number, nil)
	h2 := pol.applyPool(sh, c, port.Protocol.IsHTTP2(), true)
	// The load balancer is the proxy's (CLUSTER_PROVIDED): istiod applies none of the rule's.
	pol.applyOutlier(c)
	cfg := &dfpclusterv3.ClusterConfig{ClusterImplementationSpecifier: &dfpclusterv3.ClusterConfig_DnsCacheConfig{DnsCacheConfig: dnsCacheConfig(svc.Hostname, sh.proxy)}}
	if verify, ok := dfpUpstreamTLS(sh, s, c, svc, pol.tls, h2); ok {
		cfg.AllowInsecureClusterOptions = verify.insecure
		setAutoVerify(c, h2, verify)
	}
	if !cfg.AllowInsecureClusterOptions && !autoVerifies(c) {
		// Not istiod's: without TLS, its cluster with upstream HTTP options (HTTP/2, or the
		// pool's idle timeout, connection duration, requests per connection) turns neither
		// auto_sni nor auto_san_validation on, and Envoy rejects it. As istiod does for its
		// ALLOW_ANY_DYNAMIC_DNS cluster without TLS, the insecure options are allowed.
		cfg.AllowInsecureClusterOptions = true
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{Name: dfpClusterTypeName, TypedConfig: toAny(cfg)}}
	pol.applyProxyProtocol(c)
	return c
}

// dfpUpstreamTLS gives a dynamic forward proxy cluster its TLS, as istiod does: the rule's
// SIMPLE or MUTUAL origination (originateTLSSocket), its ISTIO_MUTUAL (the rule's SNI only:
// none by default), else auto-mTLS for a mesh-internal service whose namespace does not
// disable it (transport socket matches, without an SNI). Only the rule's subjectAltNames are
// checked: istiod hands this cluster none of the entry's. It reports the auto SNI and SAN
// validation settings for it and whether the cluster got TLS.
func dfpUpstreamTLS(sh *shared, s *model.Snapshot, c *clusterv3.Cluster, svc *model.Service, t *networking.ClientTLSSettings, h2 bool) (autoVerify, bool) {
	bare := *svc
	bare.ServiceAccounts = nil
	svc = &bare
	if t != nil {
		switch t.GetMode() {
		case networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
			if !originateTLSSocket(c, svc, t, h2) {
				return autoVerify{}, false
			}
			return dfpAutoVerify(t.GetSni(), t.GetInsecureSkipVerify().GetValue()), true
		case networking.ClientTLSSettings_ISTIO_MUTUAL:
			sans := t.GetSubjectAltNames()
			if sans == nil {
				sans = svc.ServiceAccounts
			}
			c.TransportSocket = istioMutualSocket(workloadSecretSource(sh.proxy), t.GetSni(), sans, h2)
			return dfpAutoVerify(t.GetSni(), t.GetInsecureSkipVerify().GetValue()), true
		}
		return autoVerify{}, false
	}
	if svc.MeshExternal || sh.namespaceMTLS(s, svc.Namespace) == mtlsDisable {
		return autoVerify{}, false
	}
	c.TransportSocketMatches = autoMTLSMatches(sh, istioMutualSocket(agentSDSConfigSource, "", svc.ServiceAccounts, h2))
	return dfpAutoVerify("", false), true
}

// autoVerify is what istiod's setAutoSniAndAutoSanValidation sets on a cluster with TLS: Envoy
// takes the SNI from the request's host (sni), checks the certificate against it (san), and,
// for a dynamic forward proxy cluster, accepts TLS settings that do neither (insecure).
type autoVerify struct{ sni, san, insecure bool }

// dfpAutoVerify is autoVerify for a dynamic forward proxy cluster whose TLS names sni (""
// for none): the SNI is the request's host without one, the certificate is checked against
// the host unless skipVerify (whatever the subject alt names), and settings that leave out
// either need allow_insecure_cluster_options.
func dfpAutoVerify(sni string, skipVerify bool) autoVerify {
	v := autoVerify{sni: sni == "", san: !skipVerify}
	v.insecure = skipVerify || !v.sni || !v.san
	return v
}

// setAutoVerify sets v's auto_sni and auto_san_validation in c's upstream HTTP protocol options
// (which it creates, explicit HTTP/1.1 or HTTP/2 by h2, when c has none).
func setAutoVerify(c *clusterv3.Cluster, h2 bool, v autoVerify) {
	if !v.sni && !v.san {
		return
	}
	opts := httpOptions(h2, nil)
	if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]; a != nil {
		opts = &upstreamhttpv3.HttpProtocolOptions{}
		if err := a.UnmarshalTo(opts); err != nil {
			panic(fmt.Sprintf("gen: own protocol options do not decode: %v", err)) // built here
		}
	}
	opts.UpstreamHttpProtocolOptions = &corev3.UpstreamHttpProtocolOptions{AutoSni: v.sni, AutoSanValidation: v.san}
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOptionsName: toAny(opts)}
}

// autoVerifies reports whether Envoy's dynamic forward proxy factory finds auto_sni and
// auto_san_validation on in c: set in its upstream HTTP options, or, without such options,
// Envoy's default.
func autoVerifies(c *clusterv3.Cluster) bool {
	a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]
	if a == nil {
		return true
	}
	opts := &upstreamhttpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(opts); err != nil {
		panic(fmt.Sprintf("gen: own protocol options do not decode: %v", err)) // built here
	}
	u := opts.GetUpstreamHttpProtocolOptions()
	return u.GetAutoSni() && u.GetAutoSanValidation()
}

// dfpHTTPFilter is the HTTP filter that resolves the request's host into svc's DNS cache on
// proxy p.
func dfpHTTPFilter(svc *model.Service, p *model.Proxy) *hcmv3.HttpFilter {
	cfg := &dfphttpv3.FilterConfig{ImplementationSpecifier: &dfphttpv3.FilterConfig_DnsCacheConfig{DnsCacheConfig: dnsCacheConfig(svc.Hostname, p)}}
	return &hcmv3.HttpFilter{Name: dfpHTTPFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(cfg)}}
}

// withDFP puts svc's dynamic forward proxy filter on proxy p just before h's router (the last
// filter) when svc is served through one (istiod's place for it: after fault, CORS and
// telemetry).
func withDFP(h *hcmv3.HttpConnectionManager, svc *model.Service, p *model.Proxy) *hcmv3.HttpConnectionManager {
	if !svc.DynamicForwardProxy() || len(h.HttpFilters) == 0 {
		return h
	}
	n := len(h.HttpFilters)
	h.HttpFilters = append(h.HttpFilters[:n-1:n-1], dfpHTTPFilter(svc, p), h.HttpFilters[n-1])
	return h
}

// withSNIDFP puts the SNI dynamic forward proxy filter of svc, listening on port, just before
// the last filter of a TLS chain's filters (its tcp_proxy) when svc is served through one, and
// the proxy p's own network RBAC filters first: istiod builds this outbound chain with the
// authorization builders of the service, which on a sidecar select the policies that select
// the proxy, as for its inbound TCP chains (its LDS class holds that selection,
// InboundScope). It returns the chain's filters and the policies they depend on.
func withSNIDFP(p *model.Proxy, s *model.Snapshot, filters []*listenerv3.Filter, svc *model.Service, port uint32) ([]*listenerv3.Filter, []istioconfig.Key) {
	if !svc.DynamicForwardProxy() || len(filters) == 0 {
		return filters, nil
	}
	cfg := &snidfpv3.FilterConfig{DnsCacheConfig: dnsCacheConfig(svc.Hostname, p), PortSpecifier: &snidfpv3.FilterConfig_PortValue{PortValue: port}}
	f := &listenerv3.Filter{Name: sniDFPFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(cfg)}}
	n := len(filters)
	out := append(filters[:n-1:n-1], f, filters[n-1])
	if p == nil {
		return out, nil
	}
	az := authzFor(p, s)
	if az.empty() {
		return out, nil
	}
	return append(az.tcpFilters(), out...), az.deps
}
