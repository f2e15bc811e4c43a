package gen

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// tlsRoutes are the outbound filter chains a sidecar builds for one TLS or HTTPS service port
// from the tls routes of the VirtualServices for the service (tlsRouteChains).
type tlsRoutes struct {
	// chains match on SNI (and destination prefixes), in the order istiod builds them; nil
	// when no tls route match applies to the proxy and port: the port keeps its own chain.
	chains []*listenerv3.FilterChain
	// def is a chain that matches everything (a match without SNI or destination subnets,
	// which validation rejects), nil otherwise.
	def  *listenerv3.FilterChain
	deps []istioconfig.Key
}

// tlsRouteChains reads the tls routes of the VirtualServices for svc that apply to a sidecar
// (bound to the mesh), in VirtualService order, as istiod's
// buildSidecarOutboundTLSFilterChainOpts does:
//   - a route without destinations is skipped;
//   - each match that applies to the proxy and port (gateways include mesh, sourceLabels are a
//     subset of the proxy's, port is unset or the listener's, sourceNamespace is unset or the
//     proxy's) is a chain that matches its sniHosts (server_names, sorted) and destination
//     prefixes, and sends to the route's destinations (tcpRouteFilters: one cluster, or weighted
//     clusters);
//   - the destination prefixes are svcCIDRs (the service's CIDR addresses, nil for a VIP)
//     until a match that applies names destinationSubnets: those then replace them, for that
//     match and for every later one that names none (istiod keeps the last ones it read);
//   - a match whose sniHosts and destinationSubnets (as written) an earlier applied match had
//     adds no chain: the earlier one takes that traffic.
//
// A route whose destinations cannot be resolved adds no chain and is reported.
func tlsRouteChains(p *model.Proxy, ix *index, svc *model.Service, port model.Port, svcCIDRs []string) (tlsRoutes, error) {
	var out tlsRoutes
	var errs []error
	handled := map[string]bool{}
	subnets := svcCIDRs
	for _, c := range ix.virtualServices(svc.Hostname) {
		vs := vsSpec(c)
		if len(vs.GetTls()) == 0 {
			continue
		}
		out.deps = append(out.deps, c.Key())
		for i, tr := range vs.GetTls() {
			if len(tr.GetRoute()) == 0 {
				continue
			}
			for _, m := range tr.GetMatch() {
				if !tlsMatchApplies(p, m, port.Number) {
					continue
				}
				if len(m.GetDestinationSubnets()) > 0 && port.Number > 0 {
					subnets = m.GetDestinationSubnets()
				}
				key := strings.Join(m.GetSniHosts(), ",") + "|" + strings.Join(m.GetDestinationSubnets(), ",")
				if handled[key] {
					continue
				}
				handled[key] = true
				filters, rdeps, err := tcpRouteFilters(ix, c, tr.GetRoute(), port)
				out.deps = append(out.deps, rdeps...)
				if err != nil {
					errs = append(errs, fmt.Errorf("VirtualService %s/%s tls[%d] for %s port %d: %w; route skipped, fix the VirtualService", c.Namespace, c.Name, i, svc.Hostname, port.Number, err))
					continue
				}
				chain := &listenerv3.FilterChain{FilterChainMatch: sniChainMatch(m.GetSniHosts(), subnets), Filters: filters}
				if chain.FilterChainMatch == nil {
					out.def = chain
					continue
				}
				out.chains = append(out.chains, chain)
			}
		}
	}
	return out, errors.Join(errs...)
}

// tlsMatchApplies is istiod's matchTLS for a sidecar: the match's gateways (when set) include
// mesh, its source labels are a subset of the proxy's, its port (when set) is the listener's
// and its source namespace (when set) the proxy's.
func tlsMatchApplies(p *model.Proxy, m *networking.TLSMatchAttributes, port uint32) bool {
	if m == nil {
		return true
	}
	return tcpMatchApplies(p, &networking.L4MatchAttributes{
		Gateways:        m.GetGateways(),
		SourceLabels:    m.GetSourceLabels(),
		Port:            m.GetPort(),
		SourceNamespace: m.GetSourceNamespace(),
	}, port)
}

// sniChainMatch is the filter chain match of SNI hosts and destination subnets, as istiod
// builds it: nil (everything) without either (or with SNI "*" and no subnets); else the SNI
// hosts sorted as server_names ("*" among them: none), and the subnets sorted as prefix
// ranges, an IP a /32 or /128, leaving out what is not an IP or CIDR and 0.0.0.0.
func sniChainMatch(sni, subnets []string) *listenerv3.FilterChainMatch {
	anySNI := len(sni) == 0 || slices.Contains(sni, "*")
	if anySNI && len(subnets) == 0 {
		return nil
	}
	m := &listenerv3.FilterChainMatch{}
	if !anySNI {
		m.ServerNames = slices.Sorted(slices.Values(sni))
	}
	for _, s := range slices.Sorted(slices.Values(subnets)) {
		var pfx netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			pfx, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(s)
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if err != nil || pfx.Addr().String() == wildcardIP {
			continue
		}
		m.PrefixRanges = append(m.PrefixRanges, &corev3.CidrRange{AddressPrefix: pfx.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(pfx.Bits()))})
	}
	return m
}

// l4MatchKey names what a chain of an outbound listener matches on as istiod compares two
// chains for a conflict (conflictsWith): transport and application protocols, the set of
// server names, and the set of masked destination prefixes. Of two chains with one key, the
// listener keeps the first.
func l4MatchKey(m *listenerv3.FilterChainMatch) string {
	names := slices.Sorted(slices.Values(m.GetServerNames()))
	names = slices.Compact(names)
	var pfxs []string
	for _, r := range m.GetPrefixRanges() {
		a, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil {
			continue
		}
		p, err := a.Prefix(int(r.GetPrefixLen().GetValue()))
		if err != nil {
			continue
		}
		pfxs = append(pfxs, p.String())
	}
	slices.Sort(pfxs)
	pfxs = slices.Compact(pfxs)
	return m.GetTransportProtocol() + "|" + strings.Join(m.GetApplicationProtocols(), ",") + "|" + strings.Join(names, ",") + "|" + strings.Join(pfxs, ",")
}

// hasServerNames reports whether a chain matches on SNI: its listener needs the TLS inspector.
func hasServerNames(chains ...*listenerv3.FilterChain) bool {
	for _, c := range chains {
		if len(c.GetFilterChainMatch().GetServerNames()) > 0 {
			return true
		}
	}
	return false
}
