package gen

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Router (gateway) generators. A proxy with node type "router" is served from the Gateways whose
// selector matches its labels and the VirtualServices bound to them, never from sidecar
// listeners:
//   - per server port with HTTP/HTTP2/GRPC servers, listener "0.0.0.0_PORT" (bound) with an
//     HTTP connection manager fetching route configuration "http.PORT" over ADS; its virtual
//     hosts "HOST:PORT" are the hosts of the bound VirtualServices that the servers expose
//     (require_tls ALL, a redirect to HTTPS, for a server with tls.httpsRedirect);
//   - per port with TLS PASSTHROUGH servers (protocol TLS or HTTPS), listener "0.0.0.0_PORT" with
//     the TLS inspector and one filter chain per SNI group of the bound VirtualServices' tls
//     routes, each a tcp_proxy;
//   - per port with TCP servers, listener "0.0.0.0_PORT" with a tcp_proxy per the first
//     matching tcp route;
//   - only the clusters those routes reference (as Istio with
//     PILOT_FILTER_GATEWAY_CLUSTER_CONFIG=true), and BlackHoleCluster.
//
//   - servers that bind an address (Server.bind) get the same on listener "BIND_PORT" of
//     their own, their route configurations named with ".BIND" after istiod's names;
//   - a server port that a service of the router translates (gatewayListenPort) is listened
//     on at the target port, "http.TARGET" its HTTP route configuration.
//
//   - per port with HTTPS servers that terminate TLS (SIMPLE, MUTUAL, OPTIONAL_MUTUAL or
//     ISTIO_MUTUAL), listener "0.0.0.0_PORT" with the TLS inspector and one filter chain per
//     server: its hosts as SNI names, a TLS context (gatewayTLSSocket: a credentialName's
//     secret "kubernetes://NAME" over ADS, certificate files as the istio-agent's
//     "file-cert:CERT~KEY" and "file-root:CA", ISTIO_MUTUAL the agent's "default" and
//     "ROOTCA"), and an HTTP connection manager fetching route configuration
//     "https.PORT.PORTNAME.GATEWAY.NAMESPACE" (GatewayHTTPSRouteName) built like "http.PORT"
//     from that server alone;
//   - on the same listener, a chain per protocol TLS server that terminates TLS: its hosts as
//     SNI names, the same TLS context, and a tcp_proxy per the first matching tcp route.
//
//   - on the same listener, for AUTO_PASSTHROUGH servers, a chain per port and subset of each
//     service their hosts cover, by SNI, to the SNI-DNAT clusters (gateway_autopassthrough.go).
//
// xdslab serves no Kubernetes secrets: a gateway's SDS request for "kubernetes://NAME" gets
// nothing, as istiod answers for a secret that is missing, and the listener waits out its
// initial fetch timeout (istiod's credential SDS config keeps Envoy's default 15 s; so does
// its config of the agent's file secrets, which a missing file leaves unanswered).

// GatewayRouteName is the route configuration name of a router's HTTP listener on port.
func GatewayRouteName(port uint32) string { return "http." + strconv.FormatUint(uint64(port), 10) }

// gatewayHTTPRouteName is istiod's route configuration name of the HTTP listener of a port
// and bind address: "http.PORT", and ".BIND" after it for a server that binds one.
func gatewayHTTPRouteName(gp *gwPort) string {
	return GatewayRouteName(gp.listen) + bindSuffix(gp.bind)
}

// GatewayHTTPSRouteName is istiod's route configuration name of an HTTPS server:
// "https.PORT.PORTNAME.GATEWAY.NAMESPACE", and ".BIND" after it for a server that binds an
// address.
func GatewayHTTPSRouteName(gs gwServer) string {
	return "https." + strconv.FormatUint(uint64(gs.srv.GetPort().GetNumber()), 10) + "." + gs.srv.GetPort().GetName() + "." +
		gs.gw.Name + "." + gs.gw.Namespace + bindSuffix(gs.srv.GetBind())
}

func bindSuffix(bind string) string {
	if bind == "" {
		return ""
	}
	return "." + bind
}

// ParseGatewayRef resolves a VirtualService's gateway reference the way istiod does: "mesh"
// (mesh is true), "namespace/name", the legacy "name.namespace[.svc.cluster.local]", or a bare
// name in the VirtualService's namespace vsNS. ok is false for a reference that names no
// gateway (an empty part, or a namespace with '.' or '/', which no namespace name has).
func ParseGatewayRef(ref, vsNS string) (ns, name string, mesh, ok bool) {
	if ref == "mesh" {
		return "", "", true, true
	}
	if before, after, found := strings.Cut(ref, "/"); found {
		ns, name = before, after
		if ns == "." {
			ns = vsNS
		}
	} else if before, after, found := strings.Cut(ref, "."); found {
		name = before
		ns, _, _ = strings.Cut(after, ".")
	} else {
		ns, name = vsNS, ref
	}
	if ns == "" || name == "" || strings.Contains(name, "/") || strings.ContainsAny(ns, "./") {
		return "", "", false, false
	}
	return ns, name, false, true
}

// gwServer is one server of a Gateway that selects the router.
type gwServer struct {
	gw   *istioconfig.Config
	srv  *networking.Server
	idx  int
	hsts []serverHost
	kind portKind
}

func (s gwServer) String() string {
	return fmt.Sprintf("Gateway %s/%s servers[%d]", s.gw.Namespace, s.gw.Name, s.idx)
}

// serverHost is one "namespace/host" entry of a server: the VirtualService namespaces it admits
// ("*" any) and the host pattern.
type serverHost struct{ ns, host string }

func parseServerHosts(hosts []string, gwNS string) []serverHost {
	out := make([]serverHost, 0, len(hosts))
	for _, h := range hosts {
		ns, host, found := strings.Cut(h, "/")
		if !found {
			ns, host = "*", h
		}
		if ns == "." {
			ns = gwNS
		}
		if host == "" || ns == "~" {
			continue
		}
		out = append(out, serverHost{ns: ns, host: host})
	}
	return out
}

// intersectHost returns the name a VirtualService host h (of namespace vsNS) is exposed under by
// a server host: the more specific of the two when one pattern covers the other.
func (sh serverHost) intersect(h, vsNS string) (string, bool) {
	if sh.ns != "*" && sh.ns != vsNS {
		return "", false
	}
	switch {
	case model.HostMatches(sh.host, h):
		return h, true
	case model.HostMatches(h, sh.host):
		return sh.host, true
	}
	return "", false
}

// portKind classifies a server.
type portKind int

const (
	kindHTTP portKind = iota + 1
	kindTLS
	kindTCP
	kindHTTPS   // HTTPS terminated at the gateway (tls SIMPLE, MUTUAL, OPTIONAL_MUTUAL or ISTIO_MUTUAL)
	kindTLSTerm // protocol TLS terminated at the gateway, then tcp routes
	kindTLSAuto // TLS AUTO_PASSTHROUGH: SNI-DNAT to the services the server's hosts cover
)

func (k portKind) String() string {
	switch k {
	case kindHTTP:
		return "HTTP"
	case kindTLS:
		return "TLS passthrough"
	case kindHTTPS:
		return "HTTPS"
	case kindTLSTerm:
		return "TLS termination"
	case kindTLSAuto:
		return "TLS auto passthrough"
	}
	return "TCP"
}

// sniKind reports whether servers of kind k are told apart by SNI: HTTPS, TLS termination and
// TLS passthrough servers may share a port.
func sniKind(k portKind) bool {
	return k == kindHTTPS || k == kindTLS || k == kindTLSTerm || k == kindTLSAuto
}

func serverKind(srv *networking.Server) (portKind, error) {
	k, err := validate.GatewayServerKind(srv)
	switch k {
	case validate.PortHTTP:
		return kindHTTP, nil
	case validate.PortHTTPS:
		return kindHTTPS, nil
	case validate.PortTLSPassthrough:
		return kindTLS, nil
	case validate.PortTLSTerminated:
		return kindTLSTerm, nil
	case validate.PortTLSAuto:
		return kindTLSAuto, nil
	case validate.PortTCP:
		return kindTCP, nil
	}
	return 0, err
}

// gwPort is a listener port of the router and the servers on it. HTTPS and TLS passthrough
// servers share a port (kind is the first one's): SNI picks their chains, as in istiod. Servers
// that bind an address (Server.bind) have a port of their own per address, listener
// "BIND_PORT", as in istiod: they neither merge nor conflict with the port's other servers.
type gwPort struct {
	num    uint32 // the servers' port number (the first server's), which route matches name
	listen uint32 // the port the listener binds: num, or the target port of the router's service port num
	bind   string // the servers' bind address, "" for the wildcard
	// wildcard is the router's wildcard address (0.0.0.0, :: for an IPv6-only router), which
	// a port without bind listens on.
	wildcard string
	kind     portKind
	servers  []gwServer
	// https, terminated, passthrough and autoPassthrough are the HTTPS, TLS termination, TLS
	// passthrough and AUTO_PASSTHROUGH servers that get filter chains (sniServers), computed
	// once.
	https, terminated, passthrough, autoPassthrough []gwServer
	httpsDone                                       bool
}

// addr is the address the port's listener binds: its bind, else the router's wildcard.
func (gp *gwPort) addr() string {
	if gp.bind != "" {
		return gp.bind
	}
	if gp.wildcard != "" {
		return gp.wildcard
	}
	return wildcardIP
}

// boundVS is a VirtualService bound to one gateway.
type boundVS struct {
	c  *istioconfig.Config
	vs *networking.VirtualService
}

// routerPlan is everything a router gets from one snapshot: its ports and the VirtualServices
// bound to each selecting gateway. It is computed per Generate call.
type routerPlan struct {
	p     *model.Proxy
	s     *model.Snapshot
	az    authzPolicies // the AuthorizationPolicies that select the router
	jwt   jwtRules      // the RequestAuthentications that select the router
	ix    *index
	ports []*gwPort                     // by listener port, then bind address
	bound map[istioconfig.Key][]boundVS // gateway key → bound VSs, in vsOrder
	errs  []error
	// portDeps are the services (and their endpoints) that translate the router's server ports
	// (gatewayListenPort): every listener and route configuration depends on them.
	portDeps []istioconfig.Key
}

// DisableGatewayPortTranslationLabel on a service of the router (a Kubernetes Service or a
// ServiceEntry) keeps its ports from translating Gateway server ports (istiod's
// model.DisableGatewayPortTranslationLabel, of the experimental.istio.io group).
const DisableGatewayPortTranslationLabel = "experimental.istio.io/disable-gateway-port-translation"

// gatewayListenPort is the port a router listens on for a Gateway server of port num, as
// istiod resolves it for a Gateway that selects the router by labels: a service of the
// router's own (model.IsServiceTarget: a Kubernetes Service of its config namespace, a
// ServiceEntry of its node's NAMESPACE or, without one, of any namespace) with an endpoint at
// the router's address that serves its port num sends that port to the endpoint's target
// port, and the router listens there (an installed ingress gateway's Service maps 80 to
// 8080). The oldest such service decides (then by host name, istiod's order of a proxy's
// service targets); a service labelled DisableGatewayPortTranslationLabel is passed over,
// whatever its registry; without one the router listens on num. An endpoint that does not
// serve the port (a Kubernetes endpoint whose slice does not list it) is no target of it in
// istiod and passes the port on to the next service. deps are the services and endpoints read.
func gatewayListenPort(p *model.Proxy, s *model.Snapshot, num uint32) (uint32, []istioconfig.Key) {
	type target struct {
		svc *model.Service
		ep  *model.Endpoint
	}
	var targets []target
	var deps []istioconfig.Key
	for _, ip := range p.IPAddresses {
		for _, ep := range s.EndpointsAt(ip) {
			if !model.IsServiceTarget(p, s, ep) {
				continue
			}
			svc := s.Service(ep.Service)
			if _, ok := svc.Port(num); ok {
				deps = append(deps, ServiceKey(svc), EndpointKey(svc))
				targets = append(targets, target{svc, ep})
			}
		}
	}
	slices.SortStableFunc(targets, func(a, b target) int {
		if c := a.svc.CreationTime.Compare(b.svc.CreationTime); c != 0 {
			return c
		}
		return strings.Compare(a.svc.Hostname, b.svc.Hostname)
	})
	for _, t := range targets {
		if _, off := t.svc.Labels[DisableGatewayPortTranslationLabel]; off {
			continue
		}
		port, _ := t.svc.Port(num)
		if tp, ok := t.ep.ServesPort(port); ok {
			return tp, deps
		}
	}
	return num, deps
}

// selectsRouter reports whether a Gateway applies to a router with these labels: its selector
// (every key and value) is among them; an empty selector selects every router.
func selectsRouter(gw *networking.Gateway, labels map[string]string) bool {
	return model.LabelsMatch(gw.GetSelector(), labels)
}

// routerGateways returns the Gateways of s that apply to router p, in the snapshot's order.
func routerGateways(p *model.Proxy, s *model.Snapshot) []*istioconfig.Config {
	var out []*istioconfig.Config
	for _, c := range s.Configs(istioconfig.KindGateway) {
		if gw, ok := c.Spec.(*networking.Gateway); ok && selectsRouter(gw, p.Labels) {
			out = append(out, c)
		}
	}
	return out
}

func newRouterPlan(p *model.Proxy, s *model.Snapshot) *routerPlan {
	rp := &routerPlan{p: p, s: s, az: authzFor(p, s), jwt: jwtFor(p, s), ix: newIndex(s, s.ScopeFor(p)).of(p), bound: map[istioconfig.Key][]boundVS{}}
	type portKey struct {
		listen uint32
		bind   string
	}
	byPort := map[portKey]*gwPort{}
	gateways := routerGateways(p, s)
	// Oldest first (creation time, then name, then namespace), as istiod merges a router's
	// Gateways: the first server of a port wins a host two servers claim.
	slices.SortStableFunc(gateways, compareByCreation)
	for _, c := range gateways {
		gw := c.Spec.(*networking.Gateway)
		for i, srv := range gw.GetServers() {
			gs := gwServer{gw: c, srv: srv, idx: i, hsts: parseServerHosts(srv.GetHosts(), c.Namespace)}
			num := srv.GetPort().GetNumber()
			bind := srv.GetBind()
			if strings.HasPrefix(bind, "unix://") {
				// istiod takes it with port 0 and listens on the socket; validate warns.
				rp.errs = append(rp.errs, fmt.Errorf("%s: bind %q: a unix socket is not generated by xdslab; server skipped", gs, bind))
				continue
			}
			if num == 0 || num > 65535 {
				rp.errs = append(rp.errs, fmt.Errorf("%s: port %d is not in 1..65535; server skipped, fix the Gateway", gs, num))
				continue
			}
			if bind != "" {
				if _, err := netip.ParseAddr(bind); err != nil {
					rp.errs = append(rp.errs, fmt.Errorf("%s: bind %q is not an IP address; server skipped, fix the Gateway", gs, bind))
					continue
				}
			}
			kind, err := serverKind(srv)
			if err != nil {
				rp.errs = append(rp.errs, fmt.Errorf("%s: %w", gs, err))
				continue
			}
			gs.kind = kind
			listen, deps := gatewayListenPort(p, s, num)
			rp.portDeps = append(rp.portDeps, deps...)
			gp := byPort[portKey{listen, bind}]
			if gp == nil {
				gp = &gwPort{num: num, listen: listen, bind: bind, kind: kind, wildcard: proxyWildcard(p)}
				byPort[portKey{listen, bind}] = gp
			}
			if gp.kind != kind && !(sniKind(gp.kind) && sniKind(kind)) {
				rp.errs = append(rp.errs, fmt.Errorf("%s: port %d is %s here but %s in %s; server skipped, give it another port", gs, num, kind, gp.kind, gp.servers[0]))
				continue
			}
			if kind == kindTCP && len(gp.servers) > 0 {
				// istiod merges only HTTP servers of a plaintext port: a second TCP server there
				// is skipped whole, bound routes or not, and the oldest Gateway's server alone
				// builds the listener.
				rp.errs = append(rp.errs, fmt.Errorf("%s: port %d already has TCP server %s of an older Gateway; server skipped (as istiod does), give it another port", gs, num, gp.servers[0]))
				continue
			}
			gp.servers = append(gp.servers, gs)
		}
	}
	for _, gp := range byPort {
		rp.ports = append(rp.ports, gp)
	}
	slices.SortFunc(rp.ports, func(a, b *gwPort) int {
		if a.listen != b.listen {
			return int(a.listen) - int(b.listen)
		}
		return strings.Compare(a.bind, b.bind)
	})
	if len(gateways) == 0 {
		return rp
	}
	// In istiod's order (VirtualServicesForGateway), which decides whose routes come first
	// on a shared host.
	for _, c := range vsOrder(s, p.Namespace) {
		vs := vsSpec(c)
		if vs == nil {
			continue
		}
		for _, gc := range gateways {
			if bindsGateway(vs.GetGateways(), c.Namespace, gc) && model.ExportedTo(vs.GetExportTo(), c.Namespace, gc.Namespace) {
				rp.bound[gc.Key()] = append(rp.bound[gc.Key()], boundVS{c: c, vs: vs})
			}
		}
	}
	return rp
}

// bindsGateway reports whether a gateways list (of a VirtualService or a match, resolved in
// namespace vsNS) names gateway gc.
func bindsGateway(refs []string, vsNS string, gc *istioconfig.Config) bool {
	for _, r := range refs {
		if ns, name, mesh, ok := ParseGatewayRef(r, vsNS); ok && !mesh && ns == gc.Namespace && name == gc.Name {
			return true
		}
	}
	return false
}

// exposed returns the names under which a bound VirtualService's hosts are exposed by server gs,
// in the VS's host order, without duplicates.
func (gs gwServer) exposed(b boundVS) []string {
	var out []string
	for _, raw := range b.vs.GetHosts() {
		h := raw
		if !strings.Contains(h, "*") {
			h = resolveHost(raw, b.c.Namespace)
		}
		for _, sh := range gs.hsts {
			if name, ok := sh.intersect(h, b.c.Namespace); ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// matchForGateway reports whether a route match (of a VS in vsNS) applies on gateway gc at port.
func matchForGateway(gateways []string, port uint32, vsNS string, gc *istioconfig.Config, num uint32) bool {
	if port != 0 && port != num {
		return false
	}
	return len(gateways) == 0 || bindsGateway(gateways, vsNS, gc)
}

// ---- RDS ----

type gwVHost struct {
	vh *routev3.VirtualHost
	// from lists the (Gateway, VirtualService) pairs whose routes the virtual host holds (those
	// with routes on the port), in order: virtual hosts with the same list hold the same routes.
	from []string
}

// httpRoutes builds route configuration name for servers on port num ("http.PORT" for a plain
// HTTP port, one per HTTPS server) and the clusters it references.
func (rp *routerPlan) httpRoutes(name string, num uint32, servers []gwServer) (Resource, []string) {
	port := strconv.FormatUint(uint64(num), 10)
	vhosts := map[string]*gwVHost{}
	var deps []istioconfig.Key
	// A VirtualService's routes are built once per Gateway, for its first server here, as istiod
	// caches them per Gateway and VirtualService.
	built := map[string][]*routev3.Route{}
	for _, gs := range servers {
		deps = append(deps, gs.gw.Key())
		for _, b := range rp.bound[gs.gw.Key()] {
			hosts := gs.exposed(b)
			if len(hosts) == 0 {
				continue
			}
			from := gs.gw.Key().String() + " " + b.c.Key().String()
			routes, ok := built[from]
			if !ok {
				var rdeps []istioconfig.Key
				routes, rdeps = rp.vsHTTPRoutes(b, gs, num)
				deps = append(deps, b.c.Key())
				deps = append(deps, rdeps...)
				built[from] = routes
			}
			if len(routes) == 0 {
				// istiod skips a VirtualService with no route here (only tcp or tls routes, or
				// matches for other ports or gateways): it neither makes its hosts' virtual
				// hosts nor requires TLS on them.
				continue
			}
			for _, h := range hosts {
				h = strings.ToLower(h)
				v := vhosts[h]
				if v == nil {
					v = &gwVHost{vh: &routev3.VirtualHost{Name: h + ":" + port, Domains: gatewayDomains(h, port)}}
					vhosts[h] = v
				}
				if gs.srv.GetTls().GetHttpsRedirect() {
					// Istio answers plain HTTP on such a server with a redirect to HTTPS.
					v.vh.RequireTls = routev3.VirtualHost_ALL
				}
				// Once per server that exposes the host: a VirtualService bound to two
				// Gateways (or exposed by two servers of one) repeats its routes, as in istiod;
				// the repeats never match first.
				v.vh.Routes = append(v.vh.Routes, routes...)
				v.from = append(v.from, from)
			}
		}
	}
	// An httpsRedirect server requires TLS on the virtual host keyed by each of its hosts as
	// written (lowercased, "./" resolved to the Gateway's namespace, "*/" dropped), whichever
	// server's VirtualServices fill it; a host no virtual host has yet gets one without routes,
	// so that it still redirects. As istiod, a host with a namespace ("app/exact.example.org")
	// never names an existing virtual host (those are keyed by host alone) and becomes a
	// virtual host whose domain is that string itself.
	for _, gs := range servers {
		if !gs.srv.GetTls().GetHttpsRedirect() {
			continue
		}
		for _, h := range redirectHosts(gs.srv.GetHosts(), gs.gw.Namespace) {
			if v := vhosts[h]; v != nil {
				v.vh.RequireTls = routev3.VirtualHost_ALL
				continue
			}
			vhosts[h] = &gwVHost{vh: &routev3.VirtualHost{Name: h + ":" + port, Domains: gatewayDomains(h, port), RequireTls: routev3.VirtualHost_ALL}}
		}
	}
	rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false)}
	// Virtual hosts with the same routes (the same VirtualServices of the same Gateways, in the
	// same order, none of them without routes here) and the same require_tls share one, as
	// istiod collapses them (collapseDuplicateRoutes): hosts in istiod's order (most specific
	// first, wildcards last), each compared with the last host seen with those routes, which
	// takes the host's domains if its require_tls matches, else the host stays a virtual host
	// of its own and becomes the one later hosts with those routes are compared with.
	keys := make([]string, 0, len(vhosts))
	for h, v := range vhosts {
		if len(v.vh.Routes) == 0 && v.vh.RequireTls == routev3.VirtualHost_NONE {
			continue
		}
		keys = append(keys, h)
	}
	slices.SortFunc(keys, compareHostSpecificity)
	last := map[string]*routev3.VirtualHost{}
	for _, h := range keys {
		v := vhosts[h]
		vh := v.vh
		key := strings.Join(v.from, "\n")
		if prev, ok := last[key]; ok && prev.RequireTls == vh.RequireTls {
			prev.Domains = append(prev.Domains, vh.Domains...)
			continue
		}
		last[key] = vh
		vh.Routes = catchAllLast(vh.Routes)
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	slices.SortStableFunc(rc.VirtualHosts, func(a, b *routev3.VirtualHost) int { return strings.Compare(a.Name, b.Name) })
	if len(rc.VirtualHosts) == 0 {
		// Istio's answer when nothing is bound: a virtual host for every domain without
		// routes, so Envoy answers every request 404 (no route, response flag NR).
		rc.VirtualHosts = []*routev3.VirtualHost{{
			Name:    "blackhole:" + port,
			Domains: []string{"*"},
		}}
	}
	return Resource{Name: name, Message: rc, Deps: sortDeps(append(deps, rp.portDeps...))}, routeClusters(rc)
}

// gatewayDomains is the domains of a gateway virtual host for host h on port: h and h:PORT, or
// "*" alone.
func gatewayDomains(h, port string) []string {
	if h == "*" {
		return []string{h}
	}
	return []string{h, h + ":" + port}
}

// redirectHosts returns the hosts of an httpsRedirect server as istiod keys their virtual
// hosts: lowercased, "./host" as "GATEWAYNS/host", "*/host" as "host", any other namespace
// kept, and "*" alone when one of them is "*/*".
func redirectHosts(hosts []string, gwNS string) []string {
	out := make([]string, 0, len(hosts))
	for _, raw := range hosts {
		h := strings.ToLower(raw)
		if ns, rest, found := strings.Cut(h, "/"); found {
			switch ns {
			case ".":
				h = gwNS + "/" + rest
			case "*":
				if rest == "*" {
					return []string{"*"}
				}
				h = rest
			}
		}
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// compareHostSpecificity orders hosts as istiod sorts host names: hosts without a leading
// wildcard first, then longer before shorter, then alphabetically.
func compareHostSpecificity(a, b string) int {
	aw, bw := strings.HasPrefix(a, "*"), strings.HasPrefix(b, "*")
	switch {
	case aw != bw:
		if aw {
			return 1
		}
		return -1
	case len(a) != len(b):
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

// catchAllLast moves the catch-all routes of a gateway virtual host after the others, each
// group in its order: a VirtualService's catch-all does not hide the routes that later
// VirtualServices of the same host add (istiod's SortVHostRoutes on every gateway virtual host).
func catchAllLast(routes []*routev3.Route) []*routev3.Route {
	out := make([]*routev3.Route, 0, len(routes))
	var all []*routev3.Route
	for _, r := range routes {
		if isCatchAll(r.GetMatch()) {
			all = append(all, r)
		} else {
			out = append(out, r)
		}
	}
	return append(out, all...)
}

// vsHTTPRoutes translates the HTTP routes of one bound VS for server gs on port num. Matches for
// another port or gateway are left out; a route that cannot be translated is skipped with an
// error.
func (rp *routerPlan) vsHTTPRoutes(b boundVS, gs gwServer, num uint32) ([]*routev3.Route, []istioconfig.Key) {
	var out []*routev3.Route
	var deps []istioconfig.Key
	for i, hr := range b.vs.GetHttp() {
		label := strconv.Itoa(i)
		if hr.GetName() != "" {
			label += " (" + hr.GetName() + ")"
		}
		fail := func(err error) {
			rp.errs = append(rp.errs, fmt.Errorf("VirtualService %s/%s http[%s] on %s port %d: %w; route skipped, fix the VirtualService", b.c.Namespace, b.c.Name, label, gs, num, err))
		}
		hr2, ok := gatewayHTTPRoute(hr, b.c.Namespace, gs.gw, num)
		if !ok {
			continue
		}
		// A destination without a port goes to the service's only port, else to the gateway
		// server's port (destinationCluster, as istiod's GetDestinationCluster).
		for _, d := range hr2.GetRoute() {
			if ds := rp.s.Service(resolveHost(d.GetDestination().GetHost(), b.c.Namespace)); ds != nil {
				deps = append(deps, ServiceKey(ds))
			}
		}
		rs, catchAll, err := translateHTTPRoute(rp.p, rp.ix, b.c.Namespace, hr2, &model.Service{}, model.Port{Number: num}, false)
		if err != nil {
			fail(err)
			continue
		}
		if rd := hr2.GetRedirect(); rd != nil && gs.srv.GetTls() != nil {
			// A server with a tls block (HTTPS, or HTTP with httpsRedirect) redirects to
			// https by default, as istiod's IsTLS: its port 443 is left out.
			for _, r := range rs {
				if _, ok := r.GetAction().(*routev3.Route_Redirect); ok {
					r.Action = &routev3.Route_Redirect{Redirect: redirectAction(rd, num, true)}
				}
			}
		}
		out = append(out, rs...)
		if catchAll {
			break // nothing after a catch-all is reachable (istiod: BuildHTTPRoutesForVirtualService)
		}
	}
	return out, deps
}

// gatewayHTTPRoute returns hr restricted to the matches that apply on gateway gc at port num,
// with their port and gateways cleared (translateHTTPRoute checks them for sidecars), and
// with them the sourceLabels and sourceNamespace of a match that named gc, which istiod does
// not check then (sourceMatchHTTP); ok is false when no match applies. hr itself is returned
// when it needs no change.
func gatewayHTTPRoute(hr *networking.HTTPRoute, vsNS string, gc *istioconfig.Config, num uint32) (*networking.HTTPRoute, bool) {
	if len(hr.GetMatch()) == 0 {
		return hr, true
	}
	change := false
	var keep []*networking.HTTPMatchRequest
	for _, m := range hr.GetMatch() {
		if !matchForGateway(m.GetGateways(), m.GetPort(), vsNS, gc, num) {
			change = true
			continue
		}
		if m.GetPort() != 0 || len(m.GetGateways()) > 0 {
			change = true
		}
		keep = append(keep, m)
	}
	if len(keep) == 0 {
		return nil, false
	}
	if !change {
		return hr, true
	}
	out := proto.Clone(hr).(*networking.HTTPRoute)
	out.Match = nil
	for _, m := range keep {
		m2 := proto.Clone(m).(*networking.HTTPMatchRequest)
		if len(m2.GetGateways()) > 0 {
			m2.SourceLabels, m2.SourceNamespace = nil, ""
		}
		m2.Port, m2.Gateways = 0, nil
		out.Match = append(out.Match, m2)
	}
	return out, true
}

// routeClusters lists the clusters a route configuration forwards or mirrors to (the
// gateway builds those: istiod sends it every cluster of the mesh, so a route's mirror
// cluster exists there too).
func routeClusters(rc *routev3.RouteConfiguration) []string {
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if c := ra.GetCluster(); c != "" {
				out = append(out, c)
			}
			for _, wc := range ra.GetWeightedClusters().GetClusters() {
				out = append(out, wc.GetName())
			}
			for _, m := range ra.GetRequestMirrorPolicies() {
				out = append(out, m.GetCluster())
			}
		}
	}
	return out
}

// ---- LDS ----

// listener builds the router's listener for one port and the clusters it references; nil when
// the port has nothing to serve (a TLS or TCP port without a bound route).
func (rp *routerPlan) listener(gp *gwPort) (*Resource, []string) {
	name := ListenerName(gp.addr(), gp.listen)
	l := &listenerv3.Listener{
		Name:             name,
		Address:          socketAddress(gp.addr(), gp.listen),
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
	}
	deps := slices.Clone(rp.portDeps)
	for _, gs := range gp.servers {
		deps = append(deps, gs.gw.Key())
	}
	var clusters []string
	switch gp.kind {
	case kindHTTP:
		// The first (oldest) server's protocol decides, as istiod builds the port's connection
		// manager from it: GRPC-WEB adds the grpc_web filter.
		grpcWeb := model.ParseProtocol(gp.servers[0].srv.GetPort().GetProtocol()) == model.ProtocolGRPCWeb
		l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{
			hcmFilter(rp.withRBAC(withGRPCWeb(gatewayHCM(rdsHCM("outbound_"+name, gatewayHTTPRouteName(gp))), grpcWeb))),
		}}}
	case kindTLS, kindHTTPS, kindTLSTerm, kindTLSAuto:
		// HTTPS servers terminate TLS and route; TLS termination servers terminate TLS and
		// forward by their tcp routes; TLS passthrough chains forward by SNI.
		l.ListenerFilters = []*listenerv3.ListenerFilter{{
			Name:       tlsInspectorFilterName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&tlsinspectorv3.TlsInspector{})},
		}}
		for _, gs := range rp.httpsServers(gp) {
			l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
				FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: serverSNIs(gs.srv)},
				TransportSocket:  gatewayTLSSocket(gs.srv.GetTls(), false),
				Filters:          []*listenerv3.Filter{hcmFilter(rp.withRBAC(gatewayHCM(rdsHCM("outbound_"+name, GatewayHTTPSRouteName(gs)))))},
			})
		}
		passthrough, cs, d := rp.tlsChains(gp)
		clusters = cs
		deps = append(deps, d...)
		for _, gs := range rp.terminatedServers(gp) {
			fc, cs, d := rp.tcpChainOf(gp, []gwServer{gs})
			deps = append(deps, d...)
			if fc == nil {
				continue // no tcp route: istiod builds no chain either
			}
			fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: serverSNIs(gs.srv)}
			fc.TransportSocket = gatewayTLSSocket(gs.srv.GetTls(), true)
			passthrough = append(passthrough, fc)
			clusters = append(clusters, cs...)
		}
		if !rp.az.empty() {
			tcp := rp.az.tcpFilters()
			for _, fc := range passthrough {
				fc.Filters = append(slices.Clone(tcp), fc.Filters...)
			}
		}
		l.FilterChains = append(l.FilterChains, passthrough...)
		// AUTO_PASSTHROUGH chains: no authorization filters, as istiod builds them.
		auto, cs, d := rp.autoPassthroughChains(gp)
		l.FilterChains = append(l.FilterChains, auto...)
		clusters = append(clusters, cs...)
		deps = append(deps, d...)
	case kindTCP:
		fc, c, d := rp.tcpChain(gp)
		deps = append(deps, d...)
		if fc != nil {
			l.FilterChains = []*listenerv3.FilterChain{fc}
			clusters = c
		}
	}
	if len(l.FilterChains) == 0 {
		return nil, nil
	}
	if len(rp.jwt.deps) > 0 {
		deps = append(deps, rp.jwt.deps...)
	}
	if !rp.az.empty() {
		deps = append(deps, rp.az.deps...)
		if gp.kind == kindTCP {
			tcp := rp.az.tcpFilters()
			for _, fc := range l.FilterChains {
				fc.Filters = append(slices.Clone(tcp), fc.Filters...)
			}
		}
	}
	return &Resource{Name: name, Message: l, Deps: sortDeps(deps)}, clusters
}

// tlsChains builds one SNI filter chain per tls route of the bound VirtualServices. An SNI name
// already taken by an earlier chain is dropped from later ones (Envoy rejects overlapping
// filter chain matches).
func (rp *routerPlan) tlsChains(gp *gwPort) ([]*listenerv3.FilterChain, []string, []istioconfig.Key) {
	var chains []*listenerv3.FilterChain
	var clusters []string
	var deps []istioconfig.Key
	taken := map[string]string{}
	for _, gs := range rp.passthroughServers(gp) {
		for _, b := range rp.bound[gs.gw.Key()] {
			hosts := gs.exposed(b)
			if len(hosts) == 0 || len(b.vs.GetTls()) == 0 {
				continue
			}
			deps = append(deps, b.c.Key())
			for i, tr := range b.vs.GetTls() {
				where := fmt.Sprintf("VirtualService %s/%s tls[%d] on %s port %d", b.c.Namespace, b.c.Name, i, gs, gp.num)
				var snis []string
				for _, m := range tr.GetMatch() {
					if !matchForGateway(m.GetGateways(), m.GetPort(), b.c.Namespace, gs.gw, gp.num) {
						continue
					}
					if len(m.GetSniHosts()) == 0 {
						rp.errs = append(rp.errs, fmt.Errorf("%s: a match without sniHosts; match skipped, list the SNI names", where))
					}
					for _, sni := range m.GetSniHosts() {
						for _, h := range hosts {
							name, ok := serverHost{ns: "*", host: h}.intersect(sni, b.c.Namespace)
							if !ok || slices.Contains(snis, name) {
								continue
							}
							if prev, dup := taken[name]; dup {
								rp.errs = append(rp.errs, fmt.Errorf("%s: SNI %q is already routed by %s; kept there", where, name, prev))
								continue
							}
							snis = append(snis, name)
						}
					}
				}
				if len(snis) == 0 {
					continue
				}
				f, cs, d, err := rp.tcpProxy(b.c, tr.GetRoute(), gp.num)
				deps = append(deps, d...)
				if err != nil {
					rp.errs = append(rp.errs, fmt.Errorf("%s: %w; route skipped, fix the VirtualService", where, err))
					continue
				}
				for _, n := range snis {
					taken[n] = where
				}
				slices.Sort(snis)
				chains = append(chains, &listenerv3.FilterChain{
					Name:             snis[0],
					FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: snis},
					Filters:          []*listenerv3.Filter{f},
				})
				clusters = append(clusters, cs...)
			}
		}
	}
	return chains, clusters, deps
}

// tcpChain builds the filter chain of a TCP port: the first tcp route (bound VSs in order) whose
// match applies.
func (rp *routerPlan) tcpChain(gp *gwPort) (*listenerv3.FilterChain, []string, []istioconfig.Key) {
	return rp.tcpChainOf(gp, gp.servers)
}

// tcpChainOf builds the filter chain of the first tcp route of servers (a TCP port's, or one
// TLS termination server's).
func (rp *routerPlan) tcpChainOf(gp *gwPort, servers []gwServer) (*listenerv3.FilterChain, []string, []istioconfig.Key) {
	var deps []istioconfig.Key
	for _, gs := range servers {
		for _, b := range rp.bound[gs.gw.Key()] {
			if len(gs.exposed(b)) == 0 || len(b.vs.GetTcp()) == 0 {
				continue
			}
			deps = append(deps, b.c.Key())
			for i, tr := range b.vs.GetTcp() {
				applies := len(tr.GetMatch()) == 0
				for _, m := range tr.GetMatch() {
					applies = applies || matchForGateway(m.GetGateways(), m.GetPort(), b.c.Namespace, gs.gw, gp.num)
				}
				if !applies {
					continue
				}
				f, cs, d, err := rp.tcpProxy(b.c, tr.GetRoute(), gp.num)
				deps = append(deps, d...)
				if err != nil {
					rp.errs = append(rp.errs, fmt.Errorf("VirtualService %s/%s tcp[%d] on %s port %d: %w; route skipped, fix the VirtualService", b.c.Namespace, b.c.Name, i, gs, gp.num, err))
					continue
				}
				// A MONGO server's mongo_proxy goes before the tcp_proxy, as on sidecars, with the
				// same stat prefix.
				return &listenerv3.FilterChain{Filters: tcpStack(model.ParseProtocol(gs.srv.GetPort().GetProtocol()), tcpStatPrefix(b.c, tr.GetRoute(), cs), f)}, cs, deps
			}
		}
	}
	return nil, nil, deps
}

// tcpStatPrefix is istiod's stat prefix of a gateway's tcp or tls route of VirtualService vs
// (its tcp_proxy's, and a MONGO server's mongo_proxy's): the cluster of a single destination,
// "NAME.NAMESPACE" of the VirtualService for a weighted set, even one with a single weight
// left.
func tcpStatPrefix(vs *istioconfig.Config, dests []*networking.RouteDestination, clusters []string) string {
	if len(dests) == 1 && len(clusters) == 1 {
		return clusters[0]
	}
	return vs.Name + "." + vs.Namespace
}

// tcpProxy builds the tcp_proxy of a tcp or tls route of VirtualService vs to one destination
// or a weighted set, for server port listenPort: a destination without a port takes the only
// port of a service the gateway sees, else listenPort (istiod's GetDestinationCluster).
func (rp *routerPlan) tcpProxy(vsc *istioconfig.Config, dests []*networking.RouteDestination, listenPort uint32) (*listenerv3.Filter, []string, []istioconfig.Key, error) {
	vsNS := vsc.Namespace
	if len(dests) == 0 {
		return nil, nil, nil, errors.New("no route destination")
	}
	type wc struct {
		cluster string
		weight  uint32
	}
	var cs []wc
	var deps []istioconfig.Key
	total := 0
	for i, d := range dests {
		dst := d.GetDestination()
		if dst.GetHost() == "" {
			return nil, nil, deps, fmt.Errorf("route[%d]: destination without a host", i)
		}
		if d.GetWeight() < 0 {
			return nil, nil, deps, fmt.Errorf("route[%d]: negative weight %d", i, d.GetWeight())
		}
		host := resolveHost(dst.GetHost(), vsNS)
		num := dst.GetPort().GetNumber()
		ds := rp.s.Service(host)
		if ds != nil {
			deps = append(deps, ServiceKey(ds))
		}
		if num == 0 {
			num = listenPort
			if vs := visibleService(rp.s, rp.ix.scope, host); vs != nil && len(vs.Ports) == 1 {
				num = vs.Ports[0].Number
			}
		}
		if num > 65535 {
			return nil, nil, deps, fmt.Errorf("route[%d]: port %d out of range", i, num)
		}
		if sub := dst.GetSubset(); sub != "" {
			if err := checkSubsetName(sub); err != nil {
				return nil, nil, deps, fmt.Errorf("route[%d]: %w", i, err)
			}
		}
		cs = append(cs, wc{ClusterName(Outbound, num, dst.GetSubset(), host), uint32(d.GetWeight())})
		total += int(d.GetWeight())
	}
	if total == 0 {
		for i := range cs {
			cs[i].weight = 1
		}
	}
	cs = slices.DeleteFunc(cs, func(c wc) bool { return c.weight == 0 })
	tp := &tcpproxyv3.TcpProxy{}
	// As on sidecars (tcproute.go), the first destination's DestinationRule gives the idle
	// timeout, maximum connection duration, source-IP hash and tunnel (istiod applies the
	// tunnel on gateway TCP and TLS-passthrough routes too; only AUTO_PASSTHROUGH chains,
	// gateway_autopassthrough.go, go without). One destination reads its subset's, a weighted
	// set the rule's.
	first := dests[0].GetDestination()
	if dr := rp.ix.routeDestinationRule(resolveHost(first.GetHost(), vsNS)); dr != nil {
		deps = append(deps, dr.Key())
		rule := drSpec(dr)
		tcp := rule.GetTrafficPolicy().GetConnectionPool().GetTcp()
		if d := tcp.GetIdleTimeout(); d != nil {
			tp.IdleTimeout = durationpb.New(d.AsDuration())
		}
		if d := tcp.GetMaxConnectionDuration(); d != nil {
			tp.MaxDownstreamConnectionDuration = durationpb.New(d.AsDuration())
		}
		subsetName := ""
		if len(dests) == 1 {
			subsetName = first.GetSubset()
		}
		tp.HashPolicy = sourceIPHash(rule, subsetName)
		tp.TunnelingConfig = tunnelingConfig(rule, subsetName)
	}
	var names []string
	if len(cs) == 1 {
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: cs[0].cluster}
		names = []string{cs[0].cluster}
	} else {
		w := &tcpproxyv3.TcpProxy_WeightedCluster{}
		for _, c := range cs {
			w.Clusters = append(w.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: c.cluster, Weight: c.weight})
			names = append(names, c.cluster)
		}
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: w}
	}
	tp.StatPrefix = tcpStatPrefix(vsc, dests, names)
	f := &listenerv3.Filter{Name: tcpProxyFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(tp)}}
	return f, names, deps, nil
}

// ---- the generators ----

// build produces the router's listeners and route configurations, and the clusters they use.
func (rp *routerPlan) build() (listeners, routes []Resource, clusters map[string]bool) {
	clusters = map[string]bool{}
	for _, gp := range rp.ports {
		l, cs := rp.listener(gp)
		if l != nil {
			listeners = append(listeners, *l)
		}
		for _, c := range cs {
			clusters[c] = true
		}
		switch gp.kind {
		case kindHTTP:
			r, cs := rp.httpRoutes(gatewayHTTPRouteName(gp), gp.num, gp.servers)
			routes = append(routes, r)
			for _, c := range cs {
				clusters[c] = true
			}
		case kindHTTPS, kindTLS, kindTLSTerm, kindTLSAuto:
			for _, gs := range rp.httpsServers(gp) {
				r, cs := rp.httpRoutes(GatewayHTTPSRouteName(gs), gp.num, []gwServer{gs})
				routes = append(routes, r)
				for _, c := range cs {
					clusters[c] = true
				}
			}
		}
	}
	return listeners, routes, clusters
}

func routerListeners(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	rp := newRouterPlan(p, s)
	ls, _, _ := rp.build()
	return filterNamed(ls, names), errors.Join(rp.errs...)
}

func routerRoutes(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	rp := newRouterPlan(p, s)
	_, rs, _ := rp.build()
	return filterNamed(rs, names), errors.Join(rp.errs...)
}

// routerClusters is the router CDS generator: the outbound clusters its routes reference (that
// exist) and BlackHoleCluster.
func routerClusters(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	rp := newRouterPlan(p, s)
	_, _, used := rp.build()
	want := nameSet(names)
	refs := make(map[string]struct{}, len(used))
	var sniDNAT []ClusterNameParts
	for c := range used {
		if !wanted(want, c) {
			continue
		}
		if cn, err := ParseClusterName(c); err == nil && cn.SNIDNAT {
			sniDNAT = append(sniDNAT, cn)
			continue
		}
		refs[c] = struct{}{}
	}
	var out []Resource
	var err error
	if len(refs) > 0 {
		out, err = outboundClusters(p, s, rp.ix, refs, false)
	}
	if len(sniDNAT) > 0 {
		rs, e := sniDNATClusters(p, s, rp.ix, sniDNAT)
		out = append(out, rs...)
		err = errors.Join(err, e)
	}
	if wanted(want, BlackHoleCluster) {
		out = append(out, Resource{Name: BlackHoleCluster, Message: blackHole()})
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(append(rp.errs, err)...)
}

// filterNamed keeps the wanted resources, sorted by name.
func filterNamed(rs []Resource, names []string) []Resource {
	want := nameSet(names)
	out := rs[:0:0]
	for _, r := range rs {
		if wanted(want, r.Name) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// routerForType returns the router generator of a type URL (EDS is shared with sidecars).
func routerForType(typeURL string) Generator {
	switch typeURL {
	case ClusterType:
		return guarded(routerClusters)
	case EndpointType:
		return guarded(endpoints)
	case ListenerType:
		return guarded(routerListeners)
	case RouteType:
		return guarded(withEveryName(routerRoutes)) // istiod: a draining listener's routes, empty
	}
	return nil
}

// routerKeyScope is KeyScope for routers: the class "router", then for CDS, LDS and RDS the
// namespace (VirtualService matches on sourceNamespace). The labels a router's config reads
// (which Gateways select it, its policies, sourceLabels) are ViewKey's (SelectedLabels). EDS is
// shared with every proxy.
func routerKeyScope(typeURL string, p *model.Proxy) string {
	if typeURL == EndpointType {
		return ""
	}
	return "router|" + p.Namespace
}

// gatewayHCM is a gateway's HTTP connection manager: the sidecar defaults, and the client's
// address taken from the connection (a gateway is the edge: use_remote_address), so that
// x-forwarded-for and internal/external request classification are right, and an
// x-forwarded-client-cert from outside replaced by the gateway's own, as istiod sets it.
func gatewayHCM(h *hcmv3.HttpConnectionManager) *hcmv3.HttpConnectionManager {
	h = sidecarHCM(h)
	h.UseRemoteAddress = wrapperspb.Bool(true)
	h.ForwardClientCertDetails = hcmv3.HttpConnectionManager_SANITIZE_SET
	h.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{Subject: wrapperspb.Bool(true), Cert: true, Dns: true, Uri: true}
	return h
}

// withRBAC puts the router's jwt_authn filter (RequestAuthentication) and HTTP RBAC filters
// first in a gateway HCM's filters, as istiod does for a gateway these policies select.
func (rp *routerPlan) withRBAC(h *hcmv3.HttpConnectionManager) *hcmv3.HttpConnectionManager {
	pre := rp.az.customHTTPFilters()
	if f := rp.jwt.filter(true); f != nil {
		pre = append(pre, f)
	}
	if !rp.az.empty() {
		pre = append(pre, rp.az.httpFilters()...)
	}
	if len(pre) > 0 {
		h.HttpFilters = append(pre, h.HttpFilters...)
	}
	return h
}

// RouterPortKey names the Gateway server ports that a router listens on elsewhere
// (gatewayListenPort), "SERVER>LISTEN" each, sorted and joined by ",": its listeners and their
// route configuration names follow them, and they depend on the router's own address, which
// KeyScope and ViewKey do not name for a router. It is "" for a router none of whose addresses
// is an endpoint of a service translating a selecting Gateway's server port, so routers without
// translation keep sharing bytes. The ADS server adds it to a router's LDS and RDS classes.
func RouterPortKey(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || s == nil || p.Type != model.Router || p.IsGRPC() {
		return ""
	}
	own := false
	for _, ip := range p.IPAddresses {
		if len(s.EndpointsAt(ip)) > 0 {
			own = true
			break
		}
	}
	if !own {
		return ""
	}
	seen := map[uint32]bool{}
	var parts []string
	for _, c := range routerGateways(p, s) {
		for _, srv := range c.Spec.(*networking.Gateway).GetServers() {
			num := srv.GetPort().GetNumber()
			if num == 0 || num > 65535 || seen[num] {
				continue
			}
			seen[num] = true
			if listen, _ := gatewayListenPort(p, s, num); listen != num {
				parts = append(parts, strconv.FormatUint(uint64(num), 10)+">"+strconv.FormatUint(uint64(listen), 10))
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
