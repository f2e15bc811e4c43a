package parity_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// bindStream is mixed into the seed of the sixth PCG stream (tunnels and bound listeners),
// drawn after the first five: every object a seed produced before these shapes were added
// stays as it was.
const bindStream = 0xbf58476d1ce4e5b9

// bindPorts are the port numbers of the sixth stream's services, apart from the first
// stream's pool (which they sometimes use too).
var bindPorts = []int{6100, 6101, 6102, 6103}

// bindEgressProtocols are the egress listener protocols under which xdslab generates a bind
// address and captureMode NONE (controlplane/config/validate/notgenerated.go); "" is a port
// without a protocol.
var bindEgressProtocols = []string{"HTTP", "HTTP2", "GRPC", "GRPC-WEB", "TCP", "MONGO", "MYSQL", ""}

// bindShapes appends the shapes of the sixth stream, which only the corpus covered:
// DestinationRule tunnel settings (the rule's and its subsets') on services of its own and on an
// earlier stream's TCP service, reached through a sidecar's own listener, mesh tcp routes to a
// subset, a weighted pair or no subset, and a Gateway's TCP and TLS passthrough routes;
// services sharing one VIP and port, TCP beside a sniffed, MYSQL or MONGO port; and a Sidecar
// selecting the random test's proxy of a client namespace with ingress listeners (ports,
// defaultEndpoint forms, captureMode, bind, connectionPool, inboundConnectionPool) and egress
// listeners bound to an address or under captureMode NONE on ports of an HTTP protocol, TCP,
// MONGO, MYSQL or none.
func (m *randMesh) bindShapes() {
	m.r = rand.New(rand.NewPCG(m.seed^bindStream, bindStream))
	var own []*rsvc
	if m.chance(0.8) {
		own = append(own, m.tunnelled(len(own))...)
	}
	if m.chance(0.5) {
		own = append(own, m.sharedVIP(len(own))...)
	}
	// A tunnel for an earlier stream's TCP service, in a namespace where no rule names it.
	if m.chance(0.3) {
		if s := m.pickService(func(s *rsvc) bool { return !s.wildcard && s.vip != "" && hasProtocol(s, "TCP") }); s != nil {
			if !m.hasRule(s, s.ns) {
				m.add("DestinationRule", "networking.istio.io/v1", s.name+"-tunnel", s.ns, map[string]any{
					"host":          m.hostIn(s, s.ns),
					"trafficPolicy": map[string]any{"tunnel": m.tunnel()},
				})
			}
		}
	}
	if m.chance(0.7) {
		m.boundSidecar()
	}
}

// hasProtocol reports whether one of s's ports has protocol p.
func hasProtocol(s *rsvc, p string) bool {
	return slices.ContainsFunc(s.ports, func(q rport) bool { return q.protocol == p })
}

// bindService adds an entry of the sixth stream: a VIP (vip, or a new one), the given ports and
// one to three inline endpoints labelled v1 and v2.
func (m *randMesh) bindService(i int, vip string, ports []rport) *rsvc {
	s := &rsvc{name: fmt.Sprintf("bd%d", i), ns: m.pick(clientNamespaces...), resolution: m.pick("STATIC", "STATIC", "DNS")}
	s.internal = m.chance(0.6)
	if s.internal {
		s.host = fmt.Sprintf("%s.%s.svc.cluster.local", s.name, s.ns)
	} else {
		s.host = fmt.Sprintf("%s.example.com", s.name)
	}
	s.vip = vip
	if s.vip == "" {
		s.vip = m.nextVIP()
	}
	s.ports = ports
	spec := m.serviceSpec(s)
	m.inlineEndpoints(s, spec, 3, 0)
	m.add("ServiceEntry", "networking.istio.io/v1", s.name, s.ns, spec)
	m.services = append(m.services, s)
	return s
}

// bindPort draws a port number: mostly the stream's own, sometimes the first stream's pool.
func (m *randMesh) bindPort() int {
	if m.chance(0.2) {
		return portPool[m.r.IntN(len(portPool))]
	}
	return bindPorts[m.r.IntN(len(bindPorts))]
}

func newPort(protocol string, number int) rport {
	name := strings.ToLower(protocol)
	if name == "" {
		name = "auto"
	}
	return rport{name: fmt.Sprintf("%s-%d", name, number), number: number, protocol: protocol}
}

// tunnel draws a DestinationRule's tunnel settings.
func (m *randMesh) tunnel() map[string]any {
	return map[string]any{
		"protocol":   m.pick("CONNECT", "CONNECT", "POST"),
		"targetHost": m.pick("exit.bind.example.org", "10.66.0.9", "gate.bind.example.net"),
		"targetPort": m.pick2(8443, 7000),
	}
}

// tunnelled adds a service whose DestinationRule tunnels its TCP traffic (the rule's tunnel,
// and subsets v1 and v2 with a tunnel of their own or none), maybe a front service whose mesh
// tcp route sends to a subset, both or none, and maybe a Gateway with TCP and TLS passthrough
// routes to it.
func (m *randMesh) tunnelled(i int) []*rsvc {
	var ports []rport
	nums := slices.Clone(bindPorts)
	m.r.Shuffle(len(nums), func(a, b int) { nums[a], nums[b] = nums[b], nums[a] })
	ports = append(ports, newPort("TCP", nums[0]))
	if m.chance(0.4) {
		ports = append(ports, newPort(m.pick("HTTP", "", "TCP"), nums[1]))
	}
	s := m.bindService(i, "", ports)
	out := []*rsvc{s}
	tp := map[string]any{}
	if m.chance(0.85) {
		tp["tunnel"] = m.tunnel()
	}
	if m.chance(0.3) {
		tp["connectionPool"] = map[string]any{"tcp": map[string]any{"maxConnections": 10 + m.r.IntN(50)}}
	}
	var subsets []any
	for _, v := range []string{"v1", "v2"} {
		ss := map[string]any{"name": v, "labels": map[string]any{"version": v}}
		if m.chance(0.5) {
			ss["trafficPolicy"] = map[string]any{"tunnel": m.tunnel()}
		}
		subsets = append(subsets, ss)
	}
	s.subsets = []string{"v1", "v2"}
	dr := map[string]any{"host": m.hostIn(s, s.ns), "subsets": subsets}
	if len(tp) > 0 {
		dr["trafficPolicy"] = tp
	}
	if s.exportTo != nil && m.chance(0.5) {
		dr["exportTo"] = toAny(s.exportTo)
	}
	m.add("DestinationRule", "networking.istio.io/v1", s.name, s.ns, dr)
	dest := func(subset string) map[string]any {
		d := map[string]any{"host": s.host, "port": map[string]any{"number": ports[0].number}}
		if subset != "" {
			d["subset"] = subset
		}
		return map[string]any{"destination": d}
	}
	route := func() []any {
		switch m.r.IntN(4) {
		case 0:
			return []any{dest("")}
		case 1:
			w1 := 10 + 10*m.r.IntN(8)
			a, b := dest("v1"), dest("v2")
			a["weight"], b["weight"] = w1, 100-w1
			return []any{a, b}
		}
		return []any{dest(m.pick("v1", "v2"))}
	}
	if m.chance(0.6) {
		front := m.bindService(i+1, "", []rport{newPort("TCP", m.bindPort())})
		out = append(out, front)
		ns := m.pick(append(slices.Clone(clientNamespaces), front.ns)...)
		m.add("VirtualService", "networking.istio.io/v1", front.name, ns, map[string]any{
			"hosts": []any{front.host},
			"tcp":   []any{map[string]any{"route": route()}},
		})
	}
	if m.chance(0.4) {
		servers := []any{map[string]any{
			"port":  map[string]any{"number": 16100, "name": "tcp-bind", "protocol": "TCP"},
			"hosts": []any{"*.bind.example.org"},
		}}
		vs := map[string]any{"gateways": []any{"istio-system/gwbind"}}
		hosts := []any{"t.bind.example.org"}
		vs["tcp"] = []any{map[string]any{"match": []any{map[string]any{"port": 16100}}, "route": route()}}
		if m.chance(0.6) {
			servers = append(servers, map[string]any{
				"port":  map[string]any{"number": 16143, "name": "tls-bind", "protocol": "TLS"},
				"hosts": []any{"*.bind.example.org"},
				"tls":   map[string]any{"mode": "PASSTHROUGH"},
			})
			var tls []any
			for k := range 1 + m.r.IntN(3) {
				sni := fmt.Sprintf("p%d.bind.example.org", k)
				hosts = append(hosts, sni)
				tls = append(tls, map[string]any{
					"match": []any{map[string]any{"port": 16143, "sniHosts": []any{sni}}},
					"route": route(),
				})
			}
			vs["tls"] = tls
		}
		vs["hosts"] = hosts
		m.add("Gateway", "networking.istio.io/v1", "gwbind", "istio-system", map[string]any{
			"selector": map[string]any{"istio": "ingressgateway"},
			"servers":  servers,
		})
		m.add("VirtualService", "networking.istio.io/v1", "vs6-gwbind", m.pick("istio-system", "app", "other"), vs)
	}
	return out
}

// sharedVIP adds two services on one VIP and port: one TCP, the other without a protocol,
// MYSQL or MONGO (in random creation order).
func (m *randMesh) sharedVIP(i int) []*rsvc {
	vip := m.nextVIP()
	n := m.bindPort()
	other := m.pick("", "MYSQL", "MONGO")
	a := m.bindService(i, vip, []rport{newPort("TCP", n)})
	b := m.bindService(i+1, vip, []rport{newPort(other, n)})
	return []*rsvc{a, b}
}

// proxyOf returns the label and IP of the random test's proxy of a client namespace.
func proxyOf(ns string) (app, ip string) {
	switch ns {
	case "app":
		return "web", "10.1.0.1"
	case "other":
		return "client", "10.2.9.9"
	}
	return "client", "10.4.9.9"
}

// multiHost reports whether s's entry has several hosts.
func (m *randMesh) multiHost(s *rsvc) bool {
	for _, d := range m.docs {
		md := d["metadata"].(map[string]any)
		if d["kind"] == "ServiceEntry" && md["name"] == s.name && md["namespace"] == s.ns {
			if h, ok := d["spec"].(map[string]any)["hosts"].([]any); ok && len(h) > 1 {
				return true
			}
		}
	}
	return false
}

// boundSidecar adds a Sidecar selecting the proxy of a client namespace where no Sidecar has a
// workload selector yet (a namespace-wide one yields to it): ingress listeners, maybe an
// inboundConnectionPool, egress listeners bound to an address or under captureMode NONE, and a
// catch-all egress listener (or none: istiod's default imports everything).
func (m *randMesh) boundSidecar() {
	if m.severalAddresses() {
		return // a Sidecar's view of an entry with several addresses is not generated yet
	}
	free := m.unselectedNamespaces()
	if len(free) == 0 {
		return
	}
	ns := free[m.r.IntN(len(free))]
	app, ip := proxyOf(ns)
	spec := map[string]any{"workloadSelector": map[string]any{"labels": map[string]any{"app": app}}}
	if m.chance(0.75) {
		spec["ingress"] = m.ingressListeners(ns, ip)
	}
	if m.chance(0.3) {
		spec["inboundConnectionPool"] = m.inboundPool()
	}
	var egress []any
	used := map[int]bool{}
	for range m.r.IntN(4) {
		if eg := m.boundEgress(used); eg != nil {
			egress = append(egress, eg)
		}
	}
	if m.chance(0.8) {
		catchAll := m.sidecarSpec(ns)
		for _, e := range catchAll["egress"].([]any) {
			if p, ok := e.(map[string]any)["port"].(map[string]any); ok && used[p["number"].(int)] {
				continue
			}
			egress = append(egress, e)
		}
		if o, ok := catchAll["outboundTrafficPolicy"]; ok {
			spec["outboundTrafficPolicy"] = o
		}
	}
	if len(egress) > 0 {
		spec["egress"] = egress
	}
	if spec["ingress"] == nil && spec["egress"] == nil && spec["inboundConnectionPool"] == nil {
		return
	}
	m.add("Sidecar", "networking.istio.io/v1", "bound", ns, spec)
}

// inboundPool draws a connection pool for inbound clusters.
func (m *randMesh) inboundPool() map[string]any {
	cp := map[string]any{}
	if m.chance(0.6) {
		cp["tcp"] = map[string]any{"maxConnections": 5 + m.r.IntN(60)}
	}
	if len(cp) == 0 || m.chance(0.5) {
		h := map[string]any{}
		switch m.r.IntN(3) {
		case 0:
			h["http1MaxPendingRequests"] = 1 + m.r.IntN(40)
		case 1:
			h["http2MaxRequests"] = 100 + m.r.IntN(300)
		default:
			h["idleTimeout"] = m.duration("30s", "2m")
		}
		cp["http"] = h
	}
	return cp
}

// ingressListeners draws one to three ingress listeners of a Sidecar in ns for a proxy at ip:
// the ports its service targets (sidecar-web's) or ports of their own, with a protocol or none,
// a defaultEndpoint of each form or none, and captureMode, bind and connectionPool sometimes.
func (m *randMesh) ingressListeners(ns, ip string) []any {
	var nums []int
	if ns == "app" {
		for _, s := range m.services {
			if s.name == "web" && s.ns == "app" {
				for _, p := range s.ports {
					nums = append(nums, p.number)
				}
			}
		}
	}
	nums = append(nums, 18100, 18101, 18102)
	m.r.Shuffle(len(nums), func(a, b int) { nums[a], nums[b] = nums[b], nums[a] })
	nums = slices.Compact(nums)
	var out []any
	seen := map[int]bool{}
	for k := range 1 + m.r.IntN(3) {
		n := nums[k%len(nums)]
		if seen[n] {
			continue
		}
		seen[n] = true
		proto := m.pick("HTTP", "HTTP", "TCP", "TCP", "GRPC", "HTTP2", "", "HTTPS")
		name := strings.ToLower(proto)
		if name == "" {
			name = "auto"
		}
		in := map[string]any{"port": map[string]any{"number": n, "protocol": proto, "name": fmt.Sprintf("%s-in-%d", name, n)}}
		if proto == "" {
			delete(in["port"].(map[string]any), "protocol")
		}
		switch m.r.IntN(6) {
		case 0, 1:
			in["defaultEndpoint"] = fmt.Sprintf("127.0.0.1:%d", 8000+m.r.IntN(100))
		case 2:
			in["defaultEndpoint"] = fmt.Sprintf("0.0.0.0:%d", 8000+m.r.IntN(100))
		case 3:
			in["defaultEndpoint"] = fmt.Sprintf("unix:///var/run/bind/%d.sock", n)
		case 4:
			in["defaultEndpoint"] = fmt.Sprintf(":%d", 8000+m.r.IntN(100))
		}
		switch m.r.IntN(6) {
		case 0, 1:
			in["captureMode"] = "NONE"
			switch m.r.IntN(3) {
			case 0:
				in["bind"] = "0.0.0.0"
				if slices.Contains(portPool, n) {
					// 0.0.0.0_PORT would have an outbound listener's name: istiod sends both,
					// which Envoy rejects (docs/parity.md), so nothing to compare.
					in["bind"] = ip
				}
			case 1:
				in["bind"] = ip
			}
		case 2:
			in["captureMode"] = m.pick("DEFAULT", "IPTABLES")
		case 3:
			in["bind"] = m.pick("0.0.0.0", ip)
		}
		if m.chance(0.3) {
			in["connectionPool"] = m.inboundPool()
		}
		out = append(out, in)
	}
	return out
}

// boundEgress draws an egress listener on a port of a service it imports, of a protocol under
// which xdslab generates bind and captureMode NONE, bound to a loopback address, 0.0.0.0 or
// none, with captureMode NONE or the default (one of the two at least), importing the
// services of that port and protocol (by name, or their namespace when all of its services
// on that port are of such a protocol). used collects the ports taken.
func (m *randMesh) boundEgress(used map[int]bool) map[string]any {
	type cand struct {
		s *rsvc
		p rport
	}
	var cands []cand
	for _, s := range m.services {
		if s.wildcard || m.multiHost(s) {
			continue
		}
		for _, p := range s.ports {
			if slices.Contains(bindEgressProtocols, p.protocol) && !used[p.number] {
				cands = append(cands, cand{s, p})
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	c := cands[m.r.IntN(len(cands))]
	used[c.p.number] = true
	proto := c.p.protocol
	if m.chance(0.15) {
		proto = m.pick(bindEgressProtocols...)
	}
	port := map[string]any{"number": c.p.number, "name": fmt.Sprintf("bound-%d", c.p.number)}
	if proto != "" {
		port["protocol"] = proto
	}
	eg := map[string]any{"port": port}
	switch m.r.IntN(4) {
	case 0:
		eg["captureMode"] = "NONE"
	case 1:
		eg["captureMode"] = "NONE"
		eg["bind"] = m.pick("127.0.0.2", "127.0.0.3")
	case 2:
		eg["bind"] = m.pick("127.0.0.2", "127.0.0.3")
	default:
		eg["bind"] = m.pick("127.0.0.2", "0.0.0.0")
	}
	hosts := []string{c.s.ns + "/" + c.s.host}
	for _, o := range cands {
		if o.p.number == c.p.number && o.s != c.s && m.chance(0.5) {
			hosts = append(hosts, m.pick(o.s.ns+"/", "*/")+o.s.host)
		}
	}
	if m.chance(0.3) {
		// The whole namespace, when every service of it on this port has such a protocol.
		whole := true
		for _, s := range m.services {
			for _, p := range s.ports {
				if s.ns == c.s.ns && p.number == c.p.number && (s.wildcard || m.multiHost(s) || !slices.Contains(bindEgressProtocols, p.protocol)) {
					whole = false
				}
			}
		}
		if whole {
			hosts = append(hosts, c.s.ns+"/*")
		}
	}
	slices.Sort(hosts)
	eg["hosts"] = toAny(slices.Compact(hosts))
	return eg
}

// unselectedNamespaces are the client namespaces whose proxy no Sidecar with a workloadSelector
// selects yet (it draws nothing).
func (m *randMesh) unselectedNamespaces() []string {
	var free []string
	for _, ns := range clientNamespaces {
		selected := false
		for _, d := range m.docs {
			if d["kind"] == "Sidecar" && d["metadata"].(map[string]any)["namespace"] == ns && d["spec"].(map[string]any)["workloadSelector"] != nil {
				selected = true
			}
		}
		if !selected {
			free = append(free, ns)
		}
	}
	return free
}
