package gen

import (
	"errors"
	"fmt"
	"slices"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Gateway AUTO_PASSTHROUGH servers (gateway.go), as istiod builds them: the client (a sidecar
// of another network or cluster) speaks Istio mTLS end to end and names the destination in
// its SNI, "outbound_.PORT_.SUBSET_.HOST" (IstioSNI). The gateway reads the SNI and the ALPN
// (TLS inspector) and forwards the TLS bytes untouched:
//   - per service the router sees (not a mesh-external one) whose host one of the server's
//     hosts covers, and per port of it (not UDP), a filter chain matching the SNI
//     "outbound_.PORT_._.HOST" and Istio's mTLS ALPNs (allIstioMTLSALPNs), with a tcp_proxy
//     to the SNI-DNAT cluster of that name; the same for each subset of the service's
//     DestinationRule;
//   - the SNI-DNAT clusters: the service's outbound cluster of the port (or subset), named as
//     the SNI, with the DestinationRule's policy but no upstream TLS (the bytes are the
//     client's TLS already); their endpoints are those that take Istio mTLS only, so that a
//     plaintext workload cannot be reached through the gateway.
//
// No authorization filter is put on these chains (istiod builds them without), and istiod's
// default mesh config builds them for any router a Gateway with such a server selects.

// autoPassthroughChains builds the filter chains of the port's AUTO_PASSTHROUGH servers and
// the SNI-DNAT clusters they forward to. Servers whose hosts overlap (*.svc.cluster.local and
// *.apps.svc.cluster.local) would match one SNI twice, which Envoy rejects: the first server's
// chain is kept and the later one reported.
func (rp *routerPlan) autoPassthroughChains(gp *gwPort) ([]*listenerv3.FilterChain, []string, []istioconfig.Key) {
	var chains []*listenerv3.FilterChain
	var clusters []string
	var deps []istioconfig.Key
	taken := map[string]gwServer{}
	for _, gs := range rp.autoPassthroughServers(gp) {
		hosts := serverSNIs(gs.srv)
		for _, svc := range visibleServices(rp.s, rp.ix.scope) {
			if svc.MeshExternal || !coveredBy(svc.Hostname, hosts) {
				continue
			}
			deps = append(deps, ServiceKey(svc))
			drc := rp.ix.destinationRule(svc.Hostname)
			var rule *networking.DestinationRule
			if drc != nil {
				deps = append(deps, drc.Key())
				rule = drSpec(drc)
			}
			for _, port := range svc.Ports {
				if port.Protocol == model.ProtocolUDP || !rp.ix.scope.SeesPort(svc, port.Number) {
					continue
				}
				subsets := []string{""}
				for _, ss := range rule.GetSubsets() {
					if checkSubsetName(ss.GetName()) == nil && !slices.Contains(subsets, ss.GetName()) {
						subsets = append(subsets, ss.GetName())
					}
				}
				for _, subset := range subsets {
					name := IstioSNI(port.Number, subset, svc.Hostname)
					if prev, ok := taken[name]; ok {
						rp.errs = append(rp.errs, fmt.Errorf("%s: AUTO_PASSTHROUGH SNI %q on port %d is already served by %s, whose hosts overlap; kept there, make the servers' hosts disjoint", gs, name, gp.num, prev))
						continue
					}
					taken[name] = gs
					tp := &tcpproxyv3.TcpProxy{StatPrefix: name, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: name}}
					tcp := rule.GetTrafficPolicy().GetConnectionPool().GetTcp()
					if d := tcp.GetIdleTimeout(); d != nil {
						tp.IdleTimeout = durationpb.New(d.AsDuration())
					}
					if d := tcp.GetMaxConnectionDuration(); d != nil {
						tp.MaxDownstreamConnectionDuration = durationpb.New(d.AsDuration())
					}
					if rule != nil {
						tp.HashPolicy = sourceIPHash(rule, subset)
					}
					f := &listenerv3.Filter{Name: tcpProxyFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(tp)}}
					chains = append(chains, &listenerv3.FilterChain{
						Name:             name,
						FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{name}, ApplicationProtocols: allIstioMTLSALPNs},
						Filters:          tcpStack(port.Protocol, name, f),
					})
					clusters = append(clusters, name)
				}
			}
		}
	}
	return chains, clusters, deps
}

// coveredBy reports whether one of the server hosts covers the service host.
func coveredBy(host string, serverHosts []string) bool {
	if len(serverHosts) == 0 {
		return true // "*"
	}
	for _, h := range serverHosts {
		if model.HostMatches(h, host) {
			return true
		}
	}
	return false
}

// sniDNATClusters builds the SNI-DNAT clusters of names (parsed, SNIDNAT): the service's
// outbound cluster of the port or subset under that name, without upstream TLS.
func sniDNATClusters(p *model.Proxy, s *model.Snapshot, ix *index, names []ClusterNameParts) ([]Resource, error) {
	var out []Resource
	var errs []error
	sh := &shared{proxy: p}
	for _, cn := range names {
		svc := visibleService(s, ix.scope, cn.Host)
		if svc == nil {
			continue
		}
		port, ok := svc.Port(cn.Port)
		if !ok {
			continue
		}
		deps := []istioconfig.Key{ServiceKey(svc), svc.Source}
		drc := ix.destinationRule(svc.Hostname)
		var dr *networking.DestinationRule
		if drc != nil {
			deps = append(deps, drc.Key())
			dr = drSpec(drc)
		}
		if svc.Resolution == model.ResolutionDNS {
			deps = append(deps, EndpointKey(svc))
		}
		if subset(drc, cn.Subset) == nil && cn.Subset != "" {
			continue
		}
		// istiod builds these clusters without the TLS step (no TLS the rule asks for, nor
		// auto_sni with it, no auto-mTLS: the client's mTLS passes through), but a DNS
		// cluster's endpoints still take their tlsMode from the rule, as in EDS, and only
		// those that take Istio mTLS are kept, before the locality load balancing (the
		// name tells loadAssignment).
		name := cn.String()
		plain := withoutTLS(dr)
		var ss *networking.Subset
		for _, x := range plain.GetSubsets() {
			if cn.Subset != "" && x.GetName() == cn.Subset {
				ss = x
				break
			}
		}
		c, err := outboundCluster(sh, s, name, svc, port, plain, ss, s.Endpoints(svc.Hostname), false)
		if err != nil {
			errs = append(errs, fmt.Errorf("SNI-DNAT cluster %s: %w", name, err))
		}
		if c == nil {
			continue
		}
		c.TransportSocket, c.TransportSocketMatches = nil, nil
		if c.LoadAssignment != nil {
			if ruled, _ := outboundCluster(sh, s, name, svc, port, dr, subset(drc, cn.Subset), s.Endpoints(svc.Hostname), false); ruled != nil {
				c.LoadAssignment = ruled.LoadAssignment
			}
		}
		out = append(out, Resource{Name: name, Message: c, Deps: sortDeps(deps)})
	}
	return out, errors.Join(errs...)
}

// withoutTLS returns a copy of dr without its TLS settings (top level, port level, subsets).
func withoutTLS(dr *networking.DestinationRule) *networking.DestinationRule {
	if dr == nil {
		return nil
	}
	dr = proto.Clone(dr).(*networking.DestinationRule)
	drop := func(tp *networking.TrafficPolicy) {
		if tp == nil {
			return
		}
		tp.Tls = nil
		for _, pl := range tp.GetPortLevelSettings() {
			pl.Tls = nil
		}
	}
	drop(dr.GetTrafficPolicy())
	for _, ss := range dr.GetSubsets() {
		drop(ss.GetTrafficPolicy())
	}
	return dr
}
