package gen

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Sidecar egress listeners bound to an address, and proxies in interception mode NONE, as
// istiod builds them (its buildSidecarOutboundListeners). An egress listener (with a port, or
// the catch-all one without) binds its ports when the proxy's INTERCEPTION_MODE is NONE or the
// listener's captureMode is NONE, on its bind address, else on the proxy's loopback (127.0.0.1,
// ::1 on an IPv6-only proxy); with a bind address and the default capture mode on a REDIRECT
// proxy its listeners are on that address but do not bind (iptables hands them connections).
// The services the egress listener imports on a port then share one listener BIND_PORT instead
// of 0.0.0.0_PORT and their VIP listeners: for HTTP a single HTTP connection manager chain (no
// HTTP inspector, no passthrough chain) fetching route configuration PORT; for TCP, MONGO,
// MYSQL, TLS and HTTPS their chains merged as on a shared VIP (a TLS service matches by SNI
// for a CIDR address, everything for an IP or no address, both for both); for a sniffed port
// the first service's TCP and HTTP chains (route configuration HOST:PORT), as on its VIP, also
// without a VIP. A port's services
// of different protocols meet as istiod's listener conflicts have them: a sniffed service
// replaces an HTTP one's listener; an HTTP chain and TCP chains merge where their matches
// differ (an SNI chain beside the HTTP chain, which takes the rest); MONGO and MYSQL and a
// sniffed listener keep the first. The catch-all egress listener
// builds a port the egress listener holding it built on another address (0.0.0.0_PORT under a
// held bind). A 0.0.0.0 bind that binds its port (captureMode NONE, interception mode NONE)
// binds 0.0.0.0_PORT, which the port's services join as services without a VIP do. HTTP_PROXY
// ports and unix socket binds on port 0 are HTTP proxy listeners (httpproxy.go); a unix
// socket bind on the catch-all listener is not generated (xdslab validate warns).

// addBoundTCPPort adds port of svc to the bound TCP (or TLS, or sniffed) listener of b: as for
// a service whose only address is the bind address (istiod keys the listener by bind and port,
// whatever the service's VIPs), its tcp_proxy chains merged with those of the services before
// it on the port (addOutboundPort). The listener binds its port under captureMode NONE
// (boundNames: true), and depends on the Sidecar (sidecars).
func addBoundTCPPort(b boundEgress, svc *model.Service, add func(*model.Service), boundNames map[string]bool, sidecars map[string]istioconfig.Key, port uint32) {
	at := *svc
	at.Addresses = []string{b.bind} // never the wildcard: egressBinding makes that boundWild
	add(&at)
	name := ListenerName(b.bind, port)
	if b.sidecar != (istioconfig.Key{}) {
		sidecars[name] = b.sidecar
	}
	if b.bindToPort {
		boundNames[name] = true
	}
}

// boundEgress is what an egress port bound to an address puts on its listener.
type boundEgress struct {
	bind       string
	bindToPort bool
	// extra is the listener's additional address: ::1 beside a loopback bind istiod picked
	// for a dual-stack proxy (dualStackExtra).
	extra string
	// sidecar is the Sidecar whose egress listener binds the port: the listener's address
	// and bind_to_port come from it.
	sidecar istioconfig.Key
}

// noneInterception reports whether the proxy's INTERCEPTION_MODE is NONE (compared
// case-sensitively, as istiod's GetInterceptionMode does: "none" is REDIRECT): no iptables, so
// no virtual listeners, every outbound listener binds its port, and no inbound config comes
// from the proxy's services (only from its Sidecar's ingress listeners).
func noneInterception(p *model.Proxy) bool {
	return p != nil && p.InterceptionMode == "NONE"
}

// egressOf is the egress listener of sc's Sidecar a pass builds port from: with held the one
// that holds the port, else the catch-all one (the first without a port); nil without a
// Sidecar or such a listener.
func egressOf(sc *model.Scope, num uint32, held bool) *networking.IstioEgressListener {
	if sc == nil || sc.Sidecar == nil {
		return nil
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	for _, eg := range spec.GetEgress() {
		if held && eg.GetPort().GetNumber() == num && num != 0 || !held && eg.GetPort() == nil {
			return eg
		}
	}
	return nil
}

// bindOutcome is what egressBinding decides for a service port's outbound listeners.
type bindOutcome int

const (
	// unbound: the usual listeners (VIP_PORT, 0.0.0.0_PORT), handed over by virtualOutbound.
	unbound bindOutcome = iota
	// bound: one listener BIND_PORT for the egress listener's services on the port.
	bound
	// skipped: none at all (a privileged port an unprivileged proxy cannot bind).
	skipped
	// boundWild: 0.0.0.0_PORT binding its port, for every service of the egress listener on
	// the port (a VIP changes nothing).
	boundWild
)

// egressBinding reports how the outbound listeners of port (its protocol already the one it is
// built by) are bound when the pass (held: the egress listener holding the port; else the
// catch-all listener, or the whole mesh without a Sidecar) builds them, as istiod's
// buildSidecarOutboundListeners decides: a proxy in interception mode NONE binds every port
// whatever the capture mode, else captureMode NONE does; a bound port listens on the egress
// listener's bind address, else on the proxy's loopback (127.0.0.1, ::1 on an IPv6-only proxy:
// istiod's actualLocalHosts); a bind address without captureMode NONE gives BIND_PORT listeners
// that do not bind (iptables hands them their connections). An unprivileged proxy cannot bind a
// privileged port (istiod's CanBindToPort): skipped. A wildcard bind is the proxy's (0.0.0.0,
// or :: on an IPv6-only proxy, istiod's actualWildcard; the other is an address like any
// other). A 0.0.0.0 bind that binds its port is
// boundWild (the virtual listeners' and the agent's ports skipped); one that does not is
// boundWild too for a TCP, TLS or sniffed port (one 0.0.0.0_PORT instead of the VIP listeners,
// not binding) and the usual listener for an HTTP port. Not generated (unbound, xdslab
// validate warns): a unix socket bind on the catch-all listener.
// UDP ports have no listener either way.
func egressBinding(p *model.Proxy, sc *model.Scope, port model.Port, held bool) (boundEgress, bindOutcome) {
	eg := egressOf(sc, port.Number, held)
	if held && eg == nil {
		return boundEgress{}, unbound
	}
	switch port.Protocol {
	case model.ProtocolTCP, model.ProtocolMongo, model.ProtocolMySQL, model.ProtocolUnknown, model.ProtocolTLS, model.ProtocolHTTPS:
	default:
		if !port.Protocol.IsHTTP() {
			return boundEgress{}, unbound
		}
	}
	bindToPort := noneInterception(p) || eg.GetCaptureMode() == networking.CaptureMode_NONE
	bind, extra := eg.GetBind(), ""
	wild := false
	// The proxy's wildcard, as istiod's actualWildcard: 0.0.0.0, or :: on an IPv6-only proxy
	// (where 0.0.0.0 is an address like any other, and :: is one on an IPv4 proxy).
	wildcard := proxyWildcard(p)
	switch {
	case strings.HasPrefix(bind, model.UnixAddressPrefix):
		// Not generated on the catch-all listener: the usual listeners. (An HTTP_PROXY
		// port and a unix socket on port 0 are built by httpproxy.go, not per service port.)
		return boundEgress{}, unbound
	case bind == wildcard && (port.Number == VirtualOutboundPort || port.Number == VirtualInboundPort || p != nil && slices.Contains(p.StaticPorts, port.Number)):
		// istiod's CanBindToPort: a reserved port of the wildcard, whether or not the
		// listener binds it.
		return boundEgress{}, skipped
	case bind == wildcard && !bindToPort && port.Protocol.IsHTTP():
		return boundEgress{}, unbound // the usual 0.0.0.0_PORT listener
	case bind == wildcard:
		// Bound (captureMode NONE, interception mode NONE) or, for a TCP, TLS or sniffed port,
		// one 0.0.0.0_PORT that does not bind, which the port's services share instead of their
		// VIP listeners, as for any bind address (istiod keys the listener by bind and port).
		wild = true
	case bind == "" && !bindToPort:
		return boundEgress{}, unbound
	case bind == "":
		bind = proxyLocalhost(p)
		extra = dualStackExtra(p, bind)
	}
	if bindToPort && p != nil && p.Unprivileged && port.Number < 1024 {
		return boundEgress{}, skipped
	}
	b := boundEgress{bind: bind, bindToPort: bindToPort, extra: extra}
	if sc != nil && sc.Sidecar != nil {
		b.sidecar = sc.Sidecar.Key()
	}
	if wild {
		return b, boundWild
	}
	return b, bound
}

// addBoundHTTPPort adds port of svc to the bound listener b names (to tcp, with the TCP
// listeners, as istiod keeps them in one map), creating it for the first service: one HTTP
// connection manager chain without a match (no HTTP inspector), fetching route configuration
// PORT, whose protocol (GRPC-WEB's filter) is the first service's. A listener the egress
// listener holding the port built (locked) takes nothing from the catch-all one. On a listener
// already there, as istiod's conflicts go: another HTTP service or a sniffed one's listener
// changes nothing; on a TCP one's (HTTPOverTCP) the HTTP chain joins where the TCP chains leave
// traffic unmatched (they match by SNI or destination prefix: it becomes the default chain),
// and the listener is sniffed from then on; MONGO and MYSQL keep theirs.
func addBoundHTTPPort(p *model.Proxy, ix *index, b boundEgress, svc *model.Service, port model.Port, tcp *[]Resource, taken map[string]takenBy, locked map[string]bool, want map[string]struct{}) error {
	name := ListenerName(b.bind, port.Number)
	if locked[name] {
		return nil
	}
	chain := &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{hcmFilter(withDFP(withGRPCWeb(sidecarHCM(rdsHCM("outbound_"+name, strconv.FormatUint(uint64(port.Number), 10))), port.Protocol == model.ProtocolGRPCWeb), svc, p))},
	}
	prev, ok := taken[name]
	if !ok {
		taken[name] = takenBy{svc.Hostname, port.Protocol}
		if !wanted(want, name) {
			return nil
		}
		l := &listenerv3.Listener{
			Name:             name,
			Address:          socketAddress(b.bind, port.Number),
			TrafficDirection: corev3.TrafficDirection_OUTBOUND,
			FilterChains:     []*listenerv3.FilterChain{chain},
		}
		if !b.bindToPort {
			l.BindToPort = wrapperspb.Bool(false)
		}
		withAdditionalAddress(l, b.extra)
		deps := []istioconfig.Key{ServiceKey(svc)}
		if b.sidecar != (istioconfig.Key{}) {
			deps = append(deps, b.sidecar)
		}
		*tcp = append(*tcp, Resource{Name: name, Message: l, Deps: sortDeps(deps)})
		return nil
	}
	r := findResource(*tcp, name)
	switch {
	case prev.proto.IsHTTP() || prev.proto == model.ProtocolUnknown:
		if r != nil && prev.proto.IsHTTP() && !slices.Contains(r.Deps, ServiceKey(svc)) {
			r.Deps = sortDeps(append(slices.Clone(r.Deps), ServiceKey(svc)))
		}
		return nil
	case prev.proto == model.ProtocolMongo || prev.proto == model.ProtocolMySQL:
		return fmt.Errorf("LDS: services %s (%s) and %s (%s) both use %s; %s shares a listener with its own protocol only, %s keeps it", prev.host, prev.proto, svc.Hostname, port.Protocol, name, prev.proto, prev.host)
	}
	taken[name] = takenBy{prev.host, model.ProtocolUnknown}
	if r == nil {
		return nil
	}
	fb := fallbackOf(ix.scope)
	dropped := mergeTCPChains(r.Message.(*listenerv3.Listener), nil, chain, fb)
	r.Deps = sortDeps(append(append(slices.Clone(r.Deps), ServiceKey(svc)), fb.deps()...))
	if dropped > 0 {
		return fmt.Errorf("LDS: services %s and %s both use %s; %s's TCP chains keep it, %s adds no HTTP chain", prev.host, svc.Hostname, name, prev.host, svc.Hostname)
	}
	return nil
}

// replaceBoundHTTP removes the bound HTTP listener name, which a sniffed service replaces with
// its own, as istiod does (AutoOverHTTP). It reports whether there was one.
func replaceBoundHTTP(name string, tcp *[]Resource, taken map[string]takenBy) bool {
	if prev, ok := taken[name]; !ok || !prev.proto.IsHTTP() {
		return false
	}
	delete(taken, name)
	*tcp = slices.DeleteFunc(*tcp, func(r Resource) bool { return r.Name == name })
	return true
}

// boundPort is what addOutboundPort builds differently for a port on a bound listener.
type boundPort struct {
	// sni is the host name the service's own chain of a TLS port matches (boundSNI), "" for
	// a chain that matches everything.
	sni string
	// alsoAll: a TLS port with sni also has the chain that matches everything (boundSNI).
	alsoAll bool
	// wild: the listener is bound on the wildcard address, where the port joins 0.0.0.0_PORT
	// as a service without a VIP does; a TLS port there matches by SNI (tlsSNI: no address or
	// a CIDR) and everything (tlsAll: an IP), as istiod reads it per address.
	wild, tlsSNI, tlsAll bool
}

// wildTLS is boundPort of a service port on a listener bound on the wildcard address.
func wildTLS(svc *model.Service) *boundPort {
	bp := &boundPort{wild: true, tlsSNI: len(svc.Addresses) == 0}
	for _, a := range svc.Addresses {
		if pfx, err := netip.ParsePrefix(a); err == nil && !pfx.IsSingleIP() {
			bp.tlsSNI = true
		} else {
			bp.tlsAll = true
		}
	}
	return bp
}

// sniHost is bp's sni, "" for nil.
func (bp *boundPort) sniHost() string {
	if bp == nil {
		return ""
	}
	return bp.sni
}

// boundTLSChains reads the addresses of a TLS or HTTPS service on a bound listener as istiod
// builds a service per address there: its own chain (its tls routes aside) matches its host
// name by SNI for a CIDR address and everything for an IP (not the bind address) or no address
// (istiod's 0.0.0.0). sni is the host name when some address is a CIDR, and alsoAll whether
// the chain that matches everything comes too (some address is not a CIDR).
func boundTLSChains(svc *model.Service, port model.Port) *boundPort {
	if port.Protocol != model.ProtocolTLS && port.Protocol != model.ProtocolHTTPS {
		return &boundPort{}
	}
	bp := &boundPort{}
	if svc.DynamicForwardProxy() {
		// Its host by SNI, whatever the bind, as istiod matches a dynamic forward proxy's
		// TLS port (dfp.go).
		bp.sni = svc.Hostname
		return bp
	}
	if len(svc.Addresses) == 0 {
		return bp
	}
	for _, a := range svc.Addresses {
		if pfx, err := netip.ParsePrefix(a); err == nil && !pfx.IsSingleIP() {
			bp.sni = svc.Hostname
		} else {
			bp.alsoAll = true
		}
	}
	return bp
}
