package simulator

import (
	"fmt"
	"math/rand/v2"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// Simulated ingress gateways (Topology.Gateways).
const (
	// GatewayNamespace holds the simulated Gateways.
	GatewayNamespace = "istio-system"
	// GatewayLabel labels a gateway's VirtualServices with the gateway's name.
	GatewayLabel = "xdslab.io/gateway"
	// GatewayHTTPPort and GatewayTLSPort are the simulated gateways' server ports.
	GatewayHTTPPort = 80
	GatewayTLSPort  = 443
)

// GatewaySelector is the selector of every simulated Gateway: router clients need these labels.
func GatewaySelector() map[string]string { return map[string]string{"istio": "ingressgateway"} }

// GatewayRouteName is the route configuration a router's HTTP gateway listener asks for.
func GatewayRouteName(port uint32) string { return fmt.Sprintf("http.%d", port) }

// gwHost is one host a gateway exposes and the service port it is bound to.
type gwHost struct {
	gw, idx int
	svc     *service
	port    uint32
}

func (h *gwHost) host() string    { return fmt.Sprintf("h-%d.%s.example.com", h.idx, gatewayName(h.gw)) }
func (h *gwHost) vsName() string  { return fmt.Sprintf("%s-h-%d", gatewayName(h.gw), h.idx) }
func (h *gwHost) cluster() string { return clusterName(h.port, "", h.svc.host()) }
func gatewayName(i int) string    { return fmt.Sprintf("gw-%d", i) }
func gatewayDomain(i int) string  { return fmt.Sprintf("*.%s.example.com", gatewayName(i)) }
func (h *gwHost) key() istioconfig.Key {
	return istioconfig.Key{Kind: istioconfig.KindVirtualService, Name: h.vsName(), Namespace: h.svc.ns}
}

// gatewayState is the mesh's ingress: the hosts and how many hosts route to each backend
// cluster (the clusters routers hold).
type gatewayState struct {
	rng      *rand.Rand
	hosts    []*gwHost
	clusters map[string]int
	backends map[*service]int
}

func firstHTTPPort(s *service) (uint32, bool) {
	for _, p := range s.ports {
		if p.isHTTP() {
			return p.number, true
		}
	}
	return 0, false
}

// buildGateways binds every gateway host to a random service with an HTTP port.
func (m *mesh) buildGateways(seed uint64) {
	g := m.topo.Gateways
	m.gw = gatewayState{rng: newRand(seed), clusters: map[string]int{}, backends: map[*service]int{}}
	if g.Count == 0 {
		return
	}
	var http []*service
	for _, s := range m.services {
		if s.hasHTTP() {
			http = append(http, s)
		}
	}
	for i := range g.Count {
		for j := range g.HostsPerGateway {
			if len(http) == 0 {
				return
			}
			h := &gwHost{gw: i, idx: j}
			m.bindHost(h, http[m.gw.rng.IntN(len(http))])
			m.gw.hosts = append(m.gw.hosts, h)
		}
	}
}

func (m *mesh) bindHost(h *gwHost, s *service) {
	if h.svc != nil {
		m.gw.clusters[h.cluster()]--
		if m.gw.clusters[h.cluster()] <= 0 {
			delete(m.gw.clusters, h.cluster())
		}
		m.gw.backends[h.svc]--
		if m.gw.backends[h.svc] <= 0 {
			delete(m.gw.backends, h.svc)
		}
	}
	h.svc = s
	h.port, _ = firstHTTPPort(s)
	m.gw.clusters[h.cluster()]++
	m.gw.backends[s]++
}

func (m *mesh) gatewayConfig(i int) istioconfig.Config {
	srv := []*networking.Server{{
		Port:  &networking.Port{Number: GatewayHTTPPort, Name: "http", Protocol: "HTTP"},
		Hosts: []string{"*/" + gatewayDomain(i)},
	}}
	if m.topo.Gateways.TLSPassthrough {
		srv = append(srv, &networking.Server{
			Port:  &networking.Port{Number: GatewayTLSPort, Name: "tls", Protocol: "TLS"},
			Hosts: []string{"*/" + gatewayDomain(i)},
			Tls:   &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH},
		})
	}
	return istioconfig.Config{
		Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: gatewayName(i), Namespace: GatewayNamespace, Labels: map[string]string{GatewayLabel: gatewayName(i)}},
		Spec: &networking.Gateway{Selector: GatewaySelector(), Servers: srv},
	}
}

func (m *mesh) gatewayVS(h *gwHost) istioconfig.Config {
	d := &networking.Destination{Host: h.svc.host(), Port: &networking.PortSelector{Number: h.port}}
	vs := &networking.VirtualService{
		Hosts:    []string{h.host()},
		Gateways: []string{GatewayNamespace + "/" + gatewayName(h.gw)},
		Http:     []*networking.HTTPRoute{{Name: "ingress", Route: []*networking.HTTPRouteDestination{{Destination: d}}}},
	}
	if m.topo.Gateways.TLSPassthrough {
		vs.Tls = []*networking.TLSRoute{{
			Match: []*networking.TLSMatchAttributes{{Port: GatewayTLSPort, SniHosts: []string{h.host()}}},
			Route: []*networking.RouteDestination{{Destination: d}},
		}}
	}
	return istioconfig.Config{
		Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: h.vsName(), Namespace: h.svc.ns, Labels: map[string]string{GatewayLabel: gatewayName(h.gw)}},
		Spec: vs,
	}
}

// gatewayObjects renders the Gateways and their VirtualServices.
func (m *mesh) gatewayObjects() []istioconfig.Config {
	if len(m.gw.hosts) == 0 && m.topo.Gateways.Count == 0 {
		return nil
	}
	var out []istioconfig.Config
	for i := range m.topo.Gateways.Count {
		out = append(out, m.gatewayConfig(i))
	}
	for _, h := range m.gw.hosts {
		out = append(out, m.gatewayVS(h))
	}
	return out
}

// isBackend reports whether a gateway host routes to s (service-delete leaves those alone).
func (m *mesh) isBackend(s *service) bool { return m.gw.backends[s] > 0 }

// changeGateway re-binds gateway hosts: it picks Services hosts (at least 2) bound to distinct
// services and rotates their backends, so every host moves to another service while the set
// of backend clusters — what routers hold — stays the same. (Were a cluster to leave the
// routers, an endpoint event on it still in flight could never be observed by them.) The
// VirtualService moves with its backend's namespace.
func (s *Simulator) changeGateway(b *evb, p *process) {
	m := s.m
	var picked []*gwHost
	seen := map[*service]bool{}
	want := max(p.ch.Services, 2)
	for _, i := range m.rng.Perm(len(m.gw.hosts)) {
		if h := m.gw.hosts[i]; !seen[h.svc] {
			seen[h.svc] = true
			picked = append(picked, h)
			if len(picked) == want {
				break
			}
		}
	}
	if len(picked) < 2 {
		b.ev.Skip = "fewer than two gateway backends to rotate"
		return
	}
	backends := make([]*service, len(picked))
	for i, h := range picked {
		backends[i] = h.svc
	}
	for i, h := range picked {
		next := backends[(i+1)%len(picked)]
		if next.ns != h.svc.ns {
			b.ev.Deletes = append(b.ev.Deletes, h.key())
		}
		m.bindHost(h, next)
		b.ev.Upserts = append(b.ev.Upserts, m.gatewayVS(h))
		b.counts = append(b.counts,
			probe.Predicate{Op: probe.RouteTo, Resource: GatewayRouteName(GatewayHTTPPort), Host: h.host(), Cluster: h.cluster()})
	}
}

// proxyTypeReach decides which proxy types an expectation reaches once the mesh has gateways
// (synthetic ones, or an explicit mesh's): routers hold only the clusters gateway hosts route
// to and the route configurations http.PORT, sidecars everything else. "" reaches both.
func (m *mesh) proxyTypeReach(ps []probe.Predicate) string {
	if m.topo.Gateways.Count == 0 && m.locs == nil {
		return ""
	}
	routerOnly, sidecarOnly := false, false
	for _, p := range ps {
		switch {
		case p.Op == probe.RouteTo && strings.HasPrefix(p.Resource, "http."):
			routerOnly = true
		case p.Op.TypeURL() == probe.EndpointPresent.TypeURL() || p.Op.TypeURL() == probe.ClusterPresent.TypeURL():
			if m.gw.clusters[p.Resource] == 0 {
				sidecarOnly = true
			}
		default:
			sidecarOnly = true
		}
	}
	switch {
	case sidecarOnly:
		return probe.ProxySidecar
	case routerOnly:
		return probe.ProxyRouter
	}
	return ""
}
