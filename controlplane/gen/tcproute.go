package gen

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	hashv3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// tcpRouteChains builds the filter chains of a sidecar's outbound TCP listener for one service
// port from the tcp routes of the VirtualServices for the service, as istiod's
// buildSidecarOutboundTCPFilterChainOpts does:
//   - VirtualServices in order, their tcp routes in order; a route without destinations is
//     skipped;
//   - a route without match, or with a match that applies to this proxy and port (gateways
//     include mesh, sourceLabels, sourceNamespace, port) and names no destinationSubnets, is
//     the listener's catch-all chain: nothing after it is read;
//   - matches that apply and name destinationSubnets collect their subnets into one chain that
//     matches those destination prefixes;
//   - without a catch-all route, a last chain sends everything to the service's own cluster.
//
// A TLS or HTTPS port reads tls routes instead (tlsRouteChains), not tcp ones. It also
// returns the VirtualServices and DestinationRules read, and an error per route dropped.
//
// As istiod's buildSidecarOutboundListener does, the chain that matches everything becomes the
// listener's default filter chain when other chains exist (def), and its only chain otherwise.
func tcpRouteChains(p *model.Proxy, ix *index, svc *model.Service, port model.Port) (chains []*listenerv3.FilterChain, def *listenerv3.FilterChain, deps []istioconfig.Key, err error) {
	defer func() {
		if n := len(chains); n > 1 && chains[n-1].GetFilterChainMatch() == nil {
			chains, def = chains[:n-1], chains[n-1]
		}
	}()
	cluster := ClusterName(Outbound, port.Number, "", svc.Hostname)
	if len(svc.Ports) == 1 {
		cluster = ClusterName(Outbound, svc.Ports[0].Number, "", svc.Hostname)
	}
	fs, fdeps := singleTCPProxy(ix, cluster, svc.Hostname, "", port.Protocol)
	defaultChain := &listenerv3.FilterChain{Filters: fs}
	deps = append(deps, fdeps...)
	if port.Protocol == model.ProtocolTLS || port.Protocol == model.ProtocolHTTPS {
		// tls routes instead (tlsroutes.go): chains by SNI, what none takes passes through.
		tr, err := tlsRouteChains(p, ix, svc, port, nil)
		deps = append(deps, tr.deps...)
		switch {
		case len(tr.chains) == 0 && tr.def != nil:
			return []*listenerv3.FilterChain{tr.def}, nil, deps, err
		case len(tr.chains) == 0:
			return []*listenerv3.FilterChain{defaultChain}, nil, deps, err
		case tr.def != nil:
			return tr.chains, tr.def, deps, err
		}
		fb := fallbackOf(ix.scope)
		return tr.chains, passthroughChain(fb), append(deps, fb.deps()...), err
	}
	var errs []error
	seenSubnets := map[string]bool{}
vsLoop:
	for _, c := range ix.virtualServices(svc.Hostname) {
		vs := vsSpec(c)
		if len(vs.GetTcp()) == 0 {
			continue
		}
		deps = append(deps, c.Key())
		for i, tr := range vs.GetTcp() {
			if len(tr.GetRoute()) == 0 {
				continue
			}
			catchAll := len(tr.GetMatch()) == 0
			var subnets []string
			for _, m := range tr.GetMatch() {
				if !tcpMatchApplies(p, m, port.Number) {
					continue
				}
				if len(m.GetDestinationSubnets()) == 0 {
					catchAll = true
					break
				}
				subnets = append(subnets, m.GetDestinationSubnets()...)
			}
			if !catchAll && len(subnets) == 0 {
				continue
			}
			filters, rdeps, err := tcpRouteFilters(ix, c, tr.GetRoute(), port)
			deps = append(deps, rdeps...)
			if err == nil && !catchAll {
				var ranges []*corev3.CidrRange
				ranges, err = cidrRanges(subnets)
				key := fmt.Sprint(ranges)
				if err == nil && seenSubnets[key] {
					err = fmt.Errorf("destinationSubnets %v are already matched by an earlier tcp route", subnets)
				}
				seenSubnets[key] = true
				if err == nil {
					chains = append(chains, &listenerv3.FilterChain{
						FilterChainMatch: &listenerv3.FilterChainMatch{PrefixRanges: ranges},
						Filters:          filters,
					})
					continue
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("VirtualService %s/%s tcp[%d] for %s port %d: %w; route skipped, fix the VirtualService", c.Namespace, c.Name, i, svc.Hostname, port.Number, err))
				continue
			}
			chains = append(chains, &listenerv3.FilterChain{Filters: filters})
			defaultChain = nil
			break vsLoop
		}
	}
	if defaultChain != nil {
		chains = append(chains, defaultChain)
	}
	return chains, nil, deps, errors.Join(errs...)
}

// tcpMatchApplies is istiod's matchTCP for a sidecar: gateways (when set) include mesh, the
// source labels are a subset of the proxy's, the port (when set) is the listener's, and the
// source namespace (when set) is the proxy's.
func tcpMatchApplies(p *model.Proxy, m *networking.L4MatchAttributes, port uint32) bool {
	if len(m.GetGateways()) > 0 && !forMesh(m.GetGateways()) {
		return false
	}
	if len(m.GetSourceLabels()) > 0 && (p == nil || !model.LabelsMatch(m.GetSourceLabels(), p.Labels)) {
		return false
	}
	if m.GetPort() != 0 && m.GetPort() != port {
		return false
	}
	return m.GetSourceNamespace() == "" || (p != nil && m.GetSourceNamespace() == p.Namespace)
}

// tcpRouteFilters is the tcp_proxy for a tcp route's destinations (istiod:
// buildOutboundNetworkFilters), after the filters of the port's protocol (tcpStack): one
// destination goes to its cluster, stat prefix the cluster name; several become weighted
// clusters (weight 0 left out) with stat prefix "VSNAME.VSNS", the first destination's
// DestinationRule giving the idle timeout, the maximum connection duration and a source-IP
// hash policy (buildOutboundNetworkFiltersWithWeightedClusters, maybeSetHashPolicy).
func tcpRouteFilters(ix *index, vs *istioconfig.Config, dests []*networking.RouteDestination, port model.Port) ([]*listenerv3.Filter, []istioconfig.Key, error) {
	var deps []istioconfig.Key
	for _, d := range dests {
		h := resolveHost(d.GetDestination().GetHost(), vs.Namespace)
		if ds := ix.snap.Service(h); ds != nil {
			deps = append(deps, ServiceKey(ds))
		}
	}
	if len(dests) == 1 {
		d := dests[0].GetDestination()
		cluster, err := destinationCluster(ix, vs.Namespace, d, port)
		if err != nil {
			return nil, deps, fmt.Errorf("route[0]: %w", err)
		}
		fs, fdeps := singleTCPProxy(ix, cluster, resolveHost(d.GetHost(), vs.Namespace), d.GetSubset(), port.Protocol)
		return fs, append(deps, fdeps...), nil
	}
	w := &tcpproxyv3.TcpProxy_WeightedCluster{}
	for i, d := range dests {
		if d.GetWeight() < 0 {
			return nil, deps, fmt.Errorf("route[%d]: negative weight %d", i, d.GetWeight())
		}
		if d.GetWeight() == 0 {
			continue
		}
		cluster, err := destinationCluster(ix, vs.Namespace, d.GetDestination(), port)
		if err != nil {
			return nil, deps, fmt.Errorf("route[%d]: %w", i, err)
		}
		w.Clusters = append(w.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: cluster, Weight: uint32(d.GetWeight())})
	}
	if len(w.Clusters) == 0 {
		return nil, deps, errors.New("every destination has weight 0")
	}
	tp := &tcpproxyv3.TcpProxy{StatPrefix: vs.Name + "." + vs.Namespace, ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: w}}
	if dr := ix.routeDestinationRule(resolveHost(dests[0].GetDestination().GetHost(), vs.Namespace)); dr != nil {
		deps = append(deps, dr.Key())
		rule := drSpec(dr)
		tcp := rule.GetTrafficPolicy().GetConnectionPool().GetTcp()
		if d := tcp.GetIdleTimeout(); d != nil {
			tp.IdleTimeout = durationpb.New(d.AsDuration())
		}
		if d := tcp.GetMaxConnectionDuration(); d != nil {
			tp.MaxDownstreamConnectionDuration = durationpb.New(d.AsDuration())
		}
		// Weighted clusters read the rule's own source-IP hash (maybeSetHashPolicy, subset "")
		// and tunnel.
		tp.HashPolicy = sourceIPHash(rule, "")
		tp.TunnelingConfig = tunnelingConfig(rule, "")
	}
	return tcpStack(port.Protocol, tp.StatPrefix, &listenerv3.Filter{Name: tcpProxyFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(tp)}}), deps, nil
}

// singleTCPProxy is the tcp_proxy to one cluster of host (istiod:
// buildOutboundNetworkFiltersWithSingleDestination), after the filters of the listener port's
// protocol proto (tcpStack): stat prefix the cluster name, and from host's DestinationRule the
// idle timeout, the maximum connection duration and the source-IP hash of the subset (or of
// the rule).
func singleTCPProxy(ix *index, cluster, host, subsetName string, proto model.Protocol) ([]*listenerv3.Filter, []istioconfig.Key) {
	dr := ix.routeDestinationRule(host)
	if dr == nil {
		return tcpStack(proto, cluster, tcpProxyFilter(cluster, cluster)), nil
	}
	rule := drSpec(dr)
	tp := &tcpproxyv3.TcpProxy{StatPrefix: cluster, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster}, HashPolicy: sourceIPHash(rule, subsetName),
		TunnelingConfig: tunnelingConfig(rule, subsetName)}
	tcp := rule.GetTrafficPolicy().GetConnectionPool().GetTcp()
	if d := tcp.GetIdleTimeout(); d != nil {
		tp.IdleTimeout = durationpb.New(d.AsDuration())
	}
	if d := tcp.GetMaxConnectionDuration(); d != nil {
		tp.MaxDownstreamConnectionDuration = durationpb.New(d.AsDuration())
	}
	return tcpStack(proto, cluster, &listenerv3.Filter{Name: tcpProxyFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(tp)}}), []istioconfig.Key{dr.Key()}
}

// tunnelingConfig is the tunneling_config of a tcp_proxy from the rule's tunnel
// settings, as istiod's tunnelingconfig.Apply builds it: the connection goes through the
// cluster as an HTTP CONNECT (or POST) to targetHost:targetPort. The named subset's tunnel
// when a subset is named (without falling back to the rule's), else the rule's; nil without.
// Sidecar tcp routes and gateway TCP and TLS-passthrough routes take it; a gateway's
// AUTO_PASSTHROUGH chains get none (istiod skips it there).
func tunnelingConfig(rule *networking.DestinationRule, subsetName string) *tcpproxyv3.TcpProxy_TunnelingConfig {
	t := rule.GetTrafficPolicy().GetTunnel()
	if subsetName != "" {
		t = nil
		for _, ss := range rule.GetSubsets() {
			if ss.GetName() == subsetName {
				t = ss.GetTrafficPolicy().GetTunnel()
				break
			}
		}
	}
	if t == nil {
		return nil
	}
	return &tcpproxyv3.TcpProxy_TunnelingConfig{
		Hostname: net.JoinHostPort(t.GetTargetHost(), strconv.FormatUint(uint64(t.GetTargetPort()), 10)),
		UsePost:  t.GetProtocol() == "POST",
	}
}

// sourceIPHash is istiod's maybeSetHashPolicy: a source-IP hash when the rule's consistent hash
// uses the source IP, unless the named subset sets a load balancer of its own, whose choice
// then wins.
func sourceIPHash(rule *networking.DestinationRule, subsetName string) []*hashv3.HashPolicy {
	use := rule.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash().GetUseSourceIp()
	for _, ss := range rule.GetSubsets() {
		if ss.GetName() != subsetName {
			continue
		}
		if lb := ss.GetTrafficPolicy().GetLoadBalancer(); lb != nil {
			use = lb.GetConsistentHash().GetUseSourceIp()
		}
		break
	}
	if !use {
		return nil
	}
	return []*hashv3.HashPolicy{{PolicySpecifier: &hashv3.HashPolicy_SourceIp_{SourceIp: &hashv3.HashPolicy_SourceIp{}}}}
}

// cidrRanges turns destination subnets (an IP or a CIDR) into sorted prefix ranges (istiod:
// util.ConvertAddressToCidr; an IP is a /32 or /128).
func cidrRanges(subnets []string) ([]*corev3.CidrRange, error) {
	sorted := slices.Clone(subnets)
	slices.Sort(sorted)
	var out []*corev3.CidrRange
	for _, s := range slices.Compact(sorted) {
		var pfx netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			pfx, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(s)
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if err != nil {
			return nil, fmt.Errorf("destinationSubnets: %q is neither an IP nor a CIDR", s)
		}
		out = append(out, &corev3.CidrRange{AddressPrefix: pfx.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(pfx.Bits()))})
	}
	return out, nil
}
