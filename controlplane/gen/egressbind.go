package gen

import (
	"fmt"
	"net/netip"
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
// MYSQL, TLS and HTTPS their chains merged as on a shared VIP (a TLS service whose address is a
// CIDR matches by SNI, others everything); for a sniffed port the first service's TCP and HTTP
// chains (route configuration HOST:PORT), as on its VIP, also without a VIP. A port's services
// of different protocols meet as istiod's listener conflicts have them: a sniffed service
// replaces an HTTP one's listener, anything else keeps the first. The catch-all egress listener
// builds a port the egress listener holding it built on another address (0.0.0.0_PORT under a
// held bind). Unix socket binds, a 0.0.0.0 bind that binds its port and HTTP_PROXY ports are not
// generated (xdslab validate warns).

// addBoundTCPPort adds port of svc to the bound TCP (or TLS, or sniffed) listener of b: as for
// a service whose only address is the bind address (istiod keys the listener by bind and port,
// whatever the service's VIPs), its tcp_proxy chains merged with those of the services before
// it on the port (addOutboundPort). The listener binds its port under captureMode NONE
// (boundNames: true), and depends on the Sidecar (sidecars).
func addBoundTCPPort(b boundEgress, svc *model.Service, add func(*model.Service), boundNames map[string]bool, sidecars map[string]istioconfig.Key, port uint32) {
	at := *svc
	at.Addresses = []string{b.bind}
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
	// sidecar is the Sidecar whose egress listener binds the port: the listener's address
	// and bind_to_port come from it.
	sidecar istioconfig.Key
}

// boundHTTP collects the services of one bound HTTP egress port.
type boundHTTP struct {
	boundEgress
	port    uint32
	grpcWeb bool
	deps    []istioconfig.Key
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
		if held && eg.GetPort().GetNumber() == num && num != 0 || !held && model.EgressPort(eg) == 0 {
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
)

// egressBinding reports how the outbound listeners of port (its protocol already the one it is
// built by) are bound when the pass (held: the egress listener holding the port; else the
// catch-all listener, or the whole mesh without a Sidecar) builds them, as istiod's
// buildSidecarOutboundListeners decides: a proxy in interception mode NONE binds every port
// whatever the capture mode, else captureMode NONE does; a bound port listens on the egress
// listener's bind address, else on the proxy's loopback (127.0.0.1, ::1 on an IPv6-only proxy:
// istiod's actualLocalHosts); a bind address without captureMode NONE gives BIND_PORT listeners
// that do not bind (iptables hands them their connections). An unprivileged proxy cannot bind a
// privileged port (istiod's CanBindToPort): skipped. Not generated (unbound, xdslab validate
// warns): unix socket and 0.0.0.0 binds, HTTP_PROXY ports, and protocols other than HTTP,
// TCP, MONGO, MYSQL, TLS, HTTPS or none.
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
	bind := eg.GetBind()
	switch {
	case strings.EqualFold(eg.GetPort().GetProtocol(), "HTTP_PROXY"),
		strings.HasPrefix(bind, model.UnixAddressPrefix), bind == wildcardIP:
		// Not generated: the usual listeners (a wildcard bind without captureMode NONE is
		// them, but for bind_to_port).
		return boundEgress{}, unbound
	case bind == "" && !bindToPort:
		return boundEgress{}, unbound
	case bind == "":
		bind = proxyLocalhost(p)
	}
	if bindToPort && p != nil && p.Unprivileged && port.Number < 1024 {
		return boundEgress{}, skipped
	}
	b := boundEgress{bind: bind, bindToPort: bindToPort}
	if sc != nil && sc.Sidecar != nil {
		b.sidecar = sc.Sidecar.Key()
	}
	return b, bound
}

// addBoundHTTPPort adds port of svc to the bound listener b names, creating it for the first
// service (whose protocol it keeps: istiod's later HTTP services on it change nothing). A
// listener the egress listener holding the port built (locked) takes nothing from the
// catch-all one, and a TCP or sniffed listener already there keeps the address: istiod merges
// the HTTP chain into it only where its chains leave the traffic unmatched, which a TCP
// listener's catch-all chain never does (HTTPOverTCP), and a sniffed one takes no more HTTP.
func addBoundHTTPPort(b boundEgress, svc *model.Service, port model.Port, bound map[string]*boundHTTP, taken map[string]takenBy, locked map[string]bool) error {
	name := ListenerName(b.bind, port.Number)
	if locked[name] {
		return nil
	}
	bh := bound[name]
	if bh == nil {
		if prev, ok := taken[name]; ok {
			if prev.proto.IsHTTP() || prev.proto == model.ProtocolUnknown {
				return nil
			}
			// The listener is sniffed from now on (a later sniffed service adds nothing), as
			// istiod marks it, unless MONGO or MYSQL keep their own protocol.
			if prev.proto != model.ProtocolMongo && prev.proto != model.ProtocolMySQL {
				taken[name] = takenBy{prev.host, model.ProtocolUnknown}
			}
			return fmt.Errorf("LDS: services %s and %s both use %s:%d; %s's TCP chains keep it, %s adds no HTTP chain", prev.host, svc.Hostname, b.bind, port.Number, prev.host, svc.Hostname)
		}
		bh = &boundHTTP{boundEgress: b, port: port.Number, grpcWeb: port.Protocol == model.ProtocolGRPCWeb}
		if b.sidecar != (istioconfig.Key{}) {
			bh.deps = []istioconfig.Key{b.sidecar}
		}
		bound[name] = bh
		taken[name] = takenBy{svc.Hostname, port.Protocol}
	}
	bh.deps = append(bh.deps, ServiceKey(svc))
	return nil
}

// boundOverHTTP settles a TCP, TLS or sniffed port of svc meeting the bound HTTP listener
// name (addBoundHTTPPort) as istiod does: a sniffed service replaces the listener with its own
// (AutoOverHTTP: ok true, the caller builds it), other protocols add nothing to it (their
// catch-all chain conflicts with the HTTP one) but make it sniffed, so that no later sniffed
// service replaces it (TCPOverHTTP), unless MONGO or MYSQL, which istiod keeps apart.
func boundOverHTTP(name string, svc *model.Service, port model.Port, bound map[string]*boundHTTP, taken map[string]takenBy) (ok bool, err error) {
	prev := taken[name]
	if !prev.proto.IsHTTP() {
		// Already sniffed by an earlier TCP service: istiod keeps it as it is.
		return false, fmt.Errorf("LDS: services %s and %s both use %s; %s keeps it", prev.host, svc.Hostname, name, prev.host)
	}
	if port.Protocol == model.ProtocolUnknown {
		delete(bound, name)
		delete(taken, name)
		return true, nil
	}
	if port.Protocol != model.ProtocolMongo && port.Protocol != model.ProtocolMySQL {
		taken[name] = takenBy{prev.host, model.ProtocolUnknown}
	}
	return false, fmt.Errorf("LDS: services %s and %s both use %s; %s keeps it", prev.host, svc.Hostname, name, prev.host)
}

// listener is the bound listener named name.
func (bh *boundHTTP) listener(name string) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:             name,
		Address:          socketAddress(bh.bind, bh.port),
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{hcmFilter(withGRPCWeb(sidecarHCM(rdsHCM("outbound_"+name, strconv.FormatUint(uint64(bh.port), 10))), bh.grpcWeb))},
		}},
	}
	if !bh.bindToPort {
		l.BindToPort = wrapperspb.Bool(false)
	}
	return l
}

// boundPort is what addOutboundPort builds differently for a port on a bound listener.
type boundPort struct {
	// sni is the host name the service's own chain of a TLS port matches (boundSNI).
	sni string
}

// sniHost is bp's sni, "" for nil.
func (bp *boundPort) sniHost() string {
	if bp == nil {
		return ""
	}
	return bp.sni
}

// boundSNI is the host name the chain of a TLS or HTTPS port of svc matches by SNI on a bound
// listener (its tls routes aside), "" for none: as istiod matches by SNI a service whose
// address is a CIDR, not one with an IP or none (0.0.0.0, which is not the bind address).
func boundSNI(svc *model.Service, port model.Port) string {
	if port.Protocol != model.ProtocolTLS && port.Protocol != model.ProtocolHTTPS || len(svc.Addresses) == 0 {
		return ""
	}
	if pfx, err := netip.ParsePrefix(svc.Addresses[0]); err == nil && !pfx.IsSingleIP() {
		return svc.Hostname
	}
	return ""
}
