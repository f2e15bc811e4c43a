package validate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

// Gateway port kinds: what a router's listener on a port is. One port carries one kind (HTTPS,
// TLS termination and TLS passthrough together, told apart by SNI); the router generator skips
// a server whose kind cannot share the port with its first server's.
const (
	PortHTTP           = "HTTP"
	PortHTTPS          = "HTTPS"
	PortTLSTerminated  = "TLS termination"
	PortTLSPassthrough = "TLS passthrough"
	PortTLSAuto        = "TLS auto passthrough"
	PortTCP            = "TCP"
)

// GatewayPortKind is the kind of listener a Gateway server asks for, "" for a server the
// router generator does not generate (an unsupported protocol or TLS mode; notGeneratedGateway
// and the generator say why).
func GatewayPortKind(srv *networking.Server) string {
	k, _ := GatewayServerKind(srv)
	return k
}

// GatewayServerKind is GatewayPortKind, with why a server the router skips is skipped.
func GatewayServerKind(srv *networking.Server) (string, error) {
	proto := strings.ToUpper(srv.GetPort().GetProtocol())
	switch proto {
	case "HTTP", "HTTP2", "GRPC", "GRPC-WEB":
		return PortHTTP, nil
	case "HTTPS", "TLS":
		t := srv.GetTls()
		switch m := t.GetMode(); {
		case m == networking.ServerTLSSettings_PASSTHROUGH:
			return PortTLSPassthrough, nil
		case m == networking.ServerTLSSettings_AUTO_PASSTHROUGH:
			return PortTLSAuto, nil
		case proto == "HTTPS":
			return PortHTTPS, nil
		default:
			return PortTLSTerminated, nil
		}
	case "TCP", "MONGO", "REDIS", "MYSQL":
		return PortTCP, nil
	}
	return "", fmt.Errorf("protocol %q is not supported on a gateway server; use HTTP, HTTP2, GRPC, HTTPS, TLS or TCP; server skipped", srv.GetPort().GetProtocol())
}

// analyzeGatewayPorts reports Gateway servers that ask for one port with different kinds of
// listener (HTTP and TCP, say) on routers both Gateways select: a router has one listener per
// port, so the control plane keeps the first server's kind and skips the other (and warns at
// every push). Two selectors can select one router when no label has two different values in
// them (a router with both selectors' labels matches both).
func analyzeGatewayPorts(cfgs []*istioconfig.Config) []Finding {
	type server struct {
		c    *istioconfig.Config
		sel  map[string]string
		idx  int
		kind string
	}
	byPort := map[uint32][]server{}
	for _, c := range cfgs {
		gw, ok := c.Spec.(*networking.Gateway)
		if !ok || c.Kind != istioconfig.KindGateway {
			continue
		}
		for i, srv := range gw.GetServers() {
			if k := GatewayPortKind(srv); k != "" {
				n := srv.GetPort().GetNumber()
				byPort[n] = append(byPort[n], server{c: c, sel: gw.GetSelector(), idx: i, kind: k})
			}
		}
	}
	var out []Finding
	for _, n := range slices.Sorted(maps.Keys(byPort)) {
		srvs := byPort[n]
		for j, b := range srvs {
			for _, a := range srvs[:j] {
				if sharePort(a.kind, b.kind) || !compatible(a.sel, b.sel) {
					continue
				}
				where := "in the same Gateway"
				if a.c != b.c {
					where = fmt.Sprintf("in Gateway %s/%s (servers[%d])", a.c.Namespace, a.c.Name, a.idx)
				}
				out = append(out, Finding{
					Object: fmt.Sprintf("%s %s/%s", b.c.Kind, b.c.Namespace, b.c.Name), Source: b.c.Source,
					Path: Path{"spec", "servers", b.idx, "port", "number"}.String(),
					Msg: fmt.Sprintf("port %d is %s here but %s %s, and a router labelled %s gets both: it has one listener per port, so one of the two servers is skipped; give one of them another port",
						n, b.kind, a.kind, where, labelsText(union(a.sel, b.sel))),
				})
				break // one finding per server
			}
		}
	}
	return out
}

// sharePort reports whether servers of kinds a and b can share a router's port: the same kind,
// or two of HTTPS, TLS termination and TLS (auto) passthrough, whose filter chains SNI picks (one
// listener, as istiod builds).
func sharePort(a, b string) bool {
	sni := func(k string) bool {
		return k == PortHTTPS || k == PortTLSTerminated || k == PortTLSPassthrough || k == PortTLSAuto
	}
	return a == b || sni(a) && sni(b)
}

// compatible reports whether one set of labels can match both selectors: no key has two
// different values.
func compatible(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

func union(a, b map[string]string) map[string]string {
	u := maps.Clone(a)
	if u == nil {
		u = map[string]string{}
	}
	maps.Copy(u, b)
	return u
}

func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "with any labels"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
