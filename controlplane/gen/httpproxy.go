package gen

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// HTTP proxy egress listeners, as istiod builds them (buildSidecarOutboundListeners,
// buildSidecarOutboundHTTPRouteConfig). Two forms of Sidecar egress listener are not built
// per service port but as one HTTP listener for every service they import, all ports:
//   - a port whose protocol is HTTP_PROXY: listener BIND_PORT, where BIND is the egress
//     listener's bind, else the proxy's loopback when the listener binds its port
//     (captureMode NONE, or a proxy in interception mode NONE), else 0.0.0.0 (bind_to_port
//     false: iptables hands it its connections); route configuration "PORT";
//   - port 0 bound to a unix socket (unix:///path or unix://@abstract) with an HTTP protocol
//     (HTTP, HTTP2, GRPC, GRPC-WEB, HTTP_PROXY): listener "unix://…_0" on the pipe, always
//     binding it; route configuration named after the socket, "unix://…".
//
// The listener has one chain without a match: the sidecar's outbound HTTP connection manager
// (the grpc_web filter for GRPC-WEB) fetching the route configuration; there is none when the
// egress listener imports no service. Its route configuration has a virtual host "HOST:PORT"
// per HTTP or sniffed port of every service the egress listener imports: on port 80 all the
// service's domains, on any other port only those with ":PORT" (istiod's
// mergeAllVirtualHosts), each domain in the first virtual host that lists it; a service's
// VirtualService routes are built for port 0 (a match that names a port applies nowhere; a
// destination without a port takes the service's only port when the egress listener imports
// it, else 0), the same on each of its ports, and the hosts of the VirtualService that name no
// service get a virtual host, domain HOST alone, when the first HTTP port of its services is
// 80 (below); then allow_any (or block_all). A sniffed service's route configuration
// "HOST:PORT" on a port an HTTP_PROXY listener holds keeps the virtual hosts of that
// configuration that list HOST:PORT or HOST, with domain "*" when there is one; a proxyless
// gRPC client's "HOST:PORT" there those that name the host (grpcProxyRouteConfig).
//
// The catch-all egress listener adds nothing to the listener (istiod locks it): on a port an
// HTTP_PROXY listener holds without a bind (0.0.0.0_PORT) its HTTP and address-less services
// get no listener, those with a VIP their usual VIP listeners. Not generated (xdslab validate
// warns): a unix socket bind on a port of another protocol, or on the catch-all listener.

// proxyEgress is one egress listener built as an HTTP proxy listener.
type proxyEgress struct {
	// scope is what the egress listener imports (every port of its services).
	scope *model.Scope
	// bind is the listener's address: an IP, or the unix socket (unix://…).
	bind string
	// port is the listener's port, 0 on a unix socket.
	port       uint32
	bindToPort bool
	// route is the name of its route configuration: the port, or the socket.
	route string
	// grpcWeb: the egress port's protocol is GRPC-WEB (its chain has the grpc_web filter).
	grpcWeb bool
	// httpProxy: the egress port's protocol is HTTP_PROXY (else an HTTP unix socket).
	httpProxy bool
	// extra is the listener's additional address on a dual-stack proxy when istiod picked
	// its bind (dualStackExtra).
	extra string
}

// name is the listener's name, istiod's BIND_PORT ("unix:///path_0" on a socket).
func (pe proxyEgress) name() string { return ListenerName(pe.bind, pe.port) }

// isHTTPProxy reports whether the egress listener's port protocol is HTTP_PROXY (compared as
// istiod's protocol.Parse does, ignoring case).
func isHTTPProxy(eg *networking.IstioEgressListener) bool {
	return strings.EqualFold(eg.GetPort().GetProtocol(), "HTTP_PROXY")
}

// httpProxyPort reports whether the egress listener that holds port num has protocol
// HTTP_PROXY: no per-service listener is built from it on that port.
func httpProxyPort(sc *model.Scope, num uint32) bool {
	eg := egressOf(sc, num, true)
	return eg != nil && isHTTPProxy(eg)
}

// proxyEgresses lists the egress listeners of p's Sidecar built as HTTP proxy listeners, in
// the Sidecar's order, less those istiod's CanBindToPort skips: a privileged port an
// unprivileged proxy would bind, and on the wildcard address the virtual listeners' and the
// agent's ports. An egress listener whose port and bind disagree (a unix socket on a port
// number, port 0 without one: validation rejects both) is left out.
func proxyEgresses(p *model.Proxy, sc *model.Scope) []proxyEgress {
	if sc == nil || sc.Sidecar == nil {
		return nil
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	var out []proxyEgress
	for i, eg := range spec.GetEgress() {
		if eg.GetPort() == nil {
			continue
		}
		num := eg.GetPort().GetNumber()
		unix := strings.HasPrefix(eg.GetBind(), model.UnixAddressPrefix)
		if unix != (num == 0) {
			continue
		}
		proto := model.ParseProtocol(eg.GetPort().GetProtocol())
		if !isHTTPProxy(eg) && !(unix && proto.IsHTTP()) {
			continue
		}
		pe := proxyEgress{scope: sc.EgressAt(i), bind: eg.GetBind(), port: num, grpcWeb: proto == model.ProtocolGRPCWeb, httpProxy: isHTTPProxy(eg)}
		// A unix socket listener always binds it: no iptables hands connections to a socket.
		pe.bindToPort = unix || noneInterception(p) || eg.GetCaptureMode() == networking.CaptureMode_NONE
		switch {
		case pe.bind != "":
		case pe.bindToPort:
			pe.bind = proxyLocalhost(p)
			pe.extra = dualStackExtra(p, pe.bind)
		default:
			pe.bind = proxyWildcard(p)
			pe.extra = dualStackExtra(p, pe.bind)
		}
		if pe.bindToPort && p != nil && p.Unprivileged && num > 0 && num < 1024 {
			continue
		}
		if pe.bind == proxyWildcard(p) && (num == VirtualOutboundPort || num == VirtualInboundPort || p != nil && slices.Contains(p.StaticPorts, num)) {
			continue
		}
		pe.route = strconv.FormatUint(uint64(num), 10)
		if unix {
			pe.route = pe.bind
		}
		out = append(out, pe)
	}
	return out
}

// services are the services of visible the egress listener imports, in the order istiod
// iterates them for it (its egress listener's own: an egress listener whose hosts are all
// exact names orders them differently from the whole scope).
func (pe proxyEgress) services(visible []*model.Service) []*model.Service {
	var out []*model.Service
	for _, svc := range visible {
		if pe.scope.SeesService(svc) {
			out = append(out, svc)
		}
	}
	slices.SortStableFunc(out, pe.scope.CompareServices)
	return out
}

// listener is the egress listener's HTTP proxy listener; deps are the Sidecar and the
// services it imports (without one it has none).
func (pe proxyEgress) listener(p *model.Proxy, sidecar istioconfig.Key, svcs []*model.Service) Resource {
	// The service whose DYNAMIC_DNS filter the connection manager carries (withDFP): istiod
	// builds the listener once per service and keeps the last on an HTTP_PROXY port (nothing
	// locks it before the loop ends), the first on a socket (the next return early: an HTTP
	// listener is there already).
	policy := svcs[0]
	if pe.httpProxy {
		policy = svcs[len(svcs)-1]
	}
	name := pe.name()
	addr := socketAddress(pe.bind, pe.port)
	if path, ok := strings.CutPrefix(pe.bind, model.UnixAddressPrefix); ok {
		addr = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}
	}
	l := &listenerv3.Listener{
		Name:             name,
		Address:          addr,
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{hcmFilter(withDFP(withGRPCWeb(sidecarHCM(rdsHCM("outbound_"+name, pe.route)), pe.grpcWeb), policy, p))},
		}},
	}
	if !pe.bindToPort {
		l.BindToPort = wrapperspb.Bool(false)
	}
	withAdditionalAddress(l, pe.extra)
	deps := []istioconfig.Key{sidecar}
	for _, svc := range svcs {
		deps = append(deps, ServiceKey(svc))
	}
	return Resource{Name: name, Message: l, Deps: sortDeps(deps)}
}

// addProxyListeners adds p's HTTP proxy listeners to tcp and records their names in taken
// (so the catch-all egress listener adds nothing to them), before any per-service listener:
// their addresses and ports are their egress listeners' own.
func addProxyListeners(p *model.Proxy, sc *model.Scope, visible []*model.Service, tcp *[]Resource, taken map[string]takenBy, want map[string]struct{}) {
	for _, pe := range proxyEgresses(p, sc) {
		svcs := pe.services(visible)
		if len(svcs) == 0 {
			continue
		}
		taken[pe.name()] = takenBy{svcs[0].Hostname, model.ProtocolHTTP}
		if wanted(want, pe.name()) {
			*tcp = append(*tcp, pe.listener(p, sc.Sidecar.Key(), svcs))
		}
	}
}

// proxyRouteEgress returns the HTTP proxy egress listener whose route configuration is name:
// a port an HTTP_PROXY listener holds, or a unix socket's. ok is false for any other name.
func proxyRouteEgress(sc *model.Scope, name string) (*model.Scope, bool) {
	if sc == nil || sc.Sidecar == nil {
		return nil, false
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	if strings.HasPrefix(name, model.UnixAddressPrefix) {
		for i, eg := range spec.GetEgress() {
			// istiod answers a socket's name from the port-0 listener bound to it, whatever
			// its protocol.
			if eg.GetPort() != nil && eg.GetPort().GetNumber() == 0 && eg.GetBind() == name {
				return sc.EgressAt(i), true
			}
		}
		return nil, false
	}
	num, err := parsePort(name)
	if err != nil || !httpProxyPort(sc, num) {
		return nil, false
	}
	return sc.Egress(num), true
}

// proxyVirtualHosts are the virtual hosts of an HTTP proxy route configuration built from the
// egress listener esc (ix its index), before the catch-all one, with the keys read. grpc
// builds them for a proxyless gRPC client (its routes as serviceRoutes' grpc; istiod keeps the
// port on a VirtualService host's domains for it).
func proxyVirtualHosts(p *model.Proxy, ix *index, esc *model.Scope, grpc bool) ([]*routev3.VirtualHost, []istioconfig.Key, error) {
	svcs := slices.SortedStableFunc(slices.Values(visibleServices(ix.snap, esc)), esc.CompareServices)
	httpPorts := func(svc *model.Service) []model.Port {
		var out []model.Port
		for _, port := range svc.Ports {
			if port.Protocol.IsHTTP() || port.Protocol == model.ProtocolUnknown {
				out = append(out, port)
			}
		}
		return out
	}
	var out []*routev3.VirtualHost
	var deps []istioconfig.Key
	var errs []error
	usedNames := map[string]bool{}
	usedDomains := map[string]bool{}
	add := func(name, port string, domains []string, routes []*routev3.Route) {
		if usedNames[name] {
			return
		}
		usedNames[name] = true
		var kept []string
		for _, d := range domains {
			if usedDomains[d] {
				continue
			}
			usedDomains[d] = true
			// istiod keeps a domain without a port on port 80 alone (mergeAllVirtualHosts).
			if port == "80" || strings.Contains(d, ":") {
				kept = append(kept, d)
			}
		}
		if len(kept) > 0 {
			out = append(out, &routev3.VirtualHost{Name: name, Domains: kept, Routes: routes})
		}
	}
	// The VirtualServices first, as istiod builds their virtual hosts before the services':
	// the hosts that name no service of the listener, on the ports of those that do.
	for _, c := range vsOrder(ix.snap, ix.namespace()) {
		vs := vsSpec(c)
		if vs == nil || len(vs.GetHttp()) == 0 || !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
			continue
		}
		var hosts []string
		var ports []uint32
		for _, raw := range vs.GetHosts() {
			h := strings.ToLower(resolveHost(raw, c.Namespace))
			matched := false
			for _, svc := range svcs {
				if svc.Hostname != h && !(strings.HasPrefix(h, "*") && hostMatches(h, svc.Hostname)) {
					continue
				}
				matched = true
				for _, port := range httpPorts(svc) {
					if !slices.Contains(ports, port.Number) {
						ports = append(ports, port.Number)
					}
				}
			}
			if !matched && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 || len(ports) == 0 {
			continue
		}
		routes, rerrs := hostlessRoutes(p, ix, c, vs, hosts, model.Port{}, grpc, "an HTTP proxy listener")
		errs = append(errs, rerrs...)
		if len(routes) == 0 {
			continue
		}
		deps = append(deps, c.Key())
		// A host that names no service has the one domain HOST on each port (istiod leaves
		// the port out for Envoy's ignore_port_in_host_matching; for a gRPC client HOST:PORT
		// too): the first port's virtual host takes it, and keeps it on port 80 only. istiod
		// takes the ports from a map, in their order but for a random start (so mostly, not
		// always: docs/parity.md); xdslab takes them in order.
		for _, num := range ports {
			port := strconv.FormatUint(uint64(num), 10)
			for _, h := range hosts {
				domains := []string{h}
				if grpc {
					domains = append(domains, h+":"+port)
				}
				add(HostPortName(h, num), port, domains, routes)
			}
		}
	}
	for _, svc := range svcs {
		ports := httpPorts(svc)
		if len(ports) == 0 {
			continue
		}
		deps = append(deps, ServiceKey(svc))
		vsRoutes, vdeps, err := vsServiceRoutes(p, ix, svc, model.Port{}, grpc)
		deps = append(deps, vdeps...)
		if err != nil {
			errs = append(errs, err)
		}
		for _, port := range ports {
			routes := vsRoutes
			if len(routes) == 0 {
				var ddeps []istioconfig.Key
				routes, ddeps = defaultServiceRoutes(ix, svc, port, grpc)
				deps = append(deps, ddeps...)
			}
			name := strconv.FormatUint(uint64(port.Number), 10)
			add(HostPortName(svc.Hostname, port.Number), name, serviceDomains(p, svc, name, func(string) bool { return true }), routes)
		}
	}
	return out, deps, errors.Join(errs...)
}

// proxyRouteConfig is the route configuration name of the HTTP proxy egress listener esc.
func proxyRouteConfig(p *model.Proxy, s *model.Snapshot, sc, esc *model.Scope, name string) (Resource, error) {
	ix := egressIndex(s, sc, esc, p)
	ix.proxyDests = true
	vhs, deps, err := proxyVirtualHosts(p, ix, esc, false)
	fb := fallbackOf(ix.scope)
	vhs = append(vhs, catchAllVirtualHost(fb))
	deps = append(deps, fb.deps()...)
	rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false), VirtualHosts: vhs}
	return Resource{Name: name, Message: rc, Deps: sortDeps(deps)}, err
}

// sniffedProxyRouteConfig is route configuration name (HOST:PORT) of svc's sniffed port on a
// port an HTTP_PROXY egress listener esc holds: the virtual hosts of esc's route
// configuration that list HOST:PORT or HOST (domain "*" when there is one alone), no
// catch-all one, as istiod's getVirtualHostsForSniffedServicePort keeps them.
func sniffedProxyRouteConfig(p *model.Proxy, s *model.Snapshot, sc, esc *model.Scope, name string, svc *model.Service) (Resource, error) {
	ix := egressIndex(s, sc, esc, p)
	ix.proxyDests = true
	vhs, deps, err := proxyVirtualHosts(p, ix, esc, false)
	var kept []*routev3.VirtualHost
	for _, vh := range vhs {
		if slices.Contains(vh.GetDomains(), name) || slices.Contains(vh.GetDomains(), svc.Hostname) {
			kept = append(kept, vh)
		}
	}
	if len(kept) == 1 {
		kept[0].Domains = []string{"*"}
	}
	rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false), VirtualHosts: kept}
	return Resource{Name: name, Message: rc, Deps: sortDeps(append(deps, ServiceKey(svc)))}, err
}

// grpcProxyRouteConfig is a proxyless gRPC client's route configuration name for port of svc
// when an HTTP_PROXY egress listener esc holds the port: istiod's grpcgen builds the HTTP proxy
// virtual hosts of esc for the client and keeps those whose domains name the host (HOST, or
// HOST:PORT, or a wildcard covering it), none when no virtual host does.
func grpcProxyRouteConfig(p *model.Proxy, s *model.Snapshot, sc, esc *model.Scope, name string, svc *model.Service, port model.Port) (Resource, error) {
	ix := egressIndex(s, sc, esc, p)
	ix.proxyDests = true
	vhs, deps, err := proxyVirtualHosts(p, ix, esc, true)
	rc := &routev3.RouteConfiguration{Name: name}
	for _, vh := range vhs {
		if vhNames(vh, svc.Hostname, port.Number) {
			rc.VirtualHosts = append(rc.VirtualHosts, vh)
		}
	}
	return Resource{Name: name, Message: rc, Deps: sortDeps(append(deps, ServiceKey(svc)))}, err
}
