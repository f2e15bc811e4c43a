package gen

import (
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Sidecar egress listeners with a port of an HTTP protocol, TCP, MONGO or none (sniffed) and a
// bind address or captureMode NONE, as istiod builds them: the services the egress listener
// imports on that port share one listener BIND_PORT on its bind address (the proxy's loopback,
// 127.0.0.1 or ::1 on an IPv6-only proxy, under captureMode NONE without one) instead of 0.0.0.0_PORT and their VIP listeners: for HTTP a
// single HTTP connection manager chain (no HTTP inspector, no passthrough chain) fetching route
// configuration PORT, for TCP their tcp_proxy chains merged as on a shared VIP, for a sniffed
// port the first service's TCP and HTTP chains (route configuration HOST:PORT), as on its VIP. It binds its port under captureMode
// NONE; with a bind address and the default capture mode it takes connections iptables hands
// over (bind_to_port false). The catch-all egress listener still builds 0.0.0.0_PORT for the
// services it imports on the port. TLS and HTTPS ports, unix socket binds, captureMode NONE
// with a 0.0.0.0 bind and HTTP_PROXY ports are not generated (xdslab validate warns).

// addBoundTCPPort adds port of svc to the bound TCP (or sniffed) listener of b: as for a service whose only
// address is the bind address (istiod keys the listener by bind and port, whatever the
// service's VIPs), its tcp_proxy chains merged with those of the services before it on the
// port (addOutboundPort). The listener binds its port under captureMode NONE (boundNames:
// true), and depends on the Sidecar (sidecars).
func addBoundTCPPort(b boundEgress, svc *model.Service, add func(*model.Service), boundNames map[string]bool, sidecars map[string]istioconfig.Key, port uint32) {
	at := *svc
	at.Addresses = []string{b.bind}
	add(&at)
	name := ListenerName(b.bind, port)
	sidecars[name] = b.sidecar
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

// boundEgressPort reports whether port (its protocol already the egress listener's) is held by
// an egress listener of sc that binds it to an address, and how: captureMode NONE without a
// bind takes localhost, the proxy's loopback (127.0.0.1, ::1 on an IPv6-only proxy: istiod's
// actualLocalHosts).
func boundEgressPort(sc *model.Scope, port model.Port, localhost string) (boundEgress, bool) {
	if sc == nil || sc.Sidecar == nil || !sc.HoldsPort(port.Number) || !port.Protocol.IsHTTP() && port.Protocol != model.ProtocolTCP && port.Protocol != model.ProtocolMongo && port.Protocol != model.ProtocolMySQL && port.Protocol != model.ProtocolUnknown {
		return boundEgress{}, false
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	for _, eg := range spec.GetEgress() {
		if eg.GetPort().GetNumber() != port.Number {
			continue
		}
		none := eg.GetCaptureMode() == networking.CaptureMode_NONE
		switch {
		case strings.EqualFold(eg.GetPort().GetProtocol(), "HTTP_PROXY"):
			return boundEgress{}, false // not generated
		case strings.HasPrefix(eg.GetBind(), model.UnixAddressPrefix), eg.GetBind() == wildcardIP:
			// A wildcard bind is the usual 0.0.0.0_PORT listener (not generated bound to its
			// port under captureMode NONE).
			return boundEgress{}, false
		case eg.GetBind() != "":
			return boundEgress{bind: eg.GetBind(), bindToPort: none, sidecar: sc.Sidecar.Key()}, true
		case none:
			return boundEgress{bind: localhost, bindToPort: true, sidecar: sc.Sidecar.Key()}, true
		}
		return boundEgress{}, false
	}
	return boundEgress{}, false
}

// addBoundHTTPPort adds port of svc to the bound listener b names, creating it for the first
// service (whose protocol it keeps: istiod's later HTTP services on it change nothing).
func addBoundHTTPPort(b boundEgress, svc *model.Service, port model.Port, bound map[string]*boundHTTP, taken map[string]takenBy) {
	name := ListenerName(b.bind, port.Number)
	bh := bound[name]
	if bh == nil {
		bh = &boundHTTP{boundEgress: b, port: port.Number, grpcWeb: port.Protocol == model.ProtocolGRPCWeb, deps: []istioconfig.Key{b.sidecar}}
		bound[name] = bh
		taken[name] = takenBy{svc.Hostname, port.Protocol}
	}
	bh.deps = append(bh.deps, ServiceKey(svc))
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
