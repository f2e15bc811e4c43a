package parity_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// proxyStream is mixed into the seed of the seventh PCG stream (HTTP proxy egress listeners),
// drawn after the first six: every object a seed produced before these shapes were added
// stays as it was, but for the Sidecar they join. Its constant is its own: it once shared
// laterStream's, so that it drew the same numbers as the fourth stream.
const proxyStream = 0xd1b54a32d192ed03

// proxyUnixProtocols are the protocols of a unix socket egress listener xdslab generates
// (controlplane/gen/httpproxy.go).
var proxyUnixProtocols = []string{"HTTP", "HTTP2", "GRPC", "GRPC-WEB", "HTTP_PROXY"}

// proxyShapes adds HTTP proxy egress listeners: an HTTP_PROXY port (its own, or one services
// use, without a bind, with a loopback or 0.0.0.0 bind, maybe under captureMode NONE) and port 0
// bound to a unix socket (a path or an abstract name) with an HTTP protocol, importing
// services by name or a namespace's. They join the sixth stream's Sidecar "bound", before its
// catch-all listener, or a Sidecar "proxied" of their own selecting the proxy of a client
// namespace that no Sidecar selects yet.
func (m *randMesh) proxyShapes() {
	m.r = rand.New(rand.NewPCG(m.seed^proxyStream, proxyStream))
	if !m.chance(0.6) || m.severalAddresses() {
		return
	}
	var spec map[string]any
	for _, d := range m.docs {
		if d["kind"] == "Sidecar" && d["metadata"].(map[string]any)["name"] == "bound" {
			spec = d["spec"].(map[string]any)
		}
	}
	if spec == nil {
		free := m.unselectedNamespaces()
		if len(free) == 0 {
			return
		}
		ns := free[m.r.IntN(len(free))]
		app, _ := proxyOf(ns)
		spec = map[string]any{"workloadSelector": map[string]any{"labels": map[string]any{"app": app}}}
		var egress []any
		if m.chance(0.8) {
			catchAll := m.sidecarSpec(ns)
			egress = catchAll["egress"].([]any)
			if o, ok := catchAll["outboundTrafficPolicy"]; ok {
				spec["outboundTrafficPolicy"] = o
			}
		}
		spec["egress"] = egress
		m.add("Sidecar", "networking.istio.io/v1", "proxied", ns, spec)
	}
	egress, _ := spec["egress"].([]any)
	used := map[int]bool{}
	last := len(egress) // before the catch-all listener, which stays last
	for i, e := range egress {
		p, ok := e.(map[string]any)["port"].(map[string]any)
		if !ok {
			last = i
			continue
		}
		used[p["number"].(int)] = true
	}
	var added []any
	for k := range 1 + m.r.IntN(2) {
		hosts := m.proxyHosts()
		if len(hosts) == 0 {
			return
		}
		eg := map[string]any{"hosts": toAny(hosts)}
		if m.chance(0.6) {
			n := m.pick2(6180, 6181)
			if m.chance(0.4) {
				n = portPool[m.r.IntN(len(portPool))] // a port services use too
			}
			if used[n] {
				continue
			}
			used[n] = true
			eg["port"] = map[string]any{"number": n, "protocol": m.pick("HTTP_PROXY", "HTTP_PROXY", "http_proxy"), "name": fmt.Sprintf("proxy-%d", n)}
			switch m.r.IntN(5) {
			case 0:
				eg["captureMode"] = "NONE"
			case 1:
				eg["bind"] = m.pick("127.0.0.2", "0.0.0.0")
			case 2:
				eg["captureMode"] = "NONE"
				eg["bind"] = "127.0.0.3"
			}
		} else {
			eg["port"] = map[string]any{"number": 0, "protocol": m.pick(proxyUnixProtocols...), "name": fmt.Sprintf("uds-%d", k)}
			eg["bind"] = m.pick(fmt.Sprintf("unix:///var/run/proxied/%d.sock", k), fmt.Sprintf("unix://@proxied-%d", k))
		}
		added = append(added, eg)
	}
	spec["egress"] = slices.Concat(egress[:last], added, egress[last:])
}

// proxyHosts draws the hosts of an HTTP proxy egress listener: one to three services by name,
// or the namespace of one when it has none of those left out: a wildcard, an entry of several
// hosts (whose domains istiod lists in map order), and a service with port 80 and another
// HTTP or sniffed port (a VirtualService host that names no service gets a virtual host from
// it or not, in istiod's map order; docs/parity.md).
func (m *randMesh) proxyHosts() []string {
	httpish := func(p rport) bool {
		return slices.Contains([]string{"HTTP", "HTTP2", "GRPC", "GRPC-WEB", ""}, p.protocol)
	}
	ok := func(s *rsvc) bool {
		n := 0
		for _, p := range s.ports {
			if httpish(p) {
				n++
			}
		}
		port80 := slices.ContainsFunc(s.ports, func(p rport) bool { return p.number == 80 && httpish(p) })
		return !s.wildcard && !m.multiHost(s) && (!port80 || n == 1)
	}
	var cands []*rsvc
	for _, s := range m.services {
		if ok(s) {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	var hosts []string
	for range 1 + m.r.IntN(3) {
		s := cands[m.r.IntN(len(cands))]
		hosts = append(hosts, m.pick(s.ns+"/", "*/")+s.host)
	}
	if s := cands[m.r.IntN(len(cands))]; m.chance(0.3) {
		whole := true
		for _, o := range m.services {
			if o.ns == s.ns && !ok(o) {
				whole = false
			}
		}
		if whole {
			hosts = append(hosts, s.ns+"/*")
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
