package gen

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	httpinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	originaldstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	mongov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Extension names (Envoy's canonical filter names).
const (
	hcmFilterName           = "envoy.filters.network.http_connection_manager"
	tcpProxyFilterName      = "envoy.filters.network.tcp_proxy"
	mongoProxyFilterName    = "envoy.filters.network.mongo_proxy"
	routerFilterName        = "envoy.filters.http.router"
	originalDstFilterName   = "envoy.filters.listener.original_dst"
	httpInspectorFilterName = "envoy.filters.listener.http_inspector"
)

const wildcardIP = "0.0.0.0"

// ListenerName is Istio's outbound listener name "ADDRESS_PORT".
func ListenerName(addr string, port uint32) string {
	return addr + "_" + strconv.FormatUint(uint64(port), 10)
}

// sidecarListeners is the sidecar LDS generator:
//   - per port with an HTTP/HTTP2/GRPC service, "0.0.0.0_PORT": an HTTP connection manager
//     with RDS over ADS, route configuration "PORT";
//   - per TCP (or TLS, HTTPS, unknown) service port, "VIP_PORT" with a tcp_proxy to the
//     outbound cluster (for a port without a protocol, also a sniffed HTTP chain: sniffed), or "0.0.0.0_PORT" for a service without a VIP when no HTTP service
//     uses the port (the oldest such service wins the port, model.Scope.CompareServices; TLS
//     and HTTPS services without a VIP get a chain each matching their host as SNI, the rest
//     passes through); a headless Kubernetes Service's port, and a NONE ServiceEntry's without
//     addresses whose endpoints a workloadSelector picks, gets "IP_PORT" per endpoint
//     instead (headlessAddresses);
//   - under a Sidecar, a port's listeners come from the egress listener that holds the port,
//     by its protocol (listenerProtocol), then from the catch-all one, which adds nothing to
//     the listeners the first built (outboundSource);
//   - virtualOutbound (0.0.0.0:15001, use_original_dst, the proxy's outbound fallback:
//     PassthroughCluster, BlackHoleCluster under REGISTRY_ONLY, or an egressProxy's cluster;
//     outbound.go) and virtualInbound
//     (0.0.0.0:15006, a filter chain per inbound port, InboundPassthroughCluster otherwise).
//
// On an IPv6-only proxy the wildcard is :: (istiod's actualWildcard): "::_PORT", and the
// virtual listeners on ::.
//
// Outbound listeners do not bind (bind_to_port false): virtualOutbound hands them connections.
func sidecarListeners(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	want := nameSet(names)
	var errs []error
	ports := map[uint32]*portInfo{}
	var tcp []Resource
	taken := map[string]takenBy{} // listener name → the service port that took it
	sc := s.ScopeFor(p)
	// Each port is built from the egress listener of the proxy's Sidecar that holds it, then
	// from the catch-all listener, which adds nothing to the listeners (addresses) the first
	// built, as istiod locks them (outboundSource). Without a Sidecar there is one pass.
	locked := map[string]bool{} // listener names built by an egress listener with a port
	ixs := map[*model.Scope]*index{}
	ixFor := func(lsc *model.Scope) *index {
		if ixs[lsc] == nil {
			ixs[lsc] = egressIndex(s, sc, lsc, p)
		}
		return ixs[lsc]
	}
	// In istiod's service order (oldest first), which decides which service's listener of a
	// shared address and port comes first, and so how the next one merges into it.
	visible := slices.SortedStableFunc(slices.Values(visibleServices(s, sc)), sc.CompareServices)
	boundTCP := map[string]bool{}                   // TCP egress listeners that bind their port (egressbind.go)
	boundTCPSidecar := map[string]istioconfig.Key{} // the Sidecar of each TCP egress listener bound to an address
	wildBound := map[uint32]bool{}                  // ports whose 0.0.0.0_PORT binds its port (egressbind.go)
	wildSidecar := map[uint32]istioconfig.Key{}     // the Sidecar whose 0.0.0.0 bind builds a port's 0.0.0.0_PORT
	boundExtra := map[string]string{}               // bound TCP listeners' additional address (dualStackExtra)
	wildNamed := map[uint32]bool{}                  // ports whose egress listener names the wildcard as its bind
	// HTTP proxy egress listeners first: their listeners are their egress listeners' own
	// (httpproxy.go), and the catch-all listener adds nothing to them.
	addProxyListeners(p, sc, visible, &tcp, taken, want)
	for _, held := range []bool{true, false} {
		for _, sp := range outboundOrder(sc, visible, held) {
			svc, port, lsc := sp.svc, sp.port, sp.lsc
			port.Protocol = listenerProtocol(sc, port, held)
			if port.Protocol == model.ProtocolUDP {
				continue // Envoy proxies no UDP here: istiod builds no listener
			}
			switch b, how := egressBinding(p, sc, port, held); how {
			case skipped:
				continue
			case boundWild:
				// As a service without a VIP on 0.0.0.0_PORT, which binds its port.
				at := *svc
				at.Addresses = nil
				if !held && locked[ListenerName(proxyWildcard(p), port.Number)] {
					continue // built by the egress listener holding the port, with its bind
				}
				if b.bindToPort {
					wildBound[port.Number] = true
				}
				if b.sidecar != (istioconfig.Key{}) {
					wildSidecar[port.Number] = b.sidecar
				}
				errs = append(errs, addOutboundPort(p, ixFor(lsc), lsc, &at, port, ports, taken, locked, held, &tcp, want, wildTLS(svc))...)
				continue
			case bound:
				name := ListenerName(b.bind, port.Number)
				switch {
				case port.Protocol.IsHTTP():
					if err := addBoundHTTPPort(p, ixFor(lsc), b, svc, port, &tcp, taken, locked, want); err != nil {
						errs = append(errs, err)
					}
					continue
				case locked[name]:
					continue // built by the egress listener holding the port
				case port.Protocol == model.ProtocolUnknown:
					replaceBoundHTTP(name, &tcp, taken)
				}
				if _, built := taken[name]; !built && b.extra != "" {
					// The listener this port creates has istiod's loopback of the other
					// family beside it (an HTTP port's gets it in addBoundHTTPPort).
					boundExtra[name] = b.extra
				}
				addBoundTCPPort(b, svc, func(at *model.Service) {
					errs = append(errs, addOutboundPort(p, ixFor(lsc), lsc, at, port, ports, taken, locked, held, &tcp, want, boundTLSChains(svc, port))...)
				}, boundTCP, boundTCPSidecar, port.Number)
				continue
			}
			if egressOf(sc, port.Number, held).GetBind() == proxyWildcard(p) && (held || !locked[ListenerName(proxyWildcard(p), port.Number)]) {
				// An HTTP port there (egressBinding: unbound), on the listener this egress
				// listener builds (the catch-all adds nothing to one a held port built).
				wildNamed[port.Number] = true
			}
			errs = append(errs, addOutboundPort(p, ixFor(lsc), lsc, svc, port, ports, taken, locked, held, &tcp, want, nil)...)
		}
		if !held {
			break
		}
		for num, pi := range ports {
			if pi.wild() {
				locked[ListenerName(proxyWildcard(p), num)] = true
			}
		}
		for name := range taken {
			locked[name] = true
		}
	}
	for i := range tcp {
		if boundTCP[tcp[i].Name] {
			tcp[i].Message.(*listenerv3.Listener).BindToPort = nil
		}
		if extra, ok := boundExtra[tcp[i].Name]; ok {
			withAdditionalAddress(tcp[i].Message.(*listenerv3.Listener), extra)
		}
		if k, ok := boundTCPSidecar[tcp[i].Name]; ok && !slices.Contains(tcp[i].Deps, k) {
			tcp[i].Deps = sortDeps(append(slices.Clone(tcp[i].Deps), k))
		}
	}
	out := tcp
	for num, pi := range ports {
		name := ListenerName(proxyWildcard(p), num)
		if !wanted(want, name) {
			continue
		}
		l := &listenerv3.Listener{
			Name:             name,
			Address:          socketAddress(proxyWildcard(p), num),
			BindToPort:       wrapperspb.Bool(false),
			TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		}
		var deps []istioconfig.Key
		switch {
		case len(pi.http) > 0:
			// HTTP (told by the HTTP inspector) goes to the routes; anything else on the port
			// passes through to where it was going, as istiod does.
			l.ListenerFilters = []*listenerv3.ListenerFilter{httpInspector()}
			l.FilterChains = []*listenerv3.FilterChain{{
				FilterChainMatch: &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer", ApplicationProtocols: plaintextHTTPProtocols},
				Filters:          []*listenerv3.Filter{hcmFilter(withDFP(withGRPCWeb(sidecarHCM(rdsHCM("outbound_"+name, strconv.FormatUint(uint64(num), 10))), pi.grpcWeb), pi.httpFirst, p))},
			}}
			deps = append(pi.http, pi.wildDeps...)
			// The TCP and TLS services without a VIP on the port keep their chains beside the
			// HTTP one, and the TCP service the default chain, as istiod merges them.
			deps = append(deps, wildTCPChains(p, pi, l, num, &errs)...)
		case pi.wildTCP != nil || len(pi.cidrTCP) > 0 || len(pi.tlsHosts) > 0:
			deps = append(pi.wildDeps, wildTCPChains(p, pi, l, num, &errs)...)
		default:
			continue
		}
		if wildBound[num] {
			l.BindToPort = nil
		}
		k, ok := wildSidecar[num]
		if ok {
			deps = append(deps, k)
		}
		if !ok && !wildNamed[num] {
			// istiod's own wildcard (a Sidecar's 0.0.0.0 bind is an address as written).
			withAdditionalAddress(l, dualStackExtra(p, wildcardIP))
		}
		out = append(out, Resource{Name: name, Message: l, Deps: sortDeps(deps)})
	}
	// A proxy in interception mode NONE has no iptables to hand connections to the virtual
	// listeners: istiod builds neither.
	if wanted(want, VirtualOutboundListener) && !noneInterception(p) {
		fb := fallbackOf(s.ScopeFor(p))
		out = append(out, Resource{Name: VirtualOutboundListener, Message: virtualOutbound(p, fb), Deps: fb.deps()})
	}
	vi, bound, deps := inboundListeners(p, s)
	if wanted(want, VirtualInboundListener) && !noneInterception(p) {
		out = append(out, Resource{Name: VirtualInboundListener, Message: vi, Deps: deps})
	}
	for _, l := range bound {
		if !wanted(want, l.Name) {
			continue
		}
		if findResource(out, l.Name) != nil {
			// istiod sends both listeners under one name, which Envoy rejects as a duplicate.
			errs = append(errs, fmt.Errorf("Sidecar ingress listener %s has the name of an outbound listener: left out (istiod sends both, and Envoy rejects the duplicate)", l.Name))
			continue
		}
		out = append(out, Resource{Name: l.Name, Message: l, Deps: deps})
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	// A service's tcp routes are built for its VIP listeners and again for its CIDRs'
	// chains: each of their errors is reported once.
	seen := map[string]bool{}
	errs = slices.DeleteFunc(errs, func(e error) bool {
		dup := seen[e.Error()]
		seen[e.Error()] = true
		return dup
	})
	return out, errors.Join(errs...)
}

// portInfo collects what the services on one port put on its 0.0.0.0_PORT listener.
type portInfo struct {
	http    []istioconfig.Key // deps of the HTTP services on the port
	grpcWeb bool              // one of them is GRPC-WEB there: the grpc_web filter
	wildTCP *model.Service    // the TCP service without any address that owns 0.0.0.0_PORT
	cidrTCP []*model.Service  // TCP services whose addresses are CIDRs: a chain per CIDR, in istiod's service order
	// proto is the protocol wildTCP's and cidrTCP's ports are built with: an egress listener
	// that holds the port gives its own (listenerProtocol), else the service port's.
	proto    map[*model.Service]model.Protocol
	tlsHosts []*model.Service // TLS/HTTPS services without a VIP: an SNI chain each
	wildDeps []istioconfig.Key
	// ix is the index of the egress listener the 0.0.0.0_PORT listener is built from (its
	// VirtualServices route the TCP chains).
	ix *index
	// first is the service whose port joined the listener first (joinWild), with the
	// protocol it is built with.
	first      *model.Service
	firstProto model.Protocol
	// httpFirst is the service the port's HTTP chain is built from, the first with an HTTP
	// chain there (istiod keeps its HTTP connection manager: a dynamic forward proxy's
	// filter, dfp.go, is there when this service is one).
	httpFirst *model.Service
}

// insertService inserts svc into list, kept in the order istiod builds services in (sc's
// CompareServices), after those that compare equal.
func insertService(sc *model.Scope, list []*model.Service, svc *model.Service) []*model.Service {
	i := len(list)
	for i > 0 && sc.CompareServices(list[i-1], svc) > 0 {
		i--
	}
	return slices.Insert(list, i, svc)
}

// joinWild records svc's port as joining the port's 0.0.0.0_PORT listener, in istiod's service
// order, unless istiod's isConflictWithWellKnownPort keeps it out: a MONGO or MYSQL port meets
// only its own protocol there, whichever comes first (the HTTP inspector and sniffing in front
// of a server-first protocol would break it), and the first service's listener stays alone.
func (pi *portInfo) joinWild(svc *model.Service, port model.Port) error {
	if pi.first == nil {
		pi.first, pi.firstProto = svc, port.Protocol
		return nil
	}
	serverFirst := func(p model.Protocol) bool { return p == model.ProtocolMongo || p == model.ProtocolMySQL }
	if port.Protocol == pi.firstProto || !serverFirst(port.Protocol) && !serverFirst(pi.firstProto) {
		return nil
	}
	wk := pi.firstProto
	if serverFirst(port.Protocol) {
		wk = port.Protocol
	}
	return fmt.Errorf("LDS: services %s (%s) and %s (%s) both use %s:%d, and %s shares a listener with its own protocol only; %s keeps it (as istiod), give one of them a VIP or another port",
		pi.first.Hostname, pi.firstProto, svc.Hostname, port.Protocol, wildcardIP, port.Number, wk, pi.first.Hostname)
}

// addHTTP records svc as a service with an HTTP chain on the port's 0.0.0.0_PORT listener.
func (pi *portInfo) addHTTP(svc *model.Service) {
	if len(pi.http) == 0 {
		pi.httpFirst = svc
	}
	pi.http = append(pi.http, ServiceKey(svc))
}

// wild reports whether the port has a 0.0.0.0_PORT listener.
func (pi *portInfo) wild() bool {
	return len(pi.http) > 0 || pi.wildTCP != nil || len(pi.cidrTCP) > 0 || len(pi.tlsHosts) > 0
}

// servicePort is a service's port with the egress listener (scope) it is built from.
type servicePort struct {
	svc  *model.Service
	port model.Port
	lsc  *model.Scope
}

// outboundOrder lists the service ports that outboundSource gives an egress listener, in the
// order istiod builds them: for the catch-all listener (held false) the services in visible's
// order (the proxy's scope, CompareServices), each port in turn; for the egress listeners that
// hold ports, each listener's services in that listener's own order (an egress listener whose
// hosts are all exact names orders them by creation time alone, where the whole scope puts
// services exported by name first), which decides the first of several services on one bound
// listener.
func outboundOrder(sc *model.Scope, visible []*model.Service, held bool) []servicePort {
	var out []servicePort
	for _, svc := range visible {
		for _, port := range svc.Ports {
			if lsc := outboundSource(sc, svc, port.Number, held); lsc != nil {
				out = append(out, servicePort{svc, port, lsc})
			}
		}
	}
	if !held {
		return out
	}
	// Grouped by egress listener (listeners hold different ports, so build different
	// listeners), each group in its listener's order.
	var scopes []*model.Scope
	groups := map[*model.Scope][]servicePort{}
	for _, sp := range out {
		if _, ok := groups[sp.lsc]; !ok {
			scopes = append(scopes, sp.lsc)
		}
		groups[sp.lsc] = append(groups[sp.lsc], sp)
	}
	out = out[:0]
	for _, lsc := range scopes {
		g := groups[lsc]
		slices.SortStableFunc(g, func(a, b servicePort) int { return lsc.CompareServices(a.svc, b.svc) })
		out = append(out, g...)
	}
	return out
}

// outboundSource returns the scope of the egress listener a service port's outbound listeners
// come from in one pass, as istiod builds them: with held, the egress listener that holds the
// port when it imports the service there; else the catch-all listener when it imports the
// service (its listeners then add nothing to those of the first pass, whatever the service).
// nil when that listener does not import it. Without a Sidecar, sc in the second pass.
func outboundSource(sc *model.Scope, svc *model.Service, num uint32, held bool) *model.Scope {
	if held {
		// An HTTP_PROXY egress listener builds one listener for all its services (httpproxy.go).
		if h := sc.Egress(num); sc.HoldsPort(num) && !httpProxyPort(sc, num) && h.SeesPort(svc, num) {
			return h
		}
		return nil
	}
	if c := sc.CatchAll(); c.SeesPort(svc, num) {
		return c
	}
	return nil
}

// listenerProtocol is the protocol a service port's outbound listeners are built by: the
// protocol of the egress listener that holds the port, for the services it imports there
// (byHolder), else the port's own.
func listenerProtocol(sc *model.Scope, port model.Port, byHolder bool) model.Protocol {
	if byHolder {
		if p, ok := sc.EgressProtocol(port.Number); ok {
			return p
		}
	}
	return port.Protocol
}

// addOutboundPort adds what port of svc puts on the outbound listeners: its VIP listeners
// (to tcp), or its part of the port's 0.0.0.0_PORT listener (to ports). lsc is the egress
// listener it comes from, ix that listener's index; a listener name in locked was built by an
// egress listener with a port, and the catch-all listener (held false) adds nothing to it.
// bp is set for a port on a bound listener (egressbind.go), whose address svc has.
func addOutboundPort(p *model.Proxy, ix *index, lsc *model.Scope, svc *model.Service, port model.Port, ports map[uint32]*portInfo, taken map[string]takenBy, locked map[string]bool, held bool, tcp *[]Resource, want map[string]struct{}, bp *boundPort) []error {
	var errs []error
	if (bp == nil || bp.wild) && (port.Number == VirtualOutboundPort || port.Number == VirtualInboundPort) {
		// A bound listener (bp) is on another address than the virtual listeners' wildcard.
		return []error{fmt.Errorf("LDS: service %s port %d collides with the sidecar's %s/%s listener port; the port is not served, pick another port", svc.Hostname, port.Number, VirtualOutboundListener, VirtualInboundListener)}
	}
	wildLocked := !held && locked[ListenerName(proxyWildcard(p), port.Number)]
	pi := ports[port.Number]
	if pi == nil {
		pi = &portInfo{}
		ports[port.Number] = pi
	}
	if port.Protocol.IsHTTP() {
		if !wildLocked {
			if err := pi.joinWild(svc, port); err != nil {
				return []error{err}
			}
			pi.ix = ix
			pi.addHTTP(svc)
			pi.grpcWeb = pi.grpcWeb || port.Protocol == model.ProtocolGRPCWeb
		}
		return nil
	}
	headless := svc.ListenersPerEndpoint() && bp == nil // a bound listener has one address, not one per endpoint
	vips := ipAddresses(svc.Addresses)
	if bp != nil && !bp.wild {
		// A bound listener is on its bind address, also an unspecified one that is not the
		// proxy's wildcard (:: on an IPv4 proxy, 0.0.0.0 on an IPv6-only one): istiod keys it
		// by the bind as written.
		vips = svc.Addresses
	}
	if headless {
		// A listener per endpoint, as for a VIP; none without endpoints, but for a ServiceEntry
		// without a workloadSelector, whose port keeps its 0.0.0.0 listener when no endpoint at
		// all serves it (istiod's fallback for a plain NONE entry).
		vips = headlessAddresses(p, ix.snap, svc, port)
		if len(vips) == 0 {
			if !svc.WildcardWithoutEndpoints() || servesPort(ix.snap, svc, port) {
				return nil
			}
			headless = false
		}
	}
	joinsWild := !wildLocked && (len(vips) == 0 || len(cidrs(svc.Addresses)) > 0)
	if joinsWild {
		if err := pi.joinWild(svc, port); err != nil {
			errs = append(errs, err)
			if len(vips) == 0 {
				return errs
			}
			joinsWild = false // its VIP listeners below, nothing on 0.0.0.0_PORT
		}
	}
	if sniffedWithoutVIP(svc, port) && joinsWild && !headless {
		pi.ix = ix
		pi.addHTTP(svc) // and its TCP chain below
	}
	if len(vips) > 0 && len(cidrs(svc.Addresses)) > 0 && joinsWild {
		// Both: a listener per IP (below), and the CIDRs chains on 0.0.0.0_PORT, as istiod
		// builds a service per address (a TLS port's by SNI within each CIDR, wildTCPChains).
		pi.ix = ix
		if port.Protocol == model.ProtocolTLS || port.Protocol == model.ProtocolHTTPS {
			pi.tlsHosts = append(pi.tlsHosts, svc)
		} else {
			pi.cidrTCP = insertService(lsc, pi.cidrTCP, svc)
			pi.setProto(svc, port.Protocol)
		}
		pi.wildDeps = append(pi.wildDeps, ServiceKey(svc))
	}
	if len(vips) == 0 {
		if wildLocked {
			return nil
		}
		pi.ix = ix
		tls := port.Protocol == model.ProtocolTLS || port.Protocol == model.ProtocolHTTPS
		switch {
		case tls && bp != nil && bp.wild:
			// Bound on the wildcard: by SNI without an address or for a CIDR, matching
			// everything for an IP (the wild TCP service's chain), as istiod reads addresses.
			if bp.tlsSNI {
				pi.tlsHosts = append(pi.tlsHosts, svc)
			}
			if bp.tlsAll && (pi.wildTCP == nil || lsc.CompareServices(svc, pi.wildTCP) < 0) {
				pi.wildTCP = svc
				pi.setProto(svc, port.Protocol)
			}
		case tls:
			pi.tlsHosts = append(pi.tlsHosts, svc)
		case len(cidrs(svc.Addresses)) > 0:
			pi.cidrTCP = insertService(lsc, pi.cidrTCP, svc)
			pi.setProto(svc, port.Protocol)
		case pi.wildTCP == nil || lsc.CompareServices(svc, pi.wildTCP) < 0:
			pi.wildTCP = svc // the first istiod builds it from: the oldest
			pi.setProto(svc, port.Protocol)
		}
		pi.wildDeps = append(pi.wildDeps, ServiceKey(svc))
		return nil
	}
	if !held {
		// The VIP listeners the egress listener holding the port built stay as they are.
		vips = slices.DeleteFunc(slices.Clone(vips), func(vip string) bool { return locked[ListenerName(vip, port.Number)] })
		if len(vips) == 0 {
			return nil
		}
	}
	chains, def, cdeps, err := tcpRouteChains(p, ix, svc, port) // VirtualService tcp routes (tcproute.go)
	if err != nil {
		errs = append(errs, err)
	}
	if sni := bp.sniHost(); sni != "" && def == nil && len(chains) == 1 && chains[0].GetFilterChainMatch() == nil {
		// The service's own chain by SNI (a CIDR address); with an IP address too, the same
		// chain matching everything, else what it does not take passes through.
		all := chains[0]
		filters, adeps := withSNIDFP(p, ix.snap, all.Filters, svc, port.Number)
		cdeps = append(cdeps, adeps...)
		chains = []*listenerv3.FilterChain{{FilterChainMatch: sniChainMatch([]string{sni}, nil), Filters: filters}}
		if bp.alsoAll {
			def = all
		} else {
			fb := fallbackOf(ix.scope)
			def = passthroughChain(fb)
			cdeps = append(cdeps, fb.deps()...)
		}
	}
	for _, vip := range vips {
		name := ListenerName(vip, port.Number)
		if prev, ok := taken[name]; ok {
			switch merge := mergeKind(prev.proto, port.Protocol); merge {
			case mergeTCP, mergeSniffed:
				// As istiod merges two listeners of one address and port (its TCPOverTCP and
				// TCPOverAuto, and AutoOverTCP conflicts): the TCP chains of this service whose
				// matches the listener has no chain for yet join it; a chain left out is a
				// conflict (istiod counts it), reported below. A sniffed service's HTTP chain
				// then joins a TCP listener, which becomes sniffed: its plaintext HTTP goes to
				// this service's route configuration, everything else to the TCP chains.
				if merge == mergeSniffed || prev.proto.IsHTTP() {
					// Sniffed from now on (istiod's listener protocol), also an HTTP one a
					// TCP service's chains join.
					taken[name] = takenBy{prev.host, model.ProtocolUnknown}
				}
				if r := findResource(*tcp, name); r != nil {
					fb := fallbackOf(ix.scope)
					r.Deps = sortDeps(append(append(append(r.Deps, ServiceKey(svc)), cdeps...), fb.deps()...))
					l := r.Message.(*listenerv3.Listener)
					dropped := mergeTCPChains(l, chains, def, fb)
					if merge == mergeSniffed {
						sniffed(l, svc, port.Number)
						if hasServerNames(l.FilterChains...) {
							l.ListenerFilters = append(l.ListenerFilters, tlsInspector())
						}
					}
					if dropped == 0 {
						continue
					}
					if merge == mergeSniffed {
						errs = append(errs, fmt.Errorf("LDS: services %s and %s both use %s:%d; %s's TCP chains keep it, %s adds its sniffed HTTP chain and not its TCP chains", prev.host, svc.Hostname, vip, port.Number, prev.host, svc.Hostname))
						continue
					}
				}
			}
			errs = append(errs, fmt.Errorf("LDS: services %s and %s both use %s:%d; %s keeps it", prev.host, svc.Hostname, vip, port.Number, prev.host))
			continue
		}
		taken[name] = takenBy{svc.Hostname, port.Protocol}
		if !wanted(want, name) {
			continue
		}
		l := &listenerv3.Listener{
			Name:               name,
			Address:            socketAddress(vip, port.Number),
			BindToPort:         wrapperspb.Bool(false),
			TrafficDirection:   corev3.TrafficDirection_OUTBOUND,
			FilterChains:       chains,
			DefaultFilterChain: def,
		}
		if port.Protocol == model.ProtocolUnknown {
			sniffed(l, svc, port.Number)
		}
		if hasServerNames(chains...) {
			l.ListenerFilters = append(l.ListenerFilters, tlsInspector()) // tls routes (tlsroutes.go)
		}
		deps := append([]istioconfig.Key{ServiceKey(svc)}, cdeps...)
		if headless {
			deps = append(deps, EndpointKey(svc))
		}
		*tcp = append(*tcp, Resource{Name: name, Message: l, Deps: sortDeps(deps)})
	}
	return errs
}

// takenBy is the service port an outbound listener of an address was first built for.
type takenBy struct {
	host  string
	proto model.Protocol
}

// listenerMerge is what istiod does with a service port's listener on an address and port
// that an earlier service port's listener already has.
type listenerMerge int

const (
	// keepFirst: the earlier listener stays as it is (an HTTP or sniffed port meeting a
	// sniffed one, or MONGO meeting another protocol).
	keepFirst listenerMerge = iota
	// mergeTCP: the new port's TCP chains join the listener (TCPOverTCP, and TCPOverAuto,
	// where the listener stays sniffed).
	mergeTCP
	// mergeSniffed: a sniffed port meets a TCP listener (AutoOverTCP): its TCP chains join the
	// listener, which becomes sniffed with its HTTP chain.
	mergeSniffed
)

// mergeKind returns what istiod does with the listener of a service port of protocol in on
// the address and port of a listener built for protocol had (had is ProtocolUnknown once a
// listener is sniffed): the TCP chains merge when neither is HTTP, and a sniffed port upgrades
// a TCP listener to sniffed; MONGO and MYSQL only meet their own protocol
// (isConflictWithWellKnownPort; istiod keeps the first listener otherwise).
func mergeKind(had, in model.Protocol) listenerMerge {
	serverFirst := func(p model.Protocol) bool { return p == model.ProtocolMongo || p == model.ProtocolMySQL }
	if had.IsHTTP() && !in.IsHTTP() && in != model.ProtocolUnknown && !serverFirst(in) {
		// Only on a bound listener (egressbind.go), where an HTTP service's listener has a
		// chain without a match (TCPOverHTTP): the TCP chains that match by SNI or destination
		// prefix join it.
		return mergeTCP
	}
	if had.IsHTTP() || in.IsHTTP() {
		return keepFirst
	}
	if had != in && (serverFirst(had) || serverFirst(in)) {
		return keepFirst
	}
	switch {
	case in == model.ProtocolUnknown && had == model.ProtocolUnknown:
		return keepFirst
	case in == model.ProtocolUnknown:
		return mergeSniffed
	}
	return mergeTCP
}

// mergeTCPChains adds to l the chains (chains, then def) whose matches none of l's chains
// has, as istiod's mergeTCPFilterChains does; a passthrough default (tls routes without a
// catch-all) counts as none, as istiod adds it after merging. The chain that matches
// everything is l's default chain when l has other chains; without one, the passthrough
// chain to the proxy's outbound fallback fb is. Returns how many chains it left out.
func mergeTCPChains(l *listenerv3.Listener, chains []*listenerv3.FilterChain, def *listenerv3.FilterChain, fb outboundFallback) (dropped int) {
	isPassthrough := func(c *listenerv3.FilterChain) bool { return c.GetName() == passthroughChain(fb).GetName() }
	all := slices.Clone(l.GetFilterChains())
	if d := l.GetDefaultFilterChain(); d != nil && !isPassthrough(d) {
		all = append(all, d)
	}
	seen := map[string]bool{}
	for _, c := range all {
		seen[l4MatchKey(c.GetFilterChainMatch())] = true
	}
	in := slices.Clone(chains)
	if def != nil && !isPassthrough(def) {
		in = append(in, def)
	}
	for _, c := range in {
		if k := l4MatchKey(c.GetFilterChainMatch()); !seen[k] {
			seen[k] = true
			all = append(all, c)
		} else {
			dropped++
		}
	}
	var catchAll *listenerv3.FilterChain
	var rest []*listenerv3.FilterChain
	for _, c := range all {
		if c.GetFilterChainMatch() == nil || l4MatchKey(c.GetFilterChainMatch()) == l4MatchKey(nil) && c.GetFilterChainMatch().GetDestinationPort() == nil {
			catchAll = c
			continue
		}
		rest = append(rest, c)
	}
	switch {
	case len(rest) == 0 && catchAll == nil:
		l.FilterChains, l.DefaultFilterChain = nil, passthroughChain(fb)
	case len(rest) == 0:
		l.FilterChains, l.DefaultFilterChain = []*listenerv3.FilterChain{catchAll}, nil
	case catchAll != nil:
		l.FilterChains, l.DefaultFilterChain = rest, catchAll
	default:
		l.FilterChains, l.DefaultFilterChain = rest, passthroughChain(fb)
	}
	if hasServerNames(l.FilterChains...) && !slices.ContainsFunc(l.ListenerFilters, func(f *listenerv3.ListenerFilter) bool { return f.GetName() == tlsInspector().GetName() }) {
		l.ListenerFilters = append(l.ListenerFilters, tlsInspector())
	}
	return dropped
}

// findResource is the resource of rs named name, nil if none.
func findResource(rs []Resource, name string) *Resource {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

// headlessAddresses are the addresses of the listeners of a port (not served through HTTP) of a
// service with a listener per endpoint (model.Service.ListenersPerEndpoint: a headless Service,
// a NONE ServiceEntry without addresses), as istiod builds them: one per endpoint that serves
// the port, whose address is an IP and not the proxy's own (its inbound listener takes that
// traffic), in endpoint order.
func headlessAddresses(p *model.Proxy, s *model.Snapshot, svc *model.Service, port model.Port) []string {
	var out []string
	for _, ep := range s.Endpoints(svc.Hostname) {
		if _, ok := ep.ServesPort(port); !ok {
			continue
		}
		ip, err := netip.ParseAddr(ep.Address)
		if err != nil || (p != nil && len(p.IPAddresses) > 0 && ep.Address == p.IPAddresses[0]) {
			continue
		}
		if a := ip.String(); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// servesPort reports whether an endpoint of svc, whatever its address, serves port.
func servesPort(s *model.Snapshot, svc *model.Service, port model.Port) bool {
	return slices.ContainsFunc(s.Endpoints(svc.Hostname), func(ep *model.Endpoint) bool {
		_, ok := ep.ServesPort(port)
		return ok
	})
}

// setProto records the protocol svc's port is built with on the port's 0.0.0.0 listener.
func (pi *portInfo) setProto(svc *model.Service, proto model.Protocol) {
	if pi.proto == nil {
		pi.proto = map[*model.Service]model.Protocol{}
	}
	pi.proto[svc] = proto
}

// portOf is svc's port num with the protocol it is built with (setProto).
func (pi *portInfo) portOf(svc *model.Service, num uint32) model.Port {
	port, _ := svc.Port(num)
	if proto, ok := pi.proto[svc]; ok {
		port.Protocol = proto
	}
	return port
}

// wildTCPChains adds to l, the 0.0.0.0_PORT listener of port num, the chains of the services
// without a VIP there that are not HTTP: one per TLS host, chosen by SNI, one per CIDR,
// and the tcp routes of the TCP service without any address (tcproute.go), whose default chain
// becomes l's; without that service what no chain takes passes through. Returns the
// VirtualServices the chains depend on.
func wildTCPChains(p *model.Proxy, pi *portInfo, l *listenerv3.Listener, num uint32, errs *[]error) []istioconfig.Key {
	ix, wild, cidrTCP, tlsHosts := pi.ix, pi.wildTCP, pi.cidrTCP, pi.tlsHosts
	if len(tlsHosts) > 0 {
		l.ListenerFilters = append([]*listenerv3.ListenerFilter{tlsInspector()}, l.ListenerFilters...)
	}
	var deps []istioconfig.Key
	// A TLS host's chains come from its tls routes (tlsroutes.go), else it is one chain for its
	// own name; a chain that matches what an earlier one does is left out, as istiod merges them.
	// A host whose addresses are CIDRs is, as istiod builds a service per address, one such
	// set of chains per CIDR, each also matching that destination prefix.
	seenTLS := map[string]bool{}
	for _, svc := range tlsHosts {
		perAddress := [][]string{nil}
		if cs := cidrStrings(svc.Addresses); len(cs) > 0 {
			perAddress = perAddress[:0]
			for _, c := range cs {
				perAddress = append(perAddress, []string{c})
			}
		}
		for _, svcCIDRs := range perAddress {
			tr, err := tlsRouteChains(p, ix, svc, pi.portOf(svc, num), svcCIDRs)
			if err != nil {
				*errs = append(*errs, err)
			}
			deps = append(deps, tr.deps...)
			chains := tr.chains
			if len(chains) == 0 {
				// The tcp_proxy carries the service's DestinationRule (idle timeout, maximum
				// connection duration, source-IP hash), as istiod's single-destination one does.
				cluster := ClusterName(Outbound, num, "", svc.Hostname)
				filters, ddeps := singleTCPProxy(ix, cluster, svc.Hostname, "", model.ProtocolTLS)
				filters, adeps := withSNIDFP(p, ix.snap, filters, svc, num)
				deps = append(append(deps, ddeps...), adeps...)
				chains = []*listenerv3.FilterChain{{
					FilterChainMatch: sniChainMatch([]string{svc.Hostname}, svcCIDRs),
					Filters:          filters,
				}}
			}
			for _, c := range chains {
				if k := l4MatchKey(c.GetFilterChainMatch()); !seenTLS[k] {
					seenTLS[k] = true
					l.FilterChains = append(l.FilterChains, c)
				}
			}
		}
	}
	// A set of chains per CIDR, as istiod builds a service per address: the service's tcp
	// routes (tcproute.go), whose catch-all chain (a route without match or destination
	// subnets, else the service's own cluster) matches the CIDR and whose destinationSubnets
	// chains match those subnets alone. A chain whose match an earlier one (of this service or
	// of one before it) already has is skipped, as istiod keeps the first of two chains with
	// one match.
	seen := map[string]bool{}
	for _, svc := range cidrTCP {
		port := pi.portOf(svc, num)
		for i, r := range cidrs(svc.Addresses) {
			chains, def, tdeps, err := tcpRouteChains(p, ix, svc, port)
			deps = append(deps, tdeps...)
			if err != nil && i == 0 { // the same errors for every CIDR
				*errs = append(*errs, err)
			}
			if def != nil {
				chains = append(chains, def)
			}
			for _, c := range chains {
				if c.GetFilterChainMatch() == nil {
					c.FilterChainMatch = &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{r}}
				}
				if k := l4MatchKey(c.GetFilterChainMatch()); !seen[k] {
					seen[k] = true
					l.FilterChains = append(l.FilterChains, c)
				}
			}
		}
	}
	if wild == nil {
		fb := fallbackOf(ix.scope)
		l.DefaultFilterChain = passthroughChain(fb)
		return append(deps, fb.deps()...)
	}
	chains, def, tdeps, err := tcpRouteChains(p, ix, wild, pi.portOf(wild, num))
	deps = append(deps, tdeps...)
	if err != nil {
		*errs = append(*errs, err)
	}
	l.FilterChains = append(l.FilterChains, chains...)
	l.DefaultFilterChain = def
	if n := len(l.FilterChains); def == nil && n > 1 && l.FilterChains[n-1].GetFilterChainMatch() == nil {
		// Beside other chains, the one that matches everything is the default chain, as
		// istiod builds it (tcpRouteChains does the same among its own chains).
		l.FilterChains, l.DefaultFilterChain = l.FilterChains[:n-1], l.FilterChains[n-1]
	}
	return deps
}

// ipAddresses keeps the addresses that are IPs (VIPs may also be CIDRs in a ServiceEntry;
// those get no listener of their own), normalised and de-duplicated.
func ipAddresses(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			// A prefix of a single address (/32, /128) is that address, as istiod reads it.
			if p, perr := netip.ParsePrefix(a); perr == nil && p.IsSingleIP() {
				ip, err = p.Addr(), nil
			}
		}
		if err != nil || ip.IsUnspecified() {
			continue
		}
		if s := ip.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// virtualOutbound is the listener iptables sends outbound connections to: what no listener of
// the connection's original destination port takes goes to the proxy's outbound fallback
// (outbound.go). It listens on the proxy's wildcard (:: for an IPv6-only proxy).
func virtualOutbound(p *model.Proxy, fb outboundFallback) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:             VirtualOutboundListener,
		Address:          socketAddress(proxyWildcard(p), VirtualOutboundPort),
		UseOriginalDst:   wrapperspb.Bool(true),
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		FilterChains: []*listenerv3.FilterChain{
			selfLoopChain(VirtualOutboundListener, VirtualOutboundPort),
			{
				Name:    "virtualOutbound-catchall-tcp",
				Filters: []*listenerv3.Filter{tcpProxyFilter(fb.cluster, fb.cluster)},
			},
		},
	}
}

// sniffed makes a VIP listener of a port without a declared protocol sniff, as istiod does:
// the HTTP inspector tells plaintext HTTP, which goes to the service's own route configuration
// "HOST:PORT" (sniff.go); anything else goes to the cluster over TCP.
func sniffed(l *listenerv3.Listener, svc *model.Service, port uint32) {
	l.ListenerFilters = []*listenerv3.ListenerFilter{httpInspector()}
	// The TCP side (a single tcp_proxy, or the VirtualService's tcp route chains) stays: its
	// catch-all chain becomes the default, and plaintext HTTP goes to the HTTP chain first.
	tcp := l.FilterChains
	if l.DefaultFilterChain == nil && len(tcp) > 0 && tcp[len(tcp)-1].GetFilterChainMatch() == nil {
		l.DefaultFilterChain, tcp = tcp[len(tcp)-1], tcp[:len(tcp)-1]
	}
	l.FilterChains = append([]*listenerv3.FilterChain{{
		FilterChainMatch: &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer", ApplicationProtocols: plaintextHTTPProtocols},
		Filters:          []*listenerv3.Filter{hcmFilter(sidecarHCM(rdsHCM("outbound_"+l.Name, HostPortName(svc.Hostname, port))))},
	}}, tcp...)
}

// selfLoopChain drops connections addressed to the capture port itself (a request to
// 127.0.0.1:15001 would otherwise loop through the sidecar forever), as istiod does.
func selfLoopChain(listener string, port uint32) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             listener + "-blackhole",
		FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(port)},
		Filters:          []*listenerv3.Filter{tcpProxyFilter(BlackHoleCluster, BlackHoleCluster)},
	}
}

// passthroughChain sends what no other chain of an outbound listener takes to the proxy's
// outbound fallback (outbound.go): its original destination under ALLOW_ANY, BlackHoleCluster
// under REGISTRY_ONLY. istiod names the chain PassthroughFilterChain either way.
func passthroughChain(fb outboundFallback) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:    "PassthroughFilterChain",
		Filters: []*listenerv3.Filter{tcpProxyFilter(fb.cluster, fb.cluster)},
	}
}

// plaintextHTTPProtocols are the application protocols the HTTP inspector reports for
// plaintext HTTP/1.1 and HTTP/2.
var plaintextHTTPProtocols = []string{"http/1.1", "h2c"}

func httpInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{
		Name:       httpInspectorFilterName,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&httpinspectorv3.HttpInspector{})},
	}
}

// cidrStrings returns the addresses of addrs that are CIDRs (not a single address) as
// prefixes ("10.77.0.0/16"), each as cidrs reads it.
func cidrStrings(addrs []string) []string {
	var out []string
	for _, r := range cidrs(addrs) {
		out = append(out, r.GetAddressPrefix()+"/"+strconv.FormatUint(uint64(r.GetPrefixLen().GetValue()), 10))
	}
	return out
}

// cidrs are the addresses of a service that are CIDR ranges (a VIP-less ServiceEntry's
// addresses), as filter chain prefix ranges.
func cidrs(addrs []string) []*corev3.CidrRange {
	var out []*corev3.CidrRange
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a)
		if err != nil || p.IsSingleIP() { // a single address is an IP (ipAddresses)
			continue
		}
		out = append(out, &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))})
	}
	return out
}

// sidecarHCM adds istiod's sidecar HTTP defaults to h: WebSocket upgrades allowed, no stream
// idle timeout (long-lived streams stay open), 100-continue answered by the proxy, paths
// normalized before matching.
func sidecarHCM(h *hcmv3.HttpConnectionManager) *hcmv3.HttpConnectionManager {
	h.StreamIdleTimeout = durationpb.New(0)
	h.Proxy_100Continue = true
	h.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	h.NormalizePath = wrapperspb.Bool(true)
	return h
}

// inboundChain is one filter chain shape of virtualInbound: what it matches (transport
// protocol, application protocols), whether it speaks HTTP, whether it terminates mTLS.
type inboundChain struct {
	transport string
	alpn      []string
	http      bool
	mtls      bool
}

// ALPN values a client sidecar offers on mTLS: "istio" (and the telemetry-only
// "istio-peer-exchange") for any traffic, "istio-http/…" and "istio-h2" when it knew the traffic
// was HTTP.
var (
	mtlsHTTPALPNs     = []string{"istio-http/1.0", "istio-http/1.1", "istio-h2"}
	mtlsTCPALPNs      = []string{"istio-peer-exchange", IstioALPN}
	allIstioMTLSALPNs = []string{IstioALPN, "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"}
)

// inboundChains are istiod's inbound filter chains for a port of known protocol (http) or, for
// the catch-all chains, of unknown protocol (auto), by mTLS mode. PERMISSIVE takes mTLS
// (identified by ALPN), plain TLS passed through untouched (TCP only) and plaintext; STRICT
// only mTLS; DISABLE only plaintext.
func inboundChains(mode mtlsMode, http, auto bool) []inboundChain {
	switch {
	case auto && mode == mtlsStrict:
		return []inboundChain{{"tls", mtlsHTTPALPNs, true, true}, {"tls", nil, false, true}}
	case auto && mode == mtlsDisable:
		return []inboundChain{{"raw_buffer", plaintextHTTPProtocols, true, false}, {"raw_buffer", nil, false, false}}
	case auto:
		return []inboundChain{
			{"tls", mtlsHTTPALPNs, true, true}, {"raw_buffer", plaintextHTTPProtocols, true, false},
			{"tls", mtlsTCPALPNs, false, true}, {"raw_buffer", nil, false, false}, {"tls", nil, false, false},
		}
	case mode == mtlsStrict:
		return []inboundChain{{"tls", nil, http, true}}
	case mode == mtlsDisable:
		return []inboundChain{{"raw_buffer", nil, http, false}}
	case http:
		return []inboundChain{{"tls", allIstioMTLSALPNs, true, true}, {"raw_buffer", nil, true, false}}
	}
	return []inboundChain{{"tls", allIstioMTLSALPNs, false, true}, {"tls", nil, false, false}, {"raw_buffer", nil, false, false}}
}

// virtualInbound serves the proxy's own ports as istiod does: a BlackHole chain for
// connections to 15006 itself, then per target port the chains of its mTLS mode (an HCM with an
// inline route to inbound|PORT|| for HTTP ports, a tcp_proxy otherwise), then catch-all chains
// of the workload's mode to InboundPassthroughCluster for ports no service declares (and
// per port-level mTLS port that no service port targets, those chains in that port's mode). The mode
// comes from PeerAuthentication (peerauth.go); with none, PERMISSIVE, Istio's default. mTLS
// chains take the workload certificate: over ADS (xdslab's SDS) when a PeerAuthentication asks
// for it and the proxy's stream authenticated an identity (workloadSecretSource), else from the
// istio-agent (sds-grpc), as istiod names it.
func virtualInbound(p *model.Proxy, s *model.Snapshot) (*listenerv3.Listener, []istioconfig.Key) {
	l, _, deps := inboundListeners(p, s)
	return l, deps
}

// inboundListeners is virtualInbound and the listeners of the Sidecar ingress ports that bind
// their own port (captureMode NONE): BIND_PORT on the port's bind address, with that port's
// chains (as in virtualInbound) and no original_dst filter.
func inboundListeners(p *model.Proxy, s *model.Snapshot) (*listenerv3.Listener, []*listenerv3.Listener, []istioconfig.Key) {
	ports, deps := proxyInboundPorts(p, s)
	l := &listenerv3.Listener{
		Name:             VirtualInboundListener,
		Address:          socketAddress(proxyWildcard(p), VirtualInboundPort),
		TrafficDirection: corev3.TrafficDirection_INBOUND,
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       originalDstFilterName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&originaldstv3.OriginalDst{})},
		}},
		FilterChains: []*listenerv3.FilterChain{selfLoopChain(VirtualInboundListener, VirtualInboundPort)},
	}
	pa := peerAuthFor(p, s)
	if len(pa.deps) > 0 {
		deps = sortDeps(append(deps, pa.deps...))
	}
	src := agentSDSConfigSource
	if len(pa.deps) > 0 {
		src = workloadSecretSource(p)
	}
	td := registryTrustDomain(s) // not a ServiceEntry's subjectAltNames: they may name another
	az := authzFor(p, s)
	if len(az.deps) > 0 {
		deps = sortDeps(append(deps, az.deps...))
	}
	jr := jwtFor(p, s)
	if len(jr.deps) > 0 {
		deps = sortDeps(append(deps, jr.deps...))
	}
	// The jwt_authn and RBAC filters, built once for the proxy's chains.
	httpRBAC := az.customHTTPFilters()
	if f := jr.filter(false); f != nil {
		httpRBAC = append(httpRBAC, f)
	}
	var tcpRBAC = func() []*listenerv3.Filter { return nil }
	if !az.empty() {
		httpRBAC = append(httpRBAC, az.httpFilters()...)
		tcp := az.tcpFilters()
		tcpRBAC = func() []*listenerv3.Filter { return slices.Clone(tcp) }
	}
	withRBAC := func(h *hcmv3.HttpConnectionManager) *hcmv3.HttpConnectionManager {
		if len(httpRBAC) > 0 {
			h.HttpFilters = append(slices.Clone(httpRBAC), h.HttpFilters...)
		}
		return h
	}
	type inspectors struct{ tls, http bool }
	inspect := map[*listenerv3.Listener]*inspectors{l: {}}
	var bound []*listenerv3.Listener
	to := l // the listener add appends to
	add := func(name string, port uint32, c inboundChain, filters func() []*listenerv3.Filter) {
		fc := &listenerv3.FilterChain{
			Name:             name,
			FilterChainMatch: &listenerv3.FilterChainMatch{TransportProtocol: c.transport, ApplicationProtocols: c.alpn},
			Filters:          filters(),
		}
		if fc.Filters[0].GetName() != hcmFilterName && !az.empty() {
			fc.Filters = append(tcpRBAC(), fc.Filters...)
		}
		if port != 0 {
			fc.FilterChainMatch.DestinationPort = wrapperspb.UInt32(port)
		}
		if c.mtls {
			fc.TransportSocket = inboundMTLSSocket(src, td)
		}
		in := inspect[to]
		in.tls = in.tls || c.transport == "tls"
		in.http = in.http || slices.Equal(c.alpn, plaintextHTTPProtocols)
		to.FilterChains = append(to.FilterChains, fc)
	}
	for _, ip := range ports {
		to = l
		if ip.bindToPort {
			to = &listenerv3.Listener{
				Name:             ListenerName(ip.bind, ip.target),
				Address:          socketAddress(ip.bind, ip.target),
				TrafficDirection: corev3.TrafficDirection_INBOUND,
			}
			inspect[to] = &inspectors{}
			bound = append(bound, to)
		}
		cluster := ClusterName(Inbound, ip.target, "", "")
		http := ip.protocol.IsHTTP()
		// A port without a protocol is sniffed: the HTTP chains and the TCP chains of its mode,
		// as istiod builds them (the catch-all chains' shapes).
		sniff := ip.protocol == model.ProtocolUnknown
		for _, c := range inboundChains(pa.port(ip.target), http, sniff) {
			add(cluster, ip.target, c, func() []*listenerv3.Filter {
				if http || sniff && c.http {
					return []*listenerv3.Filter{hcmFilter(withRBAC(withGRPCWeb(inboundHCM(ip.target, cluster, ip.protocol), ip.protocol == model.ProtocolGRPCWeb)))}
				}
				return tcpStack(ip.protocol, cluster, tcpProxyFilter(cluster, cluster))
			})
		}
	}
	// The catch-all chains of the workload's mode, then, as istiod does, the same chains with a
	// destination port for each port-level mTLS port that no inbound service port targets, in
	// that port's mode (else such a port would fall to the workload's mode).
	to = l
	passthrough := []uint32{0}
	for _, n := range slices.Sorted(maps.Keys(pa.ports)) {
		if n != 0 && !slices.ContainsFunc(ports, func(ip inboundPort) bool { return ip.target == n }) {
			passthrough = append(passthrough, n)
		}
	}
	for _, n := range passthrough {
		mode := pa.mode
		if n != 0 {
			mode = pa.ports[n]
		}
		for _, c := range inboundChains(mode, false, true) {
			add("virtualInbound-catchall", n, c, func() []*listenerv3.Filter {
				if c.http {
					return []*listenerv3.Filter{hcmFilter(withRBAC(inboundHCM(0, InboundPassthroughCluster, model.ProtocolUnknown)))}
				}
				return []*listenerv3.Filter{tcpProxyFilter(InboundPassthroughCluster, InboundPassthroughCluster)}
			})
		}
	}
	for _, ll := range append([]*listenerv3.Listener{l}, bound...) {
		if inspect[ll].tls {
			ll.ListenerFilters = append(ll.ListenerFilters, tlsInspector())
		}
		if inspect[ll].http {
			ll.ListenerFilters = append(ll.ListenerFilters, httpInspector())
		}
	}
	return l, bound, deps
}

// DefaultTrustDomain is the SPIFFE trust domain assumed when no service account says otherwise.
const DefaultTrustDomain = "cluster.local"

// meshTrustDomain is the trust domain of the mesh's SPIFFE ids: that of the first service
// account in s that is a SPIFFE id (the registry builds them all with the configured trust
// domain), else DefaultTrustDomain.
func meshTrustDomain(s *model.Snapshot) string {
	for _, svc := range s.Services() {
		for _, sa := range svc.ServiceAccounts {
			if td, ok := model.TrustDomainOf(sa); ok {
				return td
			}
		}
	}
	return DefaultTrustDomain
}

// tcpStack is the network filters of a port of protocol p around its tcp_proxy tcp, whose
// stat prefix is statPrefix, as istiod builds them: a MONGO port's mongo_proxy comes first
// (it only decodes the traffic for statistics, kept under the same prefix).
func tcpStack(p model.Protocol, statPrefix string, tcp *listenerv3.Filter) []*listenerv3.Filter {
	if p != model.ProtocolMongo {
		return []*listenerv3.Filter{tcp}
	}
	return []*listenerv3.Filter{{
		Name:       mongoProxyFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(&mongov3.MongoProxy{StatPrefix: statPrefix})},
	}, tcp}
}

func tcpProxyFilter(statPrefix, cluster string) *listenerv3.Filter {
	return &listenerv3.Filter{
		Name: tcpProxyFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(&tcpproxyv3.TcpProxy{
			StatPrefix:       statPrefix,
			ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster},
		})},
	}
}

func hcmFilter(h *hcmv3.HttpConnectionManager) *listenerv3.Filter {
	return &listenerv3.Filter{Name: hcmFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(h)}}
}

func routerFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: routerFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&routerv3.Router{})}}
}

// rdsHCM is an HTTP connection manager that fetches route configuration routeName over ADS.
func rdsHCM(statPrefix, routeName string) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: statPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsWaitingSource(),
			RouteConfigName: routeName,
		}},
		HttpFilters: httpFilters(),
	}
}

// inboundHCM is the connection manager of an inbound HTTP chain to cluster for a port of
// protocol proto (ProtocolUnknown for a sniffed port and the catch-all chains).
func inboundHCM(port uint32, cluster string, proto model.Protocol) *hcmv3.HttpConnectionManager {
	name := "inbound|http|" + strconv.FormatUint(uint64(port), 10)
	h := &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: "inbound_" + ListenerName(wildcardIP, port),
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: cluster,
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    name,
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
						Timeout:          durationpb.New(0),
						// gRPC clients' grpc-timeout header is honoured, uncapped.
						MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{
							MaxStreamDuration: durationpb.New(0), GrpcTimeoutHeaderMax: durationpb.New(0),
						},
					}},
				}},
			}},
		}},
		HttpFilters: httpFilters(),
		// The peer's identity reaches the application in x-forwarded-client-cert.
		ForwardClientCertDetails:    hcmv3.HttpConnectionManager_APPEND_FORWARD,
		SetCurrentClientCertDetails: &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{Subject: wrapperspb.Bool(true), Dns: true, Uri: true},
	}
	if proto.IsHTTP2() {
		h.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{}
	}
	if proto != model.ProtocolGRPC && proto != model.ProtocolGRPCWeb {
		// A request that reset before any byte went upstream is retried (a workload
		// restarting), HTTP/2 included; not gRPC, whose streams do not replay well (as istiod).
		h.GetRouteConfig().VirtualHosts[0].Routes[0].GetRoute().RetryPolicy = &routev3.RetryPolicy{
			RetryOn: "reset-before-request", NumRetries: wrapperspb.UInt32(2),
		}
	}
	return sidecarHCM(h)
}

// grpcListeners is the proxyless gRPC LDS generator: an API listener per requested name
// "HOST:PORT" that names a service port the proxy sees (grpcServicePort: a host name, or a short
// name of the proxy's namespace), every such port on a wildcard request, whose HTTP connection
// manager fetches route configuration "FQDN:PORT" over ADS. Names that match no service port
// are omitted. Names that start with GRPCServerListenerPrefix ask for a gRPC server's listener
// (grpcServerListeners); a wildcard request lists none of those.
func grpcListeners(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	sc := s.ScopeFor(p)
	var out []Resource
	if !wantAll(names) {
		var server []string
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool {
			if strings.HasPrefix(n, GRPCServerListenerPrefix) {
				server = append(server, n)
				return true
			}
			return false
		})
		out = grpcServerListeners(p, s, server)
		if len(names) == 0 {
			return sortedResources(out), nil
		}
	}
	add := func(name string, svc *model.Service, port uint32) {
		out = append(out, Resource{
			Name: name,
			Message: &listenerv3.Listener{
				Name:        name,
				ApiListener: &listenerv3.ApiListener{ApiListener: toAny(grpcHCM(HostPortName(svc.Hostname, port)))},
			},
			Deps: sortDeps([]istioconfig.Key{ServiceKey(svc)}),
		})
	}
	if wantAll(names) {
		for _, svc := range visibleServices(s, sc) {
			for _, port := range svc.Ports {
				if sc.SeesPort(svc, port.Number) {
					add(HostPortName(svc.Hostname, port.Number), svc, port.Number)
				}
			}
		}
		return out, nil
	}
	for _, name := range uniqueSorted(names) {
		if svc, port, ok := grpcServicePort(p, s, sc, name); ok {
			add(name, svc, port.Number)
		}
	}
	return sortedResources(out), nil
}

// sortedResources sorts rs by name.
func sortedResources(rs []Resource) []Resource {
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return rs
}

// grpcServicePort finds the service port a proxyless gRPC listener or route configuration name
// "HOST:PORT" refers to among those sc sees, as istiod's grpcgen reads a listener name: HOST is
// a service's host name or, for a service of the proxy's namespace NS, "NAME", "NAME.NS" or
// "NAME.NS.svc" (a client dialling xds:///NAME.NS:PORT asks for that listener). Ports a Sidecar
// does not import are not found; as in istiod, every other port is, of any protocol and
// resolution (grpcRoutes gives a port that is not HTTP no virtual host).
func grpcServicePort(p *model.Proxy, s *model.Snapshot, sc *model.Scope, name string) (*model.Service, model.Port, bool) {
	host, num, err := ParseHostPort(name)
	if err != nil {
		return nil, model.Port{}, false
	}
	svc := s.Service(host)
	if svc == nil && p != nil && p.Namespace != "" {
		short := host
		for _, suffix := range []string{"." + p.Namespace + ".svc", "." + p.Namespace} {
			if t, ok := strings.CutSuffix(host, suffix); ok {
				short = t
				break
			}
		}
		if !strings.Contains(short, ".") {
			svc = s.Service(short + "." + p.Namespace + ".svc.cluster.local")
		}
	}
	if svc == nil || !sc.SeesPort(svc, num) {
		return nil, model.Port{}, false
	}
	port, ok := svc.Port(num)
	return svc, port, ok
}

func uniqueSorted(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
