package parity_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// gwtlsStream is mixed into the seed of the fifth PCG stream (gateway TLS modes), drawn after
// the first four: every object a seed produced before these shapes were added stays as it was.
const gwtlsStream = 0x6a09e667f3bcc909

// gwtlsShapes appends, sometimes, a Gateway whose servers terminate TLS in the modes the other
// streams leave out (HTTPS and protocol TLS with ISTIO_MUTUAL, certificate files, SIMPLE,
// MUTUAL and OPTIONAL_MUTUAL credentials) on ports of its own or the first stream's TLS port,
// VirtualServices binding most of their hosts (http routes for HTTPS, tcp routes for TLS), and
// maybe an AUTO_PASSTHROUGH server whose hosts cover some of the mesh's services.
func (m *randMesh) gwtlsShapes() {
	m.r = rand.New(rand.NewPCG(m.seed^gwtlsStream, gwtlsStream))
	if !m.chance(0.5) {
		return
	}
	var httpSvcs, tcpSvcs []*rsvc
	for _, s := range m.services {
		if s.wildcard {
			continue
		}
		for _, p := range s.ports {
			switch {
			case isHTTP(p.protocol):
				httpSvcs = append(httpSvcs, s)
			case p.protocol == "TCP":
				tcpSvcs = append(tcpSvcs, s)
			}
		}
	}
	httpSvcs, tcpSvcs = slices.Compact(httpSvcs), slices.Compact(tcpSvcs)
	type bind struct {
		host, ns string
		https    bool
		port     int
	}
	var servers []any
	var binds []bind
	for k := range 1 + m.r.IntN(4) {
		proto := m.pick("HTTPS", "HTTPS", "TLS")
		port := m.pick2(9444, 9445)
		if m.chance(0.15) {
			port = 9443 // the first stream's TLS passthrough port
		}
		host := fmt.Sprintf("g%d.gwtls.example.org", k)
		prefix := m.pick("", "*/", "app/")
		ns := m.pick(clientNamespaces...)
		if prefix == "app/" {
			ns = "app"
		}
		servers = append(servers, map[string]any{
			"port":  map[string]any{"number": port, "name": fmt.Sprintf("%s-gwtls-%d", strings.ToLower(proto), k), "protocol": proto},
			"hosts": []any{prefix + host},
			"tls":   m.gwtlsSettings(k),
		})
		binds = append(binds, bind{host: host, ns: ns, https: proto == "HTTPS", port: port})
	}
	if m.chance(0.5) {
		servers = append(servers, map[string]any{
			"port":  map[string]any{"number": 15443, "name": "tls-gwtls-auto", "protocol": "TLS"},
			"hosts": []any{m.pick("*.app.svc.cluster.local", "*.other.svc.cluster.local", "*.svc.cluster.local", "*")},
			"tls":   map[string]any{"mode": "AUTO_PASSTHROUGH"},
		})
	}
	m.add("Gateway", "networking.istio.io/v1", "gwtls", "istio-system", map[string]any{
		"selector": map[string]any{"istio": "ingressgateway"},
		"servers":  servers,
	})
	for i, b := range binds {
		if !m.chance(0.8) {
			continue
		}
		spec := map[string]any{"hosts": []any{b.host}, "gateways": []any{"istio-system/gwtls"}}
		switch {
		case b.https && len(httpSvcs) > 0:
			spec["http"] = []any{map[string]any{"route": m.weighted(b.ns, httpSvcs, isHTTP)}}
		case !b.https && len(tcpSvcs) > 0:
			tr := map[string]any{"route": m.weighted(b.ns, tcpSvcs, func(p string) bool { return p == "TCP" })}
			if m.chance(0.3) {
				tr["match"] = []any{map[string]any{"port": b.port}}
			}
			spec["tcp"] = []any{tr}
		default:
			continue
		}
		m.add("VirtualService", "networking.istio.io/v1", fmt.Sprintf("vs4-gwtls-%d", i), b.ns, spec)
	}
}

// gwtlsSettings draws the tls block of a terminating server k.
func (m *randMesh) gwtlsSettings(k int) map[string]any {
	files := func(t map[string]any) map[string]any {
		t["serverCertificate"] = fmt.Sprintf("/etc/gwtls/%d.crt", k)
		t["privateKey"] = fmt.Sprintf("/etc/gwtls/%d.key", k)
		return t
	}
	sans := func(t map[string]any) map[string]any {
		if m.chance(0.4) {
			t["subjectAltNames"] = []any{m.pick("client.gwtls.example.org", "spiffe://cluster.local/ns/app/sa/web")}
		}
		return t
	}
	switch m.r.IntN(7) {
	case 0:
		return sans(map[string]any{"mode": "ISTIO_MUTUAL"})
	case 1:
		t := files(map[string]any{"mode": "SIMPLE"})
		if m.chance(0.3) {
			t["minProtocolVersion"] = "TLSV1_3"
		}
		return t
	case 2, 3:
		t := sans(files(map[string]any{"mode": m.pick("MUTUAL", "OPTIONAL_MUTUAL"), "caCertificates": "/etc/gwtls/ca.crt"}))
		if m.chance(0.3) {
			t["caCrl"] = "/etc/gwtls/ca.crl"
		}
		return t
	case 4:
		t := sans(map[string]any{"mode": m.pick("MUTUAL", "OPTIONAL_MUTUAL"), "credentialName": fmt.Sprintf("gwtls-%d", k)})
		if m.chance(0.3) {
			t["caCertCredentialName"] = "gwtls-clients"
		}
		return t
	}
	return map[string]any{"mode": "SIMPLE", "credentialName": fmt.Sprintf("gwtls-%d", k)}
}
