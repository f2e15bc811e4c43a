package gen

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Sidecar ingress listeners (Sidecar.ingress), as istiod builds them. A Sidecar with ingress
// listeners replaces the inbound ports its workload's services give it (inboundPorts): each
// ingress port gets the chains a service port would get (its mTLS mode from PeerAuthentication,
// inbound|PORT|| as cluster), and the services' ports it does not list get none (their traffic
// falls to the catch-all chains). An ingress port's cluster sends to its defaultEndpoint (a
// STATIC cluster: 127.0.0.1 or the workload's own IP for 0.0.0.0, or a unix socket) or, without
// one, to where the connection was going (ORIGINAL_DST). With captureMode NONE (or DEFAULT on a
// proxy whose interception mode is NONE) the port gets a listener of its own bound to its bind
// address (the workload's IP by default), named BIND_PORT, instead of chains in virtualInbound.
// The connection pool of the ingress port, else the Sidecar's inboundConnectionPool, overrides
// the DestinationRule's on the inbound cluster (also on the clusters of service-derived ports,
// for inboundConnectionPool). Ingress tls settings are ignored, as istiod ignores them unless
// ENABLE_TLS_ON_SIDECAR_INGRESS is set, which its default is not.

// proxyInboundPorts are the inbound ports of p as its listeners and clusters are built: the
// Sidecar's ingress ports when the proxy's Sidecar has any, else its services' (inboundPorts),
// none for a proxy in interception mode NONE.
func proxyInboundPorts(p *model.Proxy, s *model.Snapshot) ([]inboundPort, []istioconfig.Key) {
	ports, deps := inboundPorts(p, s)
	if p == nil {
		return ports, deps
	}
	sc := s.ScopeFor(p)
	var spec *networking.Sidecar
	if sc != nil && sc.Sidecar != nil {
		spec, _ = sc.Sidecar.Spec.(*networking.Sidecar)
	}
	if len(spec.GetIngress()) == 0 && noneInterception(p) {
		// No iptables: the proxy's services' ports would take the application's own ports, so
		// istiod builds inbound listeners and clusters only from Sidecar ingress listeners.
		return nil, nil
	}
	if spec == nil {
		return ports, deps
	}
	if len(spec.GetIngress()) == 0 {
		if pool := spec.GetInboundConnectionPool(); pool != nil {
			for i := range ports {
				ports[i].pool = pool
			}
			deps = sortDeps(append(deps, sc.Sidecar.Key()))
		}
		return ports, deps
	}
	var out []inboundPort
	seen := map[uint32]bool{}
	for _, in := range spec.GetIngress() {
		n := in.GetPort().GetNumber()
		if seen[n] || n == 0 {
			continue // a port listed twice: the first wins, as istiod keeps the first chain config
		}
		proto := model.ParseProtocol(in.GetPort().GetProtocol())
		bindToPort := bindsToPort(in.GetCaptureMode(), p)
		if !ingressPortBindable(p, in.GetBind(), n, proto, bindToPort) {
			continue // istiod skips it (and logs a warning)
		}
		seen[n] = true
		ip := inboundPort{
			target:      n,
			port:        n,
			protocol:    proto,
			bind:        in.GetBind(),
			bindToPort:  bindToPort,
			pool:        in.GetConnectionPool(),
			fromSidecar: true,
		}
		if ip.pool == nil {
			ip.pool = spec.GetInboundConnectionPool()
		}
		// The service whose endpoint on the proxy targets this port gives the cluster its
		// DestinationRule (istiod's findOrCreateService).
		if i := slices.IndexFunc(ports, func(sp inboundPort) bool { return sp.target == n }); i >= 0 {
			ip.svc = ports[i].svc
		}
		ip.endpoint, ip.endpointPort = ingressEndpoint(in.GetDefaultEndpoint(), p)
		if ip.bind == "" {
			ip.bind = inboundBindIP(p)
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, func(a, b inboundPort) int { return int(a.target) - int(b.target) })
	return out, sortDeps(append(deps, sc.Sidecar.Key()))
}

// ingressPortBindable is istiod's CanBindToPort for a Sidecar ingress port: a privileged port
// (1-1023) the port binds cannot be taken by an unprivileged proxy (UNPRIVILEGED_POD), and a
// port of the agent's own listeners (StaticPorts: status, Prometheus, secure metrics) cannot
// be taken on the wildcard address: bind the proxy's wildcard, or no bind on an HTTP port.
// virtualInbound's own port (15006) is not reserved here, as istiod does not check it on
// ingress.
func ingressPortBindable(p *model.Proxy, bind string, port uint32, proto model.Protocol, bindToPort bool) bool {
	if bindToPort && p.Unprivileged && port < 1024 {
		return false
	}
	if bind != "" && bind != proxyWildcard(p) || bind == "" && !proto.IsHTTP() {
		return true
	}
	return !slices.Contains(p.StaticPorts, port)
}

// proxyIPv4 reports whether the proxy has an IPv4 address, or none at all (istiod's
// SupportsIPv4 and IP mode: a proxy with only IPv6 addresses takes IPv6 wildcards and
// loopbacks).
func proxyIPv4(p *model.Proxy) bool {
	if len(p.IPAddresses) == 0 {
		return true
	}
	for _, a := range p.IPAddresses {
		if ip, err := netip.ParseAddr(a); err != nil || ip.Unmap().Is4() {
			return true
		}
	}
	return false
}

// proxyIPv6 reports whether the proxy has an IPv6 address.
func proxyIPv6(p *model.Proxy) bool {
	for _, a := range p.IPAddresses {
		if ip, err := netip.ParseAddr(a); err == nil && !ip.Unmap().Is4() {
			return true
		}
	}
	return false
}

// proxyDualStack reports whether the proxy has addresses of both families (istiod's IP mode
// Dual). Without istiod's ISTIO_DUAL_STACK (off by default, as in xdslab) such a proxy is built
// as an IPv4 one but for what istiod adds for it regardless: the IPv6 wildcard or loopback
// beside each outbound listener address it picks itself (dualStackExtra) and the IPv6 source
// address of InboundPassthroughCluster.
func proxyDualStack(p *model.Proxy) bool {
	return p != nil && proxyIPv6(p) && slices.ContainsFunc(p.IPAddresses, func(a string) bool {
		ip, err := netip.ParseAddr(a)
		return err == nil && ip.Unmap().Is4()
	})
}

// dualStackExtra is the other address istiod gives an outbound listener on a dual-stack proxy
// when it picked the listener's address itself (its actualWildcards and actualLocalHosts, both
// families there): :: beside the wildcard 0.0.0.0, ::1 beside the loopback 127.0.0.1; "" for any
// other address (a bind the Sidecar names, a VIP) and on any other proxy.
func dualStackExtra(p *model.Proxy, addr string) string {
	if !proxyDualStack(p) {
		return ""
	}
	switch addr {
	case wildcardIP:
		return "::"
	case "127.0.0.1":
		return "::1"
	}
	return ""
}

// withAdditionalAddress gives l the additional address extra on its own port (nothing for "").
func withAdditionalAddress(l *listenerv3.Listener, extra string) {
	if extra == "" {
		return
	}
	l.AdditionalAddresses = append(l.AdditionalAddresses, &listenerv3.AdditionalAddress{
		Address: socketAddress(extra, l.GetAddress().GetSocketAddress().GetPortValue()),
	})
}

// proxyWildcard is the proxy's wildcard address: 0.0.0.0, :: for an IPv6-only proxy.
func proxyWildcard(p *model.Proxy) string {
	if proxyIPv4(p) {
		return wildcardIP
	}
	return "::"
}

// proxyLocalhost is the proxy's loopback address: 127.0.0.1, ::1 for an IPv6-only proxy
// (istiod's actualLocalHosts, first entry).
func proxyLocalhost(p *model.Proxy) string {
	if proxyIPv4(p) {
		return "127.0.0.1"
	}
	return "::1"
}

// bindsToPort reports whether an ingress port with capture mode mode gets a listener of its own
// (binding its port) rather than chains in virtualInbound: NONE does, DEFAULT follows the
// proxy's interception mode.
func bindsToPort(mode networking.CaptureMode, p *model.Proxy) bool {
	if mode == networking.CaptureMode_DEFAULT {
		return p.InterceptionMode == "NONE" // case-sensitive, as istiod's GetInterceptionMode
	}
	return mode == networking.CaptureMode_NONE
}

// inboundBindIP is the address an ingress port without bind listens on: the proxy's first
// global unicast IP, else its wildcard (istiod's getSidecarInboundBindIPs).
func inboundBindIP(p *model.Proxy) string {
	for _, a := range p.IPAddresses {
		if ip := net.ParseIP(a); ip != nil && ip.IsGlobalUnicast() {
			return a
		}
	}
	return proxyWildcard(p)
}

// ingressEndpoint resolves an ingress defaultEndpoint to the address and port its STATIC cluster
// sends to: "unix://…" as it is, 127.0.0.1 (::1 on an IPv6-only proxy), ::1 (127.0.0.1 on a
// proxy without IPv6 address), 0.0.0.0 for the proxy's first IPv4 address (127.0.0.1 without one), :: for its
// first IPv6 address (::1 without one). Anything else, or none, is "": the cluster is
// ORIGINAL_DST.
func ingressEndpoint(def string, p *model.Proxy) (string, uint32) {
	if strings.HasPrefix(def, model.UnixAddressPrefix) {
		return def, 0
	}
	if def == "" {
		return "", 0
	}
	host, portText, err := net.SplitHostPort(def)
	if err != nil {
		return "", 0
	}
	port, err := strconv.Atoi(portText) // as istiod reads it ("+8080" is 8080); validate bounds it
	if err != nil || port < 0 || port > 65535 {
		return "", 0
	}
	first := func(v4 bool, fallback string) string {
		for _, a := range p.IPAddresses {
			if ip, err := netip.ParseAddr(a); err == nil && ip.Is4() == v4 {
				return a
			}
		}
		return fallback
	}
	switch host {
	case "127.0.0.1":
		// istiod's actualLocalHosts: 127.0.0.1 unless the proxy has only IPv6 addresses.
		return proxyLocalhost(p), uint32(port)
	case "::1":
		// ::1 when the proxy has an IPv6 address, else 127.0.0.1.
		if proxyIPv6(p) {
			return "::1", uint32(port)
		}
		return "127.0.0.1", uint32(port)
	case "0.0.0.0":
		return first(true, "127.0.0.1"), uint32(port)
	case "::":
		return first(false, "::1"), uint32(port)
	}
	return "", uint32(port)
}

// inboundAssignment is the load assignment of a STATIC inbound cluster to addr (an IP, or a
// unix socket as unix://PATH) and port.
func inboundAssignment(name, addr string, port uint32) *endpointv3.ClusterLoadAssignment {
	a := socketAddress(addr, port)
	if path, ok := strings.CutPrefix(addr, model.UnixAddressPrefix); ok {
		a = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: a}}}},
	}}}
}
