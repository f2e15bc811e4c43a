package gen

import (
	"errors"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Protocol sniffing (issue 26, item 12). A ServiceEntry port without a protocol is sniffed, as
// istiod does: its VIP listener sends what the HTTP inspector recognises as HTTP to a route
// configuration of the service's own, "HOST:PORT" (one virtual host, domains "*", the
// service's VirtualService routes or the default route), and everything else over TCP
// (lds.go, sniffed); its cluster speaks upstream the protocol the downstream spoke
// (use_downstream_protocol, cds.go).

// sniffedPorts lists the service ports of s that p sees and sniffs (no declared protocol), with
// or without a VIP: as istiod, route configuration HOST:PORT is answered whatever listener
// asks for it (a VIP listener, a headless Service's listener per endpoint, a bound listener
// of a proxy in interception mode NONE; egressbind.go).
func sniffedPorts(s *model.Snapshot, sc *model.Scope) map[string]sniffedPort {
	out := map[string]sniffedPort{}
	for _, svc := range visibleServices(s, sc) {
		for _, port := range svc.Ports {
			if sniffedBy(sc, svc, port, true) || sniffedBy(sc, svc, port, false) {
				out[HostPortName(svc.Hostname, port.Number)] = sniffedPort{svc: svc, port: port}
			}
		}
	}
	return out
}

// perEndpoint reports whether svc's ports not served through HTTP get a listener per endpoint
// rather than the 0.0.0.0 one (model.Service.ListenersPerEndpoint): a ServiceEntry without a
// workloadSelector has them only when it has endpoints.
func perEndpoint(s *model.Snapshot, svc *model.Service) bool {
	return svc.ListenersPerEndpoint() && (!svc.WildcardWithoutEndpoints() || len(s.Endpoints(svc.Hostname)) > 0)
}

// sniffedBy reports whether the egress listener of one pass (outboundSource) builds a sniffed
// listener for port of svc.
func sniffedBy(sc *model.Scope, svc *model.Service, port model.Port, held bool) bool {
	return outboundSource(sc, svc, port.Number, held) != nil && listenerProtocol(sc, port, held) == model.ProtocolUnknown
}

// sniffedWithoutVIP reports whether port of svc is sniffed on the 0.0.0.0_PORT listener: no
// declared protocol and no address. As istiod does, the listener's HTTP chain routes what the
// HTTP inspector recognises as HTTP by the port's route configuration, where the service has
// its virtual host, and the rest goes to the service over TCP (its default chain, lds.go).
func sniffedWithoutVIP(svc *model.Service, port model.Port) bool {
	return port.Protocol == model.ProtocolUnknown && len(svc.Addresses) == 0
}

type sniffedPort struct {
	svc  *model.Service
	port model.Port
}

// withSniffedRoutes adds to the sidecar RDS generator the route configurations of sniffed
// ports, named "HOST:PORT".
func withSniffedRoutes(next GeneratorFunc) GeneratorFunc {
	return func(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
		out, err := next(p, s, names)
		sc := s.ScopeFor(p)
		ports := sniffedPorts(s, sc)
		if len(ports) == 0 {
			return out, err
		}
		want := nameSet(names)
		errs := []error{err}
		ixs := map[*model.Scope]*index{}
		for name, sp := range ports {
			if !wanted(want, name) {
				continue
			}
			// istiod routes a sniffed port by the egress listener that holds it.
			esc := sc.Egress(sp.port.Number)
			if ixs[esc] == nil {
				// istiod builds the port's virtual hosts, as for the route configuration
				// "PORT", and keeps this service's: a destination without a port takes the
				// listener's (destinationCluster).
				ix := egressIndex(s, sc, esc, p)
				ix.listenerPortDests = true
				ixs[esc] = ix
			}
			if httpProxyPort(sc, sp.port.Number) {
				// An HTTP_PROXY egress listener holds the port: istiod filters its route
				// configuration down to the service's virtual hosts (httpproxy.go).
				r, rerr := sniffedProxyRouteConfig(p, s, sc, esc, name, sp.svc)
				errs = append(errs, rerr)
				out = append(out, r)
				continue
			}
			if !esc.SeesPort(sp.svc, sp.port.Number) || !httpOrSniffedOwnPort(sp.svc, sp.port) {
				// The egress listener that holds the port does not import the service (its
				// VIP listener comes from the catch-all listener): istiod builds the route
				// configuration from the port's egress listener, which has no virtual host of
				// the service, and answers it empty. So it does when the port is sniffed only by
				// its egress listener's protocol (httpOrSniffedOwnPort).
				rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false)}
				out = append(out, Resource{Name: name, Message: rc, Deps: sortDeps([]istioconfig.Key{ServiceKey(sp.svc)})})
				continue
			}
			routes, deps, rerr := serviceRoutes(p, ixs[esc], sp.svc, sp.port, false)
			errs = append(errs, rerr)
			rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: wrapperspb.Bool(false), VirtualHosts: []*routev3.VirtualHost{{
				Name: name, Domains: []string{"*"}, Routes: routes,
			}}}
			out = append(out, Resource{Name: name, Message: rc, Deps: sortDeps(append(deps, ServiceKey(sp.svc)))})
		}
		slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
		return out, errors.Join(errs...)
	}
}

// httpOrSniffedOwnPort reports whether istiod builds a virtual host of svc on port, which it
// does by the service's own protocol there, whatever the egress listener that holds the port
// declares: HTTP or none. A TCP port an egress listener without a protocol sniffs gets none
// (its VirtualServices' http routes included). Port 80 of a service without any HTTP or
// sniffed port is left as before (istiod's port 80 exception gives a VirtualService's hosts a
// virtual host there; not compared yet).
func httpOrSniffedOwnPort(svc *model.Service, port model.Port) bool {
	httpOrSniffed := func(p model.Port) bool { return p.Protocol.IsHTTP() || p.Protocol == model.ProtocolUnknown }
	return httpOrSniffed(port) || port.Number == 80 && !slices.ContainsFunc(svc.Ports, httpOrSniffed)
}
