package gen

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// DefaultRetryOn is Istio's default retry_on for sidecar routes.
const DefaultRetryOn = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"

// httpServicesByPort groups the services with an HTTP/HTTP2/GRPC port by port number, and
// those with a port without a protocol (sniffed, with an address or without): on each port,
// those the egress listener that holds the port imports there (Scope.Egress), as istiod builds
// a route configuration from that listener alone. A port whose 0.0.0.0_PORT listener is HTTP
// by its egress listener's protocol (listenerProtocol) has an entry even without such a
// service; one whose egress listener's protocol is neither HTTP nor sniffed has none.
//
// A sniffed port with an address has a listener of its own (VIP_PORT, whose HTTP chain names
// the route configuration "HOST:PORT"), so it alone does not make a 0.0.0.0_PORT listener ask
// for "PORT": listened reports the ports some service does (an HTTP port, or a sniffed one
// without an address) or whose egress listener holds them. Where "PORT" is asked for, istiod
// gives every HTTP or sniffed service of the port a virtual host, those with an address too.
func httpServicesByPort(s *model.Snapshot, sc *model.Scope) (out map[uint32][]*model.Service, listened map[uint32]bool) {
	out = map[uint32][]*model.Service{}
	listened = map[uint32]bool{}
	for _, svc := range visibleServices(s, sc) {
		for _, port := range svc.Ports {
			// The virtual listeners' ports too: no REDIRECT proxy's listener asks for their
			// route configuration, a proxy in interception mode NONE's does (egressbind.go).
			if !sc.Egress(port.Number).SeesPort(svc, port.Number) {
				continue
			}
			held, isHeld := sc.EgressProtocol(port.Number)
			if isHeld && !held.IsHTTP() && held != model.ProtocolUnknown {
				// A TCP (or TLS) egress listener asks for no route configuration, but the
				// catch-all listener's HTTP services on the port still make 0.0.0.0_PORT ask
				// for "PORT" (unless the holder's listener took that address): istiod answers it
				// from the egress listener that holds the port, whatever its protocol, with a
				// virtual host for each service it imports whose own port is HTTP or sniffed.
				if port.Protocol.IsHTTP() || port.Protocol == model.ProtocolUnknown {
					out[port.Number] = append(out[port.Number], svc)
				}
				continue
			}
			if port.Protocol.IsHTTP() || sniffedWithoutVIP(svc, port) {
				out[port.Number] = append(out[port.Number], svc)
				listened[port.Number] = true
				continue
			}
			if port.Protocol == model.ProtocolUnknown {
				out[port.Number] = append(out[port.Number], svc) // sniffed, with an address
			}
			if isHeld && (held.IsHTTP() || len(svc.Addresses) == 0) {
				if _, ok := out[port.Number]; !ok {
					out[port.Number] = nil // the listener's route configuration, without a virtual host of svc
				}
				listened[port.Number] = true
			}
		}
	}
	// A port held by a TCP (or TLS) egress listener is asked for when the catch-all listener
	// imports an HTTP service on it (its 0.0.0.0_PORT listener).
	for _, svc := range visibleServices(s, sc) {
		for _, port := range svc.Ports {
			if held, ok := sc.EgressProtocol(port.Number); ok && !held.IsHTTP() && held != model.ProtocolUnknown &&
				port.Protocol.IsHTTP() && sc.CatchAll().SeesPort(svc, port.Number) {
				listened[port.Number] = true
			}
		}
	}
	return out, listened
}

// withEveryName answers every route configuration a proxy asks for by name, as istiod does: a
// name the generator does not give (an Envoy still asks for the routes of a listener that
// drains) gets an empty configuration.
func withEveryName(next GeneratorFunc) GeneratorFunc {
	return func(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
		out, err := next(p, s, names)
		if wantAll(names) {
			return out, err
		}
		have := make(map[string]bool, len(out))
		for _, r := range out {
			have[r.Name] = true
		}
		n := len(out)
		for _, name := range uniqueSorted(names) {
			if !have[name] {
				out = append(out, Resource{Name: name, Message: &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false)}})
			}
		}
		if len(out) > n {
			slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
		}
		return out, err
	}
}

// sidecarRoutes is the sidecar RDS generator: a route configuration "PORT" per port with HTTP
// services (the names 0.0.0.0_PORT listeners ask for), a virtual host "HOST:PORT" per service,
// and a last catch-all virtual host: "allow_any" to PassthroughCluster, or "block_all" under a
// Sidecar's REGISTRY_ONLY (catchAllVirtualHost).
func sidecarRoutes(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	sc := s.ScopeFor(p)
	byPort, listened := httpServicesByPort(s, sc)
	var ports []uint32
	if wantAll(names) {
		for num := range listened {
			ports = append(ports, num)
		}
	} else {
		// Every port asked for, with HTTP services or not (an Envoy still asks for the routes of
		// a listener that drains): istiod answers a port number with its VirtualService-only
		// virtual hosts and allow_any.
		for _, n := range uniqueSorted(names) {
			if num, err := parsePort(n); err == nil {
				ports = append(ports, num)
			}
		}
	}
	slices.Sort(ports)
	ixs := map[*model.Scope]*index{} // one per egress listener: its VirtualServices
	var errs []error
	out := make([]Resource, 0, len(ports))
	// The route configurations of HTTP proxy egress listeners (httpproxy.go): a unix socket's,
	// and below an HTTP_PROXY port's.
	var sockets []string
	if wantAll(names) {
		for _, pe := range proxyEgresses(p, sc) {
			if pe.port == 0 {
				sockets = append(sockets, pe.route)
			} else if !slices.Contains(ports, pe.port) {
				ports = append(ports, pe.port)
			}
		}
		slices.Sort(ports)
	} else {
		for _, n := range uniqueSorted(names) {
			if strings.HasPrefix(n, model.UnixAddressPrefix) {
				sockets = append(sockets, n)
			}
		}
	}
	for _, name := range sockets {
		if esc, ok := proxyRouteEgress(sc, name); ok {
			r, err := proxyRouteConfig(p, s, sc, esc, name)
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, r)
		}
	}
	for _, num := range ports {
		if esc, ok := proxyRouteEgress(sc, strconv.FormatUint(uint64(num), 10)); ok {
			r, err := proxyRouteConfig(p, s, sc, esc, strconv.FormatUint(uint64(num), 10))
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, r)
			continue
		}
		esc := sc.Egress(num)
		ix := ixs[esc]
		if ix == nil {
			ix = egressIndex(s, sc, esc, p)
			ix.listenerPortDests = true
			ixs[esc] = ix
		}
		r, err := sidecarRouteConfig(p, ix, num, byPort[num])
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

func sidecarRouteConfig(p *model.Proxy, ix *index, num uint32, svcs []*model.Service) (Resource, error) {
	name := strconv.FormatUint(uint64(num), 10)
	rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false)}
	var deps []istioconfig.Key
	var errs []error
	usedDomains := map[string]bool{}
	for _, svc := range svcs {
		port, _ := svc.Port(num)
		domains := serviceDomains(p, svc, name, func(d string) bool {
			if usedDomains[d] {
				return false
			}
			usedDomains[d] = true
			return true
		})
		if len(domains) == 0 {
			continue // every name already served by an earlier service (e.g. a shared VIP only)
		}
		routes, rdeps, err := serviceRoutes(p, ix, svc, port, false)
		if err != nil {
			errs = append(errs, err)
		}
		deps = append(deps, ServiceKey(svc))
		deps = append(deps, rdeps...)
		rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{
			Name:    HostPortName(svc.Hostname, num),
			Domains: domains,
			Routes:  routes,
		})
	}
	vhs, vdeps, verr := vsOnlyVirtualHosts(p, ix, num, usedDomains, false)
	rc.VirtualHosts = append(rc.VirtualHosts, vhs...)
	deps = append(deps, vdeps...)
	if verr != nil {
		errs = append(errs, verr)
	}
	fb := fallbackOf(ix.scope)
	rc.VirtualHosts = append(rc.VirtualHosts, catchAllVirtualHost(fb))
	deps = append(deps, fb.deps()...)
	return Resource{Name: name, Message: rc, Deps: sortDeps(deps)}, errors.Join(errs...)
}

// serviceDomains lists the domains of svc's virtual host on port (a port number): each of its
// names (the short names the proxy's namespace allows) with and without ":port", with "*." for
// a headless service's, its IP addresses with and without ":port", and its CIDR domains
// (cidrdomains.go), as istiod's generateVirtualHostDomains lists them. keep says whether a
// domain goes in (and marks it taken): an earlier virtual host of the route configuration may
// already have it.
func serviceDomains(p *model.Proxy, svc *model.Service, port string, keep func(string) bool) []string {
	var domains []string
	addDomain := func(d string) {
		if keep(d) {
			domains = append(domains, d)
		}
	}
	names := []string{svc.Hostname}
	if p != nil && p.Namespace != "" {
		// istiod expands names by the proxy's DNS domain (NS.svc.cluster.local); a proxy
		// of no namespace has a domain without ".svc." and a Kubernetes name no short one.
		names = svc.ShortNames(p.Namespace)
	}
	for _, n := range names {
		addDomain(n)
		addDomain(n + ":" + port)
	}
	if svc.Headless() {
		// Each endpoint's own name (a StatefulSet's POD.NAME.NS…) goes to the service's
		// routes too, as istiod adds "*." to each of its names.
		for _, d := range slices.Clone(domains) {
			addDomain("*." + d)
		}
	}
	for _, vip := range ipAddresses(svc.Addresses) {
		addDomain(vip)
		addDomain(vip + ":" + port)
	}
	for _, d := range cidrDomains(svc, port) { // cidrdomains.go
		addDomain(d)
	}
	return domains
}

// catchAllVirtualHost is the last virtual host of a sidecar's route configuration, for
// requests to hosts no other virtual host names, as istiod's buildCatchAllVirtualHost builds
// it: under ALLOW_ANY "allow_any" to the fallback cluster (PassthroughCluster or the egress
// proxy's) without timeouts, under REGISTRY_ONLY "block_all", which answers 502 itself.
func catchAllVirtualHost(fb outboundFallback) *routev3.VirtualHost {
	match := &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
	if fb.blockAll {
		return &routev3.VirtualHost{
			Name:    BlockAllVirtualHost,
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Name:   BlockAllVirtualHost,
				Match:  match,
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 502}},
			}},
		}
	}
	return &routev3.VirtualHost{
		Name:    AllowAnyVirtualHost,
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Name:  AllowAnyVirtualHost,
			Match: match,
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: fb.cluster},
				Timeout:          durationpb.New(0),
				MaxGrpcTimeout:   durationpb.New(0), //nolint:staticcheck // istiod's buildCatchAllVirtualHost sets it
			}},
		}},
	}
}

// vsOnlyVirtualHosts are the virtual hosts of port num for VirtualService hosts that name no
// service the proxy sees (an alias such as www.example.com, or a wildcard that matches none),
// as istiod builds them (buildSidecarVirtualHostsForVirtualService): on port num when a service
// the same VirtualService names has num as an HTTP (or sniffed) port, and always on port 80,
// also when a service it names has port 80 with another protocol (TCP, TLS): istiod's route
// configuration of a port holds each service with that one port, a VS whose services have no
// HTTP port there falls back to port 80, as for a VS naming no service; with the
// VirtualService's routes for that port (a destination without a port goes to it). A name
// already served on the port is skipped (the first virtual host of a name wins); a virtual
// host whose routes all are for other sources or ports is left out. grpc builds the routes as
// for a proxyless gRPC client (serviceRoutes' grpc).
func vsOnlyVirtualHosts(p *model.Proxy, ix *index, num uint32, usedDomains map[string]bool, grpc bool) ([]*routev3.VirtualHost, []istioconfig.Key, error) {
	var out []*routev3.VirtualHost
	var deps []istioconfig.Key
	var errs []error
	name := strconv.FormatUint(uint64(num), 10)
	for _, c := range vsOrder(ix.snap, ix.namespace()) {
		vs := vsSpec(c)
		if vs == nil || len(vs.GetHttp()) == 0 || !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
			continue
		}
		var hosts []string
		onPort := num == 80
		for _, raw := range vs.GetHosts() {
			h := strings.ToLower(resolveHost(raw, c.Namespace))
			matched := false
			for _, svc := range ix.matchingServices(h, num) {
				matched = true
				if port, _ := svc.Port(num); port.Protocol.IsHTTP() || port.Protocol == model.ProtocolUnknown {
					onPort = true
				}
			}
			if !matched && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 || !onPort {
			continue
		}
		routes, rerrs := hostlessRoutes(p, ix, c, vs, hosts, model.Port{Number: num}, grpc, fmt.Sprintf("port %d", num))
		errs = append(errs, rerrs...)
		if len(routes) == 0 {
			continue
		}
		deps = append(deps, c.Key())
		for _, h := range hosts {
			if usedDomains[h] {
				continue
			}
			usedDomains[h], usedDomains[h+":"+name] = true, true
			out = append(out, &routev3.VirtualHost{Name: HostPortName(h, num), Domains: []string{h, h + ":" + name}, Routes: routes})
		}
	}
	return out, deps, errors.Join(errs...)
}

// matchingServices returns the services with port num the proxy sees there whose host name h
// (a VirtualService host, maybe a wildcard) names: the one service of that name, or every
// service a wildcard matches. Only they count on that port's route configuration, as istiod
// builds it (services without the port are not in its registry there).
func (ix *index) matchingServices(h string, num uint32) []*model.Service {
	has := func(svc *model.Service) bool {
		_, ok := svc.Port(num)
		return ok && ix.scope.SeesPort(svc, num)
	}
	if !strings.HasPrefix(h, "*") {
		if svc := visibleService(ix.snap, ix.scope, h); svc != nil && has(svc) {
			return []*model.Service{svc}
		}
		return nil
	}
	var out []*model.Service
	for _, svc := range visibleServices(ix.snap, ix.scope) {
		if (hostMatches(h, svc.Hostname) || svc.Hostname == h) && has(svc) {
			out = append(out, svc)
		}
	}
	return out
}

// grpcRoutes is the proxyless gRPC RDS generator: route configuration "HOST:PORT" with the
// virtual hosts the sidecar's route configuration of the port has for the host (istiod's
// grpcgen filters that configuration down to them): the service's own (domains HOST:PORT, HOST
// and the short names) for an HTTP or sniffed service of the port's egress listener; else the
// VirtualService-only virtual hosts of VirtualServices that listener imports whose host names
// the service or, a wildcard, covers it (domains HOST and HOST:PORT, or the wildcard's); none
// elsewhere.
func grpcRoutes(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	sc := s.ScopeFor(p)
	// As a sidecar's route configuration of the port (istiod builds gRPC routes with the
	// sidecar's builder): the egress listener that holds the port scopes it, and a destination
	// without a port takes the port's.
	ixs := map[*model.Scope]*index{}
	indexFor := func(num uint32) *index {
		esc := sc.Egress(num)
		ix := ixs[esc]
		if ix == nil {
			ix = egressIndex(s, sc, esc, p)
			ix.listenerPortDests = true
			ixs[esc] = ix
		}
		return ix
	}
	var errs []error
	var out []Resource
	// The virtual hosts the sidecar's route configuration of the port has for svc, as
	// istiod's grpcgen builds that configuration and keeps the host's virtual hosts: (nil,
	// true) when svc is an HTTP (or sniffed) service of the port's egress listener
	// (httpServicesByPort's test, for this one service), whose own virtual host it is;
	// otherwise the port's VirtualService-only virtual hosts (computed once per port, only
	// when needed) with a domain that names the host (HOST or HOST:PORT) or a wildcard that
	// covers it: a VirtualService naming a service the listener does not hold, which the
	// client reaches through that VirtualService's own virtual host.
	vsHosts := map[uint32][]*routev3.VirtualHost{}
	vsDeps := map[uint32][]istioconfig.Key{}
	virtualHosts := func(svc *model.Service, port model.Port) ([]*routev3.VirtualHost, bool) {
		num := port.Number
		// Unlike a sidecar's listeners, grpcgen builds the virtual hosts without looking at
		// the protocol the egress listener declares for the port: the service port's own
		// protocol decides.
		if sc.Egress(num).SeesPort(svc, num) && (port.Protocol.IsHTTP() || port.Protocol == model.ProtocolUnknown) {
			return nil, true
		}
		vhs, ok := vsHosts[num]
		if !ok {
			vhs, vsDeps[num], _ = vsOnlyVirtualHosts(p, indexFor(num), num, map[string]bool{}, true) // errors are serviceRoutes' to report
			vsHosts[num] = vhs
		}
		var out []*routev3.VirtualHost
		for _, vh := range vhs {
			if vhNames(vh, svc.Hostname, num) {
				out = append(out, vh)
			}
		}
		return out, len(out) > 0
	}
	add := func(name string, svc *model.Service, port model.Port) {
		if httpProxyPort(sc, port.Number) {
			// An HTTP_PROXY egress listener holds the port (httpproxy.go).
			r, err := grpcProxyRouteConfig(p, s, sc, sc.Egress(port.Number), name, svc, port)
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, r)
			return
		}
		vhs, ok := virtualHosts(svc, port)
		if !ok {
			// Not an HTTP (or sniffed) port of svc for this proxy: istiod's route builder gives
			// it no virtual host, and RPCs to it fail.
			out = append(out, Resource{Name: name, Message: &routev3.RouteConfiguration{Name: name}, Deps: []istioconfig.Key{ServiceKey(svc)}})
			return
		}
		if len(vhs) > 0 {
			// The VirtualServices' virtual hosts, as on the sidecar's route configuration of
			// the port (domains HOST and HOST:PORT, or the wildcard's). Dependencies: the
			// port's VirtualServices of such hosts and what the service's routes would read.
			_, rdeps, err := serviceRoutes(p, indexFor(port.Number), svc, port, true)
			if err != nil {
				errs = append(errs, err)
			}
			deps := append(append(rdeps, vsDeps[port.Number]...), ServiceKey(svc))
			rc := &routev3.RouteConfiguration{Name: name}
			for _, vh := range vhs {
				rc.VirtualHosts = append(rc.VirtualHosts, proto.Clone(vh).(*routev3.VirtualHost)) // a wildcard's may serve several services
			}
			out = append(out, Resource{Name: name, Message: rc, Deps: sortDeps(deps)})
			return
		}
		routes, rdeps, err := serviceRoutes(p, indexFor(port.Number), svc, port, true)
		if err != nil {
			errs = append(errs, err)
		}
		var domains []string
		ns := ""
		if p != nil {
			ns = p.Namespace
		}
		for _, n := range svc.ShortNames(ns) {
			if d := HostPortName(n, port.Number); !slices.Contains(domains, d) {
				domains = append(domains, d)
			}
			if !slices.Contains(domains, n) {
				domains = append(domains, n)
			}
		}
		rc := &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
			Name: name, Domains: domains, Routes: routes,
		}}}
		out = append(out, Resource{Name: name, Message: rc, Deps: sortDeps(append(rdeps, ServiceKey(svc)))})
	}
	if wantAll(names) {
		for _, svc := range visibleServices(s, sc) {
			for _, port := range svc.Ports {
				if sc.SeesPort(svc, port.Number) {
					add(HostPortName(svc.Hostname, port.Number), svc, port)
				}
			}
		}
	} else {
		for _, name := range uniqueSorted(names) {
			if svc, port, ok := grpcServicePort(p, s, sc, name); ok {
				add(name, svc, port)
			}
		}
	}
	return out, errors.Join(errs...)
}

// vhNames reports whether a virtual host of route configuration num has a domain for host: host
// itself, host:num, or a wildcard (with no port or port num) that covers host, as istiod's
// grpcgen selects a host's virtual hosts.
func vhNames(vh *routev3.VirtualHost, host string, num uint32) bool {
	for _, d := range vh.GetDomains() {
		h, port, found := strings.Cut(d, ":")
		if found && port != strconv.FormatUint(uint64(num), 10) {
			continue
		}
		if h == host || (strings.HasPrefix(h, "*") && hostMatches(h, host)) {
			return true
		}
	}
	return false
}

// serviceRoutes translates the HTTP routes of the VirtualService for svc (the first of
// httpVirtualServices with a route for the port) into Envoy routes for
// one port. An HTTP route that cannot be translated is dropped with an error naming the
// VirtualService; the others are kept. With no VirtualService route for the port, a default
// route sends everything to the service's cluster. It also returns the VS keys it read.
func serviceRoutes(p *model.Proxy, ix *index, svc *model.Service, port model.Port, grpc bool) ([]*routev3.Route, []istioconfig.Key, error) {
	routes, deps, err := vsServiceRoutes(p, ix, svc, port, grpc)
	if len(routes) == 0 {
		var ddeps []istioconfig.Key
		routes, ddeps = defaultServiceRoutes(ix, svc, port, grpc)
		deps = append(deps, ddeps...)
	}
	return routes, deps, err
}

// vsServiceRoutes are serviceRoutes' routes from the VirtualService for svc, none when no
// VirtualService has a route for the port (port number 0: an HTTP proxy's route
// configuration, where a match that names a port applies nowhere), with the keys it read.
func vsServiceRoutes(p *model.Proxy, ix *index, svc *model.Service, port model.Port, grpc bool) ([]*routev3.Route, []istioconfig.Key, error) {
	var routes []*routev3.Route
	var deps []istioconfig.Key
	var errs []error
	// One VirtualService per host: istiod's first virtual host of a name wins. The others
	// were read to decide, so they are dependencies too.
	for _, c := range ix.virtualServices(svc.Hostname) {
		deps = append(deps, c.Key())
	}
	for _, c := range ix.httpVirtualServices(svc.Hostname) {
		if len(routes) > 0 {
			break // the first VS with a route for the port wins
		}
		vs := vsSpec(c)
		for i, hr := range vs.GetHttp() {
			for _, d := range routeDestinations(hr) {
				h := resolveHost(d.GetHost(), c.Namespace)
				if ds := ix.snap.Service(h); ds != nil && ds != svc {
					deps = append(deps, ServiceKey(ds))
				}
				if dr := ix.destinationRule(h); dr != nil { // its consistent hash
					deps = append(deps, dr.Key())
				}
			}
			rs, catchAll, err := translateHTTPRoute(p, ix, c.Namespace, hr, svc, port, grpc)
			if err != nil {
				label := strconv.Itoa(i)
				if hr.GetName() != "" {
					label += " (" + hr.GetName() + ")"
				}
				errs = append(errs, fmt.Errorf("VirtualService %s/%s http[%s] for %s port %d: %w; route skipped, fix the VirtualService", c.Namespace, c.Name, label, svc.Hostname, port.Number, err))
				continue
			}
			routes = append(routes, rs...)
			if catchAll {
				break // istiod's BuildHTTPRoutesForVirtualService: nothing after a catch-all is reachable
			}
		}
	}
	return routes, deps, errors.Join(errs...)
}

// defaultServiceRoutes is the route of port of svc without a VirtualService: everything to
// the service's cluster (istiod's BuildDefaultHTTPOutboundRoute), with the key of the
// DestinationRule whose consistent hash it reads.
func defaultServiceRoutes(ix *index, svc *model.Service, port model.Port, grpc bool) ([]*routev3.Route, []istioconfig.Key) {
	var deps []istioconfig.Key
	if dr := ix.destinationRule(svc.Hostname); dr != nil {
		deps = append(deps, dr.Key())
	}
	return []*routev3.Route{{
		Name:  "default",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: ClusterName(Outbound, port.Number, "", svc.Hostname)},
			Timeout:          durationpb.New(0),
			MaxGrpcTimeout:   durationpb.New(0), //nolint:staticcheck // istiod's BuildDefaultHTTPOutboundRoute sets it, for gRPC clients too
			RetryPolicy:      defaultRetryPolicy(grpc),
			HashPolicy:       defaultHashPolicy(ix, svc, port),
		}},
	}}, deps
}

// defaultRetryPolicy is the retry policy of a service's default route (istiod:
// BuildDefaultHTTPOutboundRoute, which never drops the previous-hosts predicate).
// routeDestinations lists the destinations an HTTP route sends to or mirrors to.
func routeDestinations(hr *networking.HTTPRoute) []*networking.Destination {
	var out []*networking.Destination
	for _, d := range hr.GetRoute() {
		out = append(out, d.GetDestination())
	}
	if hr.GetMirror() != nil {
		out = append(out, hr.GetMirror())
	}
	for _, m := range hr.GetMirrors() {
		if m.GetDestination() != nil {
			out = append(out, m.GetDestination())
		}
	}
	return out
}

func defaultRetryPolicy(grpc bool) *routev3.RetryPolicy {
	if grpc {
		return grpcRetryPolicy(nil)
	}
	return sidecarRetryPolicy(nil, false)
}

// grpcRetryPolicy is a proxyless gRPC route's retry policy: istiod's (its route builder is the
// sidecar's for gRPC clients too: sidecarRetryPolicy, the default of 2 retries with no retries
// in the route, none with attempts 0), less the host predicate and re-picks grpc-go does not
// read. grpc-go reads the gRPC status names of retry_on (the default's "unavailable" and
// "cancelled"; it ignores Envoy's conditions), num_retries and retry_back_off.
func grpcRetryPolicy(in *networking.HTTPRetry) *routev3.RetryPolicy {
	rp := sidecarRetryPolicy(in, true)
	if rp == nil {
		return nil
	}
	rp.RetryHostPredicate, rp.HostSelectionRetryMaxAttempts, rp.RetryPriority = nil, 0, nil
	return rp
}

// defaultHashPolicy is the hash policy of a service's default route from its DestinationRule's
// consistent hash (istiod: buildSidecarVirtualHostForService, hashForService).
func defaultHashPolicy(ix *index, svc *model.Service, port model.Port) []*routev3.RouteAction_HashPolicy {
	if hp := hashPolicy(serviceConsistentHash(ix.destinationRule(svc.Hostname), port.Number)); hp != nil {
		return []*routev3.RouteAction_HashPolicy{hp}
	}
	return nil
}

// translateHTTPRoute turns one VirtualService HTTP route into Envoy routes, one per match
// request (they are ORed). Matches for another port, another gateway or other source labels are
// left out; a route whose matches all are left out yields nothing. catchAll reports a route
// that matches every request (no match, or a match on any path without header or query
// conditions: istiod's IsCatchAllRoute): the matches after it, and the routes after this one,
// are unreachable and istiod leaves them out.
func translateHTTPRoute(p *model.Proxy, ix *index, vsNamespace string, hr *networking.HTTPRoute, svc *model.Service, port model.Port, grpc bool) (routes []*routev3.Route, catchAll bool, err error) {
	if hr.GetDelegate() != nil {
		// Unreachable: the snapshot merges delegates into their roots (model.MergeDelegates).
		return nil, false, fmt.Errorf("route %q delegates to VirtualService %s, whose routes were not merged into it (an xdslab bug: please report it with the VirtualServices)", hr.GetName(), hr.GetDelegate().GetName())
	}
	type match struct {
		rm               *routev3.RouteMatch
		name, statPrefix string
	}
	var matches []match
	if len(hr.GetMatch()) == 0 {
		matches = []match{{rm: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}}}
	}
	for _, m := range hr.GetMatch() {
		if !matchApplies(p, m, port.Number) {
			continue
		}
		rm, err := translateMatch(m)
		if err != nil {
			return nil, false, err
		}
		matches = append(matches, match{rm, m.GetName(), m.GetStatPrefix()})
		if isCatchAll(rm) {
			break
		}
	}
	if len(matches) == 0 {
		return nil, false, nil
	}
	catchAll = len(hr.GetMatch()) == 0 || isCatchAll(matches[len(matches)-1].rm)
	build := func(rm *routev3.RouteMatch, matchName, statPrefix string) (*routev3.Route, error) {
		// The route's name is istiod's: the HTTP route's name, then ".MATCHNAME" (TranslateRoute).
		name := hr.GetName()
		if matchName != "" {
			name += "." + matchName
		}
		r := &routev3.Route{Name: name, Match: rm, StatPrefix: statPrefix}
		ops := translateHeaders(hr.GetHeaders())
		ops.applyToRoute(r)
		switch {
		case hr.GetRedirect() != nil:
			// Kept for gRPC clients too, as istiod keeps it: grpc-go accepts a route it cannot
			// follow and fails the RPCs it matches, which then do not fall through to the
			// routes after it.
			r.Action = &routev3.Route_Redirect{Redirect: redirectAction(hr.GetRedirect(), port.Number, false)}
		case hr.GetDirectResponse() != nil: // kept for gRPC clients too (above)
			dr := hr.GetDirectResponse()
			if dr.GetStatus() < 200 || dr.GetStatus() > 599 {
				return nil, fmt.Errorf("direct_response status %d is not in 200..599", dr.GetStatus())
			}
			act := &routev3.DirectResponseAction{Status: dr.GetStatus()}
			if b := dr.GetBody(); b != nil {
				if str, ok := b.GetSpecifier().(*networking.HTTPBody_String_); ok {
					act.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: str.String_}}
				} else {
					act.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b.GetBytes()}}
				}
			}
			r.Action = &routev3.Route_DirectResponse{DirectResponse: act}
		default:
			ra, err := routeAction(ix, vsNamespace, hr, r, ops.authority, port, grpc)
			if err != nil {
				return nil, err
			}
			r.Action = &routev3.Route_Route{Route: ra}
		}
		if f := translateFault(hr.GetFault()); f != nil {
			r.TypedPerFilterConfig = map[string]*anypb.Any{faultFilterName: toAny(f)}
		}
		if c := hr.GetCorsPolicy(); c != nil && !grpc { // grpc-go has no CORS filter and would NACK its config
			if r.TypedPerFilterConfig == nil {
				r.TypedPerFilterConfig = map[string]*anypb.Any{}
			}
			r.TypedPerFilterConfig[corsFilterName] = toAny(translateCORS(c))
		}
		return r, nil
	}
	out := make([]*routev3.Route, 0, len(matches))
	for _, m := range matches {
		r, err := build(m.rm, m.name, m.statPrefix)
		if err != nil {
			return nil, false, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out, catchAll, nil
}

// isCatchAll is istiod's IsCatchAllRoute: a prefix "/" (or regex ".*") without header or query
// parameter conditions.
func isCatchAll(rm *routev3.RouteMatch) bool {
	all := rm.GetPrefix() == "/" || rm.GetPathSeparatedPrefix() == "/" || rm.GetSafeRegex().GetRegex() == ".*"
	return all && len(rm.GetHeaders()) == 0 && len(rm.GetQueryParameters()) == 0 && len(rm.GetDynamicMetadata()) == 0
}

// matchApplies reports whether a match request concerns this proxy and port. As in istiod
// (sourceMatchHTTP), a match that names gateways applies wherever one of them is the proxy's
// (mesh for a sidecar) whatever its sourceLabels and sourceNamespace say: those are checked
// only for a match without gateways.
func matchApplies(p *model.Proxy, m *networking.HTTPMatchRequest, port uint32) bool {
	if m.GetPort() != 0 && m.GetPort() != port {
		return false
	}
	if len(m.GetGateways()) > 0 {
		return forMesh(m.GetGateways())
	}
	if len(m.GetSourceLabels()) > 0 && (p == nil || !model.LabelsMatch(m.GetSourceLabels(), p.Labels)) {
		return false
	}
	if m.GetSourceNamespace() != "" && (p == nil || p.Namespace != m.GetSourceNamespace()) {
		return false
	}
	return true
}

func translateMatch(m *networking.HTTPMatchRequest) (*routev3.RouteMatch, error) {
	rm := &routev3.RouteMatch{}
	switch u := m.GetUri().GetMatchType().(type) {
	case nil:
		rm.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
	case *networking.StringMatch_Exact:
		rm.PathSpecifier = &routev3.RouteMatch_Path{Path: u.Exact}
	case *networking.StringMatch_Prefix:
		rm.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: u.Prefix}
	case *networking.StringMatch_Regex:
		if err := checkRegex(u.Regex); err != nil {
			return nil, fmt.Errorf("uri: %w", err)
		}
		rm.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: u.Regex}}
	}
	// istiod's TranslateRouteMatch states case sensitivity on every match it translates.
	rm.CaseSensitive = wrapperspb.Bool(!m.GetIgnoreUriCase())
	add := func(name string, sm *networking.StringMatch, invert bool) error {
		hm := &routev3.HeaderMatcher{Name: name, InvertMatch: invert}
		sm2, err := stringMatcher(sm)
		if err != nil {
			return fmt.Errorf("header %q: %w", name, err)
		}
		if claims, ok := routingClaim(name); ok {
			// A JWT claim the jwt_authn filter verified, not a header (istiod's
			// translateMetadataMatch): the claim, or one element of a list claim, matches.
			v := &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_PresentMatch{PresentMatch: true}}
			if sm2 != nil {
				v = &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: sm2}}
			}
			mm := jwtClaimMatcher(claims, v, true)
			mm.Invert = invert
			rm.DynamicMetadata = append(rm.DynamicMetadata, mm)
			return nil
		}
		if sm2 == nil {
			hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
		} else {
			hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: sm2}
			// A withoutHeaders value match also matches a request without the header (Envoy
			// reads it as "", which the value does not match), as in istiod's
			// TranslateRouteMatch; a presence match cannot say so and needs not.
			hm.TreatMissingHeaderAsEmpty = invert
		}
		rm.Headers = append(rm.Headers, hm)
		return nil
	}
	for _, pseudo := range []struct {
		name string
		sm   *networking.StringMatch
	}{{":method", m.GetMethod()}, {":authority", m.GetAuthority()}, {":scheme", m.GetScheme()}} {
		if pseudo.sm != nil {
			if err := add(pseudo.name, pseudo.sm, false); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range sortedKeys(m.GetHeaders()) {
		if err := add(k, m.GetHeaders()[k], false); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(m.GetWithoutHeaders()) {
		if err := add(k, m.GetWithoutHeaders()[k], true); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(m.GetQueryParams()) {
		sm, err := stringMatcher(m.GetQueryParams()[k])
		if err != nil {
			return nil, fmt.Errorf("query parameter %q: %w", k, err)
		}
		qm := &routev3.QueryParameterMatcher{Name: k}
		if sm == nil {
			qm.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}
		} else {
			qm.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_StringMatch{StringMatch: sm}
		}
		rm.QueryParameters = append(rm.QueryParameters, qm)
	}
	return rm, nil
}

// routingClaimPrefix names a JWT claim in a VirtualService header match.
const routingClaimPrefix = "@request.auth.claims"

// routingClaim reads a header match name that names a JWT claim, as istiod's ToRoutingClaim
// does: "@request.auth.claims.a.b" or "@request.auth.claims[a][b]" is the nested claim a.b.
// ok is false for any other name, a header like the others.
func routingClaim(name string) (claims []string, ok bool) {
	if !strings.HasPrefix(strings.ToLower(name), routingClaimPrefix) {
		return nil, false
	}
	rest := name[len(routingClaimPrefix):]
	switch {
	case strings.HasPrefix(rest, ".") && len(rest) > 1:
		return strings.Split(rest[1:], "."), true
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") && len(rest) > 2:
		return strings.Split(rest[1:len(rest)-1], "]["), true
	}
	return nil, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// stringMatcher converts an Istio StringMatch; nil for one with no match type (presence).
func stringMatcher(sm *networking.StringMatch) (*matcherv3.StringMatcher, error) {
	switch v := sm.GetMatchType().(type) {
	case *networking.StringMatch_Exact:
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v.Exact}}, nil
	case *networking.StringMatch_Prefix:
		if v.Prefix == "" {
			return nil, nil // Envoy requires a non-empty prefix; "" means any value
		}
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: v.Prefix}}, nil
	case *networking.StringMatch_Regex:
		if err := checkRegex(v.Regex); err != nil {
			return nil, err
		}
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: v.Regex}}}, nil
	}
	return nil, nil
}

// checkRegex rejects what RE2 (Envoy's and grpc-go's engine) would reject; Go's regexp
// implements the same syntax.
func checkRegex(re string) error {
	if re == "" {
		return errors.New("empty regex")
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("bad regex %q: %v", re, err)
	}
	return nil
}

var redirectCodes = map[uint32]routev3.RedirectAction_RedirectResponseCode{
	301: routev3.RedirectAction_MOVED_PERMANENTLY,
	302: routev3.RedirectAction_FOUND,
	303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT,
	308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

// redirectAction is istiod's ApplyRedirect for a listener on port: authority, uri or
// prefixRewrite, scheme, the response code, and a port (an explicit one, or the listener's
// for derivePort FROM_REQUEST_PORT), left out when it is the scheme's default; without a
// scheme, that is https for tls (a gateway server with a tls block, istiod's IsTLS), else http.
func redirectAction(r *networking.HTTPRedirect, port uint32, tls bool) *routev3.RedirectAction {
	ra := &routev3.RedirectAction{HostRedirect: r.GetAuthority(), ResponseCode: redirectCodes[r.GetRedirectCode()]}
	switch {
	case r.GetPrefixRewrite() != "":
		ra.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: r.GetPrefixRewrite()}
	case r.GetUri() != "":
		ra.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: r.GetUri()}
	}
	if r.GetScheme() != "" {
		ra.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: r.GetScheme()}
	}
	if r.GetRedirectPort() != nil {
		switch rp := r.GetRedirectPort().(type) {
		case *networking.HTTPRedirect_DerivePort:
			if rp.DerivePort == networking.HTTPRedirect_FROM_REQUEST_PORT {
				ra.PortRedirect = port
			}
		case *networking.HTTPRedirect_Port:
			ra.PortRedirect = rp.Port
		}
		scheme := r.GetScheme()
		switch {
		case scheme != "":
		case tls:
			scheme = "https"
		default:
			scheme = "http"
		}
		if (ra.PortRedirect == 80 && scheme == "http") || (ra.PortRedirect == 443 && scheme == "https") {
			ra.PortRedirect = 0
		}
	}
	return ra
}

// routeAction builds the forwarding action as istiod's applyHTTPRouteDestination does: one
// cluster (one destination) or weighted clusters (several; those weighing 0 left out), the
// destinations' header operations (on the route for one destination, on each weighted cluster
// otherwise), consistent-hash policies from their DestinationRules, timeout, URI and authority
// rewrites (for every match type), mirrors and retries. r is the route being built (it takes
// the single destination's headers); authority is the route-level headers' authority.
func routeAction(ix *index, vsNamespace string, hr *networking.HTTPRoute, r *routev3.Route, authority string, port model.Port, grpc bool) (*routev3.RouteAction, error) {
	dests := hr.GetRoute()
	if len(dests) == 0 {
		return nil, errors.New("no route destination")
	}
	ra := &routev3.RouteAction{}
	if hr.GetTimeout().AsDuration() < 0 {
		return nil, fmt.Errorf("negative timeout %s", hr.GetTimeout().AsDuration())
	}
	setTimeout(ra, hr.GetTimeout().AsDuration(), grpc)
	if rw := hr.GetRewrite(); rw != nil && !grpc {
		if rr := rw.GetUriRegexRewrite(); rr != nil {
			if err := checkRegex(rr.GetMatch()); err != nil {
				return nil, fmt.Errorf("rewrite.uriRegexRewrite.match: %w", err)
			}
			ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: rr.GetMatch()}, Substitution: rr.GetRewrite()}
		} else {
			ra.PrefixRewrite = rw.GetUri()
		}
		if a := rw.GetAuthority(); a != "" {
			authority = a
		}
	}
	if authority != "" && !grpc {
		ra.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: authority}
	}
	if hr.GetMirror() != nil {
		if f := mirrorFraction(hr); f != nil {
			cluster, err := destinationCluster(ix, vsNamespace, hr.GetMirror(), port)
			if err != nil {
				return nil, fmt.Errorf("mirror: %w", err)
			}
			ra.RequestMirrorPolicies = append(ra.RequestMirrorPolicies, mirrorPolicy(cluster, f))
		}
	}
	for i, m := range hr.GetMirrors() {
		if f := mirrorPolicyFraction(m); f != nil && m.GetDestination() != nil {
			cluster, err := destinationCluster(ix, vsNamespace, m.GetDestination(), port)
			if err != nil {
				return nil, fmt.Errorf("mirrors[%d]: %w", i, err)
			}
			ra.RequestMirrorPolicies = append(ra.RequestMirrorPolicies, mirrorPolicy(cluster, f))
		}
	}
	// A destination's rule hashes only when the proxy sees its service: istiod finds no rule
	// for a service not exported to it (or that its Sidecar does not import), so a route to
	// it, single or weighted, has no hash policy (and keeps the previous-hosts retry predicate).
	hash := func(d *networking.Destination) *routev3.RouteAction_HashPolicy {
		return hashPolicy(consistentHash(ix.routeDestinationRule(resolveHost(d.GetHost(), vsNamespace)), d))
	}
	total := 0
	for i, d := range dests {
		if d.GetWeight() < 0 {
			return nil, fmt.Errorf("route[%d]: negative weight %d", i, d.GetWeight())
		}
		total += int(d.GetWeight())
	}
	consistent := false
	if len(dests) == 1 {
		d := dests[0]
		cluster, err := destinationCluster(ix, vsNamespace, d.GetDestination(), port)
		if err != nil {
			return nil, fmt.Errorf("route[0]: %w", err)
		}
		ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: cluster}
		ops := translateHeaders(d.GetHeaders())
		ops.applyToRoute(r)
		if ops.authority != "" && ra.HostRewriteSpecifier == nil && !grpc {
			ra.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: ops.authority}
		}
		if hp := hash(d.GetDestination()); hp != nil {
			ra.HashPolicy = append(ra.HashPolicy, hp)
			consistent = true
		}
	} else {
		w := &routev3.WeightedCluster{}
		for i, d := range dests {
			weight := uint32(d.GetWeight())
			if total == 0 {
				weight = 1 // no weights at all (validation rejects it): an even split
			}
			if weight == 0 {
				continue
			}
			cluster, err := destinationCluster(ix, vsNamespace, d.GetDestination(), port)
			if err != nil {
				return nil, fmt.Errorf("route[%d]: %w", i, err)
			}
			cw := &routev3.WeightedCluster_ClusterWeight{Name: cluster, Weight: wrapperspb.UInt32(weight)}
			ops := translateHeaders(d.GetHeaders())
			cw.RequestHeadersToAdd, cw.RequestHeadersToRemove = ops.reqAdd, ops.reqRemove
			cw.ResponseHeadersToAdd, cw.ResponseHeadersToRemove = ops.respAdd, ops.respRemove
			if ops.authority != "" && !grpc {
				cw.HostRewriteSpecifier = &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: ops.authority}
			}
			w.Clusters = append(w.Clusters, cw)
			if hp := hash(d.GetDestination()); hp != nil {
				ra.HashPolicy = append(ra.HashPolicy, hp)
			}
		}
		ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: w}
	}
	if !grpc {
		ra.RetryPolicy = sidecarRetryPolicy(hr.GetRetries(), consistent)
		return ra, nil
	}
	if rt := hr.GetRetries(); rt.GetAttempts() < 0 {
		return nil, fmt.Errorf("negative retry attempts %d", rt.GetAttempts())
	}
	ra.RetryPolicy = grpcRetryPolicy(hr.GetRetries())
	return ra, nil
}

// destinationCluster is the outbound cluster for a route destination (istiod:
// GetDestinationCluster): its port, else the only port of the service the proxy sees, else
// the listener's port.
func destinationCluster(ix *index, vsNamespace string, dst *networking.Destination, port model.Port) (string, error) {
	if dst.GetHost() == "" {
		return "", errors.New("destination without a host")
	}
	host := resolveHost(dst.GetHost(), vsNamespace)
	num := dst.GetPort().GetNumber()
	if num == 0 {
		num = port.Number
		// A service's only port, except on a sidecar's HTTP route configuration, where istiod
		// looks the destination up among the services of the listener's port (each reduced to
		// that port): there a destination without a port always gets the listener's. Only a
		// service the proxy sees counts: for one exported elsewhere istiod finds no service and
		// takes the listener's port. istiod looks it up in the proxy's whole scope
		// (ServiceForHostname), which holds every egress listener's services and the
		// destinations of the VirtualServices they import.
		lookIn := ix.proxyScope()
		if ix.proxyDests {
			lookIn = ix.scope
		}
		if ds := visibleService(ix.snap, lookIn, host); ds != nil && len(ds.Ports) == 1 && !ix.listenerPortDests {
			num = ds.Ports[0].Number
		}
	}
	if num > 65535 {
		return "", fmt.Errorf("port %d out of range", num)
	}
	if dst.GetSubset() != "" {
		if err := checkSubsetName(dst.GetSubset()); err != nil {
			return "", err
		}
	}
	return ClusterName(Outbound, num, dst.GetSubset(), host), nil
}

// hostlessRoutes translates the HTTP routes of VirtualService c (spec vs) for its hosts that
// name no service, on port (its number 0 on an HTTP proxy listener), up to the first route
// that catches everything; a route that does not translate is skipped with an error naming
// where it was (where: "port 80", "an HTTP proxy listener").
func hostlessRoutes(p *model.Proxy, ix *index, c *istioconfig.Config, vs *networking.VirtualService, hosts []string, port model.Port, grpc bool, where string) ([]*routev3.Route, []error) {
	var routes []*routev3.Route
	var errs []error
	for i, hr := range vs.GetHttp() {
		rs, catchAll, err := translateHTTPRoute(p, ix, c.Namespace, hr, &model.Service{}, port, grpc)
		if err != nil {
			errs = append(errs, fmt.Errorf("VirtualService %s/%s http[%d] for %s on %s: %w; route skipped, fix the VirtualService", c.Namespace, c.Name, i, strings.Join(hosts, ","), where, err))
			continue
		}
		routes = append(routes, rs...)
		if catchAll {
			break
		}
	}
	return routes, errs
}
