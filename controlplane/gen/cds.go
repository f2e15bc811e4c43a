package gen

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// adsConfigSource points a discovery at the ADS stream, with Envoy's default initial fetch
// timeout (15s).
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// adsWaitingSource points a discovery at the ADS stream with initial_fetch_timeout 0s, as
// istiod sets it on EDS, RDS and its workload secrets: a cluster waits for its assignment, a
// listener for its routes, as long as it takes (with Envoy's default they would give up after
// 15s and take traffic without endpoints, or without routes).
func adsWaitingSource() *corev3.ConfigSource {
	cs := adsConfigSource()
	cs.InitialFetchTimeout = durationpb.New(0)
	return cs
}

// sidecarClusters is the sidecar CDS generator: every outbound cluster (per service port, plus
// one per DestinationRule subset), the inbound clusters of the proxy's own services, and
// BlackHoleCluster, PassthroughCluster and InboundPassthroughCluster.
func sidecarClusters(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	want := nameSet(names)
	ix := newIndex(s, s.ScopeFor(p)).of(p)
	out, errs := outboundClusters(p, s, ix, want, false)
	out = append(out, inboundClusters(p, s, want)...)
	for _, c := range []*clusterv3.Cluster{blackHole(), passthrough(PassthroughCluster), inboundPassthrough(p)} {
		if wanted(want, c.Name) {
			out = append(out, Resource{Name: c.Name, Message: c})
		}
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, errs
}

// grpcClusters is the proxyless gRPC CDS generator: only outbound clusters grpc-go accepts
// (EDS, also for passthrough services as istiod's grpcgen builds them, or LOGICAL_DNS for DNS
// services).
func grpcClusters(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	out, err := outboundClusters(p, s, newIndex(s, s.ScopeFor(p)).of(p), nameSet(names), true)
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

func wanted(want map[string]struct{}, name string) bool {
	if want == nil {
		return true
	}
	_, ok := want[name]
	return ok
}

// outboundClusters builds "outbound|PORT|SUBSET|HOST" for every wanted service port and subset.
// A named request only touches the services it names. p is the proxy they are for (the
// endpoints DNS clusters inline are ranked against its locality).
func outboundClusters(p *model.Proxy, s *model.Snapshot, ix *index, want map[string]struct{}, grpc bool) ([]Resource, error) {
	var errs []error
	var out []Resource
	sh := &shared{proxy: p}
	build := func(svc *model.Service) {
		rs, err := serviceClusters(s, ix, sh, svc, want, grpc)
		out = append(out, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if want == nil {
		for _, svc := range visibleServices(s, ix.scope) {
			build(svc)
		}
		return out, errors.Join(errs...)
	}
	hosts := map[string]bool{}
	for name := range want {
		if cn, err := ParseClusterName(name); err == nil && cn.Direction == Outbound {
			hosts[cn.Host] = true
		}
	}
	sorted := make([]string, 0, len(hosts))
	for h := range hosts {
		sorted = append(sorted, h)
	}
	slices.Sort(sorted)
	for _, h := range sorted {
		if svc := visibleService(s, ix.scope, h); svc != nil {
			build(svc)
		}
	}
	return out, errors.Join(errs...)
}

// serviceClusters builds one service's outbound clusters.
func serviceClusters(s *model.Snapshot, ix *index, sh *shared, svc *model.Service, want map[string]struct{}, grpc bool) ([]Resource, error) {
	drc := ix.destinationRule(svc.Hostname)
	var dr *networking.DestinationRule
	deps := []istioconfig.Key{ServiceKey(svc), svc.Source}
	if drc != nil {
		dr = drSpec(drc)
		deps = append(deps, drc.Key())
	}
	if svc.Resolution == model.ResolutionDNS {
		deps = append(deps, EndpointKey(svc))
	}
	deps = sortDeps(deps)
	var errs []error
	var out []Resource
	for _, port := range svc.Ports {
		if port.Protocol == model.ProtocolUDP || !ix.scope.SeesPort(svc, port.Number) {
			continue // istiod builds nothing for UDP, nor for a port a Sidecar egress port leaves out
		}
		if svc.DynamicForwardProxy() && !grpc {
			// One dynamic forward proxy cluster per port it serves, without subsets (dfp.go).
			name := ClusterName(Outbound, port.Number, "", svc.Hostname)
			if dfpServesPort(port.Protocol) && wanted(want, name) {
				out = append(out, Resource{Name: name, Message: dfpCluster(sh, s, name, svc, port, dr), Deps: deps})
			}
			continue
		}
		subsets := append([]*networking.Subset{nil}, dr.GetSubsets()...)
		seen := map[string]bool{}
		for _, ss := range subsets {
			name := ClusterName(Outbound, port.Number, ss.GetName(), svc.Hostname)
			if ss != nil {
				if err := checkSubsetName(ss.GetName()); err != nil {
					errs = append(errs, fmt.Errorf("DestinationRule %s: %w", drc.Key(), err))
					continue
				}
				if seen[ss.GetName()] {
					errs = append(errs, fmt.Errorf("DestinationRule %s: subset %q defined twice; only the first is used", drc.Key(), ss.GetName()))
					continue
				}
				seen[ss.GetName()] = true
			}
			if !wanted(want, name) {
				continue
			}
			c, err := outboundCluster(sh, s, name, svc, port, dr, ss, s.Endpoints(svc.Hostname), grpc)
			if err != nil {
				errs = append(errs, err)
			}
			if c == nil {
				continue // a DNS cluster without endpoints
			}
			out = append(out, Resource{Name: name, Message: c, Deps: deps})
		}
	}
	return out, errors.Join(errs...)
}

func checkSubsetName(n string) error {
	if n == "" || strings.ContainsAny(n, "|:/ ") {
		return fmt.Errorf("subset name %q is empty or contains one of '|', ':', '/', ' '; rename the subset", n)
	}
	return nil
}

// outboundCluster builds one outbound cluster, nil for a DNS cluster (not proxyless gRPC's)
// that none of the service's endpoints are for, which istiod does not build (proxyless gRPC
// resolves the service's host name then). Errors concern the endpoints inlined for
// DNS clusters; the cluster returned is still valid.
func outboundCluster(sh *shared, s *model.Snapshot, name string, svc *model.Service, port model.Port, dr *networking.DestinationRule, ss *networking.Subset, eps []*model.Endpoint, grpc bool) (*clusterv3.Cluster, error) {
	c := &clusterv3.Cluster{Name: name}
	pol := effectivePolicy(dr, port.Number, ss)
	pol.distribution = svc.TrafficDistribution
	var err error
	resolution := svc.Resolution
	if resolution == model.ResolutionDynamicDNS {
		// Not a dynamic forward proxy here (serviceClusters builds those): a proxyless gRPC
		// client's cluster or a gateway's SNI-DNAT one, EDS in istiod.
		resolution = model.ResolutionStatic
	}
	if resolution == model.ResolutionPassthrough && (grpc || sh.proxy != nil && sh.proxy.Type == model.Router) {
		// A gateway cannot pass through to the address the client dialled, nor can grpc-go
		// (no ORIGINAL_DST clusters): istiod falls back to EDS (the entry's endpoints, often
		// none).
		resolution = model.ResolutionStatic
	}
	if !grpc && originalDstSubset(dr, ss, port.Number) {
		// istiod makes such a subset cluster ORIGINAL_DST before it looks at endpoints: a DNS
		// service's gets neither a DNS lookup family nor endpoints, and is built also when
		// no endpoint has the subset's labels.
		resolution = model.ResolutionPassthrough
	}
	switch resolution {
	case model.ResolutionStatic:
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		src := sh.adsSource()
		if grpc {
			src = adsConfigSource() // istiod's grpcgen sets no initial_fetch_timeout
		}
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: src, ServiceName: name}
	case model.ResolutionDNS:
		c.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
		if !grpc {
			c.DnsLookupFamily = dnsLookupFamily(sh.proxy)
		}
		var cla *endpointv3.ClusterLoadAssignment
		cla, err = loadAssignment(name, svc, port, eps, ss.GetLabels(), true, sh.workloadMTLS(s), ruleTLSMode(dr, ss.GetName(), port.Number), localityPolicy(pol, sh.proxy, s))
		n := lbEndpointCount(cla)
		if n == 0 && !grpc && strings.HasPrefix(name, sniDNATPrefix) {
			// A gateway's SNI-DNAT cluster keeps only the endpoints that take Istio mTLS
			// (loadAssignment); istiod builds it, and chooses its type, by all of them.
			all, _ := loadAssignment(ClusterName(Outbound, port.Number, ss.GetName(), svc.Hostname), svc, port, eps, ss.GetLabels(), true, sh.workloadMTLS(s), ruleTLSMode(dr, ss.GetName(), port.Number), nil)
			n = lbEndpointCount(all)
		}
		switch {
		case n == 0 && !grpc:
			// No endpoint for this cluster: a subset whose labels no endpoint has (a DNS
			// entry's own host name, its endpoint when it lists none, has no labels), or an
			// entry whose workloadSelector selects no WorkloadEntry (such an entry has no
			// host-name endpoint). istiod builds no cluster then (its buildCluster gives up on
			// a DNS cluster without endpoints); routes and listeners still name it, and their
			// requests and connections fail.
			return nil, err
		case n == 0 || (grpc && n > 1):
			// The proxy resolves the service's own hostname (grpc-go's LOGICAL_DNS takes exactly
			// one endpoint).
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS}
			cla = logicalDNSAssignment(name, svc.Hostname, port.Number)
		case grpc:
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS}
		case svc.DNSRoundRobin:
			// DNS_ROUND_ROBIN is LOGICAL_DNS in istiod, which Envoy only takes with one endpoint:
			// past the first (several WorkloadEntries selected), the rest are dropped, as istiod
			// drops a second DNS_ROUND_ROBIN entry's endpoints for the same host and port.
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS}
			if n > 1 && lbEndpointCount(cla) > 0 {
				first := cla.GetEndpoints()[0]
				for _, l := range cla.GetEndpoints() {
					if len(l.GetLbEndpoints()) > 0 {
						first = l
						break
					}
				}
				cla = &endpointv3.ClusterLoadAssignment{ClusterName: cla.GetClusterName(), Policy: cla.GetPolicy(), Endpoints: []*endpointv3.LocalityLbEndpoints{{
					Locality: first.GetLocality(), LbEndpoints: first.GetLbEndpoints()[:1], LoadBalancingWeight: first.GetLoadBalancingWeight(), Priority: first.GetPriority(),
				}}}
				err = errors.Join(err, fmt.Errorf("cluster %s: resolution DNS_ROUND_ROBIN takes one endpoint, %d found: only the first is used; use resolution DNS to balance over all", name, n))
			}
		default:
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		}
		c.LoadAssignment = cla
	case model.ResolutionPassthrough:
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
	}
	pol.applyLB(c, grpc)
	if resolution == model.ResolutionPassthrough {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
		c.EdsClusterConfig, c.LoadAssignment = nil, nil
		c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
		c.LbConfig = nil // istiod applies no consistent hash to ORIGINAL_DST clusters
	}
	// A sidecar's sniffed traffic: HTTP/1.1 or HTTP/2 upstream as the client spoke it. istiod
	// chooses this before it applies the rule, so an h2UpgradePolicy UPGRADE does not change
	// it. A gateway does not sniff: its cluster of such a port speaks HTTP/1.1 unless the
	// rule upgrades it.
	sniffed := port.Protocol == model.ProtocolUnknown && !grpc && (sh.proxy == nil || sh.proxy.Type != model.Router)
	h2 := pol.applyPool(sh, c, port.Protocol.IsHTTP2(), !sniffed)
	if sniffed {
		useDownstreamProtocol(sh, c)
	}
	if grpc {
		// As istiod's grpcgen: of the connection pool only http2MaxRequests, as the
		// max_requests breaker (unset, grpc-go allows 1024 concurrent RPCs), and no outlier
		// detection (grpc-go would eject on it; locality priorities still follow it, eds.go).
		c.CircuitBreakers = grpcBreakers(pol)
		// Nor the connection pool's TCP keepalive and HTTP protocol options (grpc-go reads
		// neither; istiod's grpcgen sets neither).
		c.UpstreamConnectionOptions, c.TypedExtensionProtocolOptions = nil, nil
		applyGRPCUpstreamTLS(c, svc, pol)
		return c, err
	}
	pol.applyOutlier(c)
	if c.CommonLbConfig == nil {
		c.CommonLbConfig = sh.panicDisabled()
	}
	if pol.localityWeighted() {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{
			HealthyPanicThreshold:   c.CommonLbConfig.GetHealthyPanicThreshold(),
			LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{}},
		}
	}
	if za := pol.zoneAwareConfig(); za != nil {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{
			HealthyPanicThreshold:   c.CommonLbConfig.GetHealthyPanicThreshold(),
			LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig_{ZoneAwareLbConfig: za},
		}
	}
	applyUpstreamTLS(sh, s, c, svc, port, ss.GetName(), pol, eps, h2, passthroughRule(svc, dr, ss))
	pol.applyProxyProtocol(c)
	return c, err
}

// originalDstSubset reports whether the cluster of subset ss (nil: none) passes through to
// the address the client dialled whatever its port-level load balancer says, as istiod builds
// it: when the subset's own top-level load balancer is PASSTHROUGH, or when the service's
// cluster of the port is (the rule's load balancer for the port is PASSTHROUGH), istiod
// makes the subset cluster ORIGINAL_DST before it applies the merged policy, and an
// ORIGINAL_DST cluster keeps CLUSTER_PROVIDED (no consistent hash).
func originalDstSubset(dr *networking.DestinationRule, ss *networking.Subset, port uint32) bool {
	if ss == nil {
		return false
	}
	const pass = networking.LoadBalancerSettings_PASSTHROUGH
	return ss.GetTrafficPolicy().GetLoadBalancer().GetSimple() == pass || effectivePolicy(dr, port, nil).lb.GetSimple() == pass
}

// passthroughRule reports whether istiod infers the auto-mTLS of the cluster of svc (of
// subset ss when not nil) from the service's endpoints: for a resolution NONE service, or
// when the load balancer of the rule's top-level traffic policy (of the subset's own policy,
// for a subset cluster) is PASSTHROUGH. Port-level settings do not count: istiod reads the
// rule's (or subset's) traffic policy alone there.
func passthroughRule(svc *model.Service, dr *networking.DestinationRule, ss *networking.Subset) bool {
	if svc.Resolution == model.ResolutionPassthrough {
		return true
	}
	tp := dr.GetTrafficPolicy()
	if ss != nil {
		tp = ss.GetTrafficPolicy()
	}
	return tp.GetLoadBalancer().GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH
}

// grpcBreakers is a proxyless gRPC cluster's circuit breakers: max_requests from the connection
// pool's http2MaxRequests, the one threshold grpc-go reads (istiod's grpcgen
// applyCircuitBreakers), nil without it.
func grpcBreakers(pol policy) *clusterv3.CircuitBreakers {
	n := pol.pool.GetHttp().GetHttp2MaxRequests()
	if n <= 0 {
		return nil
	}
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(uint32(n))}}}
}

// applyUpstreamTLS gives an outbound cluster its TLS as istiod does. SIMPLE and MUTUAL
// originate TLS (originateTLS). A DestinationRule's
// ISTIO_MUTUAL is a transport socket (its SNI and SANs, else Istio's SNI and the service's
// accounts; secrets from workloadSecretSource: the istio-agent, or xdslab's SDS over ADS for
// a proxy whose stream authenticated); DISABLE or another mode keeps plaintext. Without client TLS settings, auto-mTLS: a
// mesh-internal service whose namespace (or the mesh) is not PeerAuthentication DISABLE gets
// transport_socket_matches, mTLS to endpoints whose metadata says tlsMode "istio" and
// plaintext to the rest; an ORIGINAL_DST cluster gets mTLS as its socket instead. Where
// istiod infers the service's mTLS from its endpoints (fromEndpoints: a resolution NONE
// service, whose cluster is ORIGINAL_DST on a sidecar and EDS on a gateway, or a rule's
// PASSTHROUGH load balancer, see passthroughRule), auto-mTLS applies only when the service
// has endpoints and every one has tlsMode "istio". Auto-mTLS names its secrets on the
// istio-agent's sds-grpc, as istiod does.
func applyUpstreamTLS(sh *shared, s *model.Snapshot, c *clusterv3.Cluster, svc *model.Service, port model.Port, subset string, pol policy, eps []*model.Endpoint, h2, fromEndpoints bool) {
	sni := IstioSNI(port.Number, subset, svc.Hostname)
	if t := pol.tls; t != nil {
		switch t.GetMode() {
		case networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
			originateTLS(c, svc, t, h2)
			return
		case networking.ClientTLSSettings_ISTIO_MUTUAL:
		default:
			return
		}
		if t.GetSni() != "" {
			sni = t.GetSni()
		}
		sans := t.GetSubjectAltNames()
		if sans == nil {
			sans = svc.ServiceAccounts
		}
		c.TransportSocket = istioMutualSocket(workloadSecretSource(sh.proxy), sni, sans, h2)
		return
	}
	if svc.MeshExternal || sh.namespaceMTLS(s, svc.Namespace) == mtlsDisable {
		return
	}
	if fromEndpoints {
		// As istiod infers it from the endpoints of the cluster's port: none, or one without a
		// sidecar, and the cluster gets no TLS.
		serving := 0
		for _, ep := range eps {
			if _, ok := ep.ServesPort(port); !ok {
				continue
			}
			serving++
			if endpointTLSMode(ep) != tlsModeIstio {
				return
			}
		}
		if serving == 0 {
			return
		}
	}
	if c.GetType() == clusterv3.Cluster_ORIGINAL_DST {
		c.TransportSocket = istioMutualSocket(agentSDSConfigSource, sni, svc.ServiceAccounts, h2)
		return
	}
	c.TransportSocketMatches = autoMTLSMatches(sh, istioMutualSocket(agentSDSConfigSource, sni, svc.ServiceAccounts, h2))
}

func logicalDNSAssignment(name, host string, port uint32) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
		Locality:    &corev3.Locality{},
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socketAddress(host, port)}}}},
	}}}
}

// inboundPort is one port the proxy's workload serves, found through the services whose
// endpoints carry the proxy's IP.
type inboundPort struct {
	target   uint32
	port     uint32 // the service port
	protocol model.Protocol
	svc      *model.Service // nil for a Sidecar ingress port no service targets

	// Set for a Sidecar ingress port (sidecaringress.go).
	fromSidecar  bool
	endpoint     string // the defaultEndpoint's address (IP or unix://PATH); "" for ORIGINAL_DST
	endpointPort uint32
	bind         string // the listener address when bindToPort
	bindToPort   bool   // a listener of its own rather than chains in virtualInbound
	// pool is the Sidecar's connection pool for the port, over the DestinationRule's.
	pool *networking.ConnectionPoolSettings
}

// inboundPorts lists the proxy's inbound ports by target port (first service by hostname wins
// a port shared by several services), and the dependency keys they came from. The services
// are the proxy's service targets as istiod's registries find them (model.IsServiceTarget: a
// ServiceEntry of another namespace than the node's NAMESPACE is not one), and a port counts
// only where the endpoint serves it.
func inboundPorts(p *model.Proxy, s *model.Snapshot) ([]inboundPort, []istioconfig.Key) {
	if p == nil || len(p.IPAddresses) == 0 {
		return nil, nil
	}
	var out []inboundPort
	var deps []istioconfig.Key
	seen := map[uint32]bool{}
	for _, svc := range s.Services() {
		for _, ep := range s.Endpoints(svc.Hostname) {
			if !slices.Contains(p.IPAddresses, ep.Address) {
				continue
			}
			deps = append(deps, ServiceKey(svc), EndpointKey(svc))
			if !model.IsServiceTarget(p, s, ep) {
				continue
			}
			for _, port := range svc.Ports {
				tp, ok := ep.ServesPort(port)
				if !ok || seen[tp] || tp == VirtualInboundPort || tp == VirtualOutboundPort {
					continue
				}
				seen[tp] = true
				out = append(out, inboundPort{target: tp, port: port.Number, protocol: port.Protocol, svc: svc})
			}
		}
	}
	slices.SortFunc(out, func(a, b inboundPort) int { return int(a.target) - int(b.target) })
	return out, sortDeps(deps)
}

// inboundClusters builds "inbound|PORT||" for each target port of the proxy's services, as
// istiod does: an ORIGINAL_DST cluster (the connection goes to the address it was sent to, the
// workload's own IP:PORT) bound to 127.0.0.6 so that iptables lets it through, with the
// connection pool of the service's DestinationRule (its port-level settings for the service
// port) and no outlier detection, load balancing or TLS.
func inboundClusters(p *model.Proxy, s *model.Snapshot, want map[string]struct{}) []Resource {
	ports, deps := proxyInboundPorts(p, s)
	var out []Resource
	sh := &shared{}
	// The rule of the service is the one the proxy's own outbound clusters read (its
	// namespace's first, then the service's, then the root's), as istiod's inbound cluster
	// takes its connection pool from the sidecar scope's rule.
	ix := newIndex(s, s.ScopeFor(p))
	for _, ip := range ports {
		name := ClusterName(Inbound, ip.target, "", "")
		if !wanted(want, name) {
			continue
		}
		c := &clusterv3.Cluster{
			Name:                 name,
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
			LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED,
			UpstreamBindConfig:   inboundBind(p),
		}
		d := deps
		var pol policy
		// Only a service the scope holds has a rule there: istiod picks the sidecar scope's
		// rules for the services it imports, so a Sidecar that does not import the proxy's
		// own service leaves its inbound cluster without one.
		// A Sidecar ingress port no service targets has no rule.
		if drc := ix.destinationRule(svcHost(ip.svc)); ip.svc != nil && drc != nil && ix.scope.SeesService(ip.svc) {
			d = sortDeps(append(slices.Clone(deps), drc.Key()))
			pol = effectivePolicy(drSpec(drc), ip.port, nil)
		}
		if ip.pool != nil {
			// The Sidecar's pool replaces the rule's, as a whole.
			pol.pool = ip.pool
		}
		if ip.endpoint != "" {
			// A Sidecar ingress defaultEndpoint: a STATIC cluster to it, bound to 127.0.0.6
			// unless it is the loopback (iptables does not capture that).
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
			c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
			c.LoadAssignment = inboundAssignment(name, ip.endpoint, ip.endpointPort)
			if ip.endpoint == "127.0.0.1" || ip.endpoint == "::1" {
				c.UpstreamBindConfig = nil
			}
		}
		// istiod applies no h2UpgradePolicy to inbound clusters: only an HTTP/2 port's
		// cluster speaks HTTP/2 to the app.
		pol.applyPool(sh, c, ip.protocol.IsHTTP2(), false)
		if ip.protocol == model.ProtocolUnknown {
			// Sniffed inbound traffic (virtualInbound): HTTP/1.1 or HTTP/2 to the app as the
			// client spoke it, as istiod's inbound cluster of such a port does.
			useDownstreamProtocol(sh, c)
		}
		out = append(out, Resource{Name: name, Message: c, Deps: d})
	}
	return out
}

func svcHost(svc *model.Service) string {
	if svc == nil {
		return ""
	}
	return svc.Hostname
}

// inboundBind binds upstream connections to 127.0.0.6 (::6 on an IPv6-only proxy, istiod's
// passthrough bind for its IP family), which the sidecar's iptables rules do not capture again.
func inboundBind(p *model.Proxy) *corev3.BindConfig {
	addr := "127.0.0.6"
	if p != nil && !proxyIPv4(p) {
		addr = "::6"
	}
	return &corev3.BindConfig{SourceAddress: &corev3.SocketAddress{
		Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 0},
	}}
}

// dnsLookupFamily is the address family a proxy's DNS clusters resolve (istiod's
// SelectDNSLookupFamily, dual stack off): IPv6 only for a proxy all of whose addresses are
// IPv6, else IPv4 only (also for a dual-stack proxy or none known).
func dnsLookupFamily(p *model.Proxy) clusterv3.Cluster_DnsLookupFamily {
	if p != nil && !proxyIPv4(p) {
		return clusterv3.Cluster_V6_ONLY
	}
	return clusterv3.Cluster_V4_ONLY
}

// blackHole drops everything: a STATIC cluster with no endpoints.
func blackHole() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 BlackHoleCluster,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(DefaultConnectTimeout),
	}
}

// passthrough forwards to the original destination address, with istiod's settings: no
// circuit breaking, and HTTP upstream in the protocol the downstream spoke (the traffic is
// unknown), idle connections closed after 5 minutes.
func passthrough(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED,
		ConnectTimeout:       durationpb.New(DefaultConnectTimeout),
		CircuitBreakers:      &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{defaultThresholds()}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{httpProtocolOptionsName: toAny(&upstreamhttpv3.HttpProtocolOptions{
			CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(passthroughIdleTimeout)},
			UpstreamProtocolOptions: &upstreamhttpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
				UseDownstreamProtocolConfig: &upstreamhttpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
					HttpProtocolOptions:  &corev3.Http1ProtocolOptions{},
					Http2ProtocolOptions: &corev3.Http2ProtocolOptions{},
				},
			},
		})},
	}
}

// passthroughIdleTimeout closes idle upstream connections of the passthrough clusters
// (istiod's value).
const passthroughIdleTimeout = 5 * time.Minute

// inboundPassthrough forwards inbound traffic for ports no service declares to the original
// destination, binding to 127.0.0.6 (::6 on an IPv6-only proxy, both on a dual-stack one) as
// Istio does so that iptables does not loop it back.
func inboundPassthrough(p *model.Proxy) *clusterv3.Cluster {
	c := passthrough(InboundPassthroughCluster)
	c.UpstreamBindConfig = inboundBind(p)
	if proxyDualStack(p) {
		// Envoy picks the source address of the destination's family (istiod adds ::6 for a
		// dual-stack proxy whether or not its dual stack support is on).
		c.UpstreamBindConfig.ExtraSourceAddresses = []*corev3.ExtraSourceAddress{{
			Address: &corev3.SocketAddress{Address: "::6", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 0}},
		}}
	}
	return c
}

// lbEndpointCount is how many endpoints the assignment holds, over its localities.
func lbEndpointCount(cla *endpointv3.ClusterLoadAssignment) int {
	n := 0
	for _, l := range cla.GetEndpoints() {
		n += len(l.GetLbEndpoints())
	}
	return n
}
