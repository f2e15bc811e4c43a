package parity_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// laterStream is mixed into the seed of the fourth PCG stream (later), drawn after the other
// three: every object a seed produced before these shapes were added stays as it was.
const laterStream = 0x94d049bb133111eb

// later appends the shapes of the fourth stream, those xdslab generates since the first three
// were written and that only the corpus covered: services of its own (l0, l1) whose
// WorkloadEntries' metadata labels differ from their spec labels, DestinationRules with
// tcpKeepalive, retryBudget, warmup (or the deprecated warmupDurationSecs), useClientProtocol
// and proxyProtocol, VirtualService delegation (a root whose routes delegate to VirtualServices
// without hosts in other namespaces, exported or not, some missing), AuthorizationPolicies
// CUSTOM with a provider name (the default mesh config defines none), Sidecars with
// outboundTrafficPolicy REGISTRY_ONLY or an egressProxy in a namespace without a Sidecar of its
// own, and a workload of the relabel namespace at sidecar-relabel's address whose labels are
// not its node's.
func (m *randMesh) later() {
	m.r = rand.New(rand.NewPCG(m.seed^laterStream, laterStream))
	var own []*rsvc
	for i := range 1 + m.r.IntN(2) {
		own = append(own, m.laterService(i))
	}
	for _, s := range own {
		if m.chance(0.7) {
			m.laterDestinationRule(s, s.ns, true)
		}
	}
	// A rule of the new fields for an earlier stream's service, in a namespace where no rule
	// names it yet (two rules for a host in one namespace are merged: another shape).
	if m.chance(0.4) {
		if s := m.pickService(func(s *rsvc) bool { return !s.wildcard }); s != nil {
			ns := m.pick(append(slices.Clone(clientNamespaces), s.ns)...)
			if !m.hasRule(s, ns) {
				m.laterDestinationRule(s, ns, false)
			}
		}
	}
	if m.chance(0.5) {
		m.delegation()
	}
	if m.chance(0.35) {
		m.customAuthz()
	}
	if m.chance(0.4) {
		m.outboundPolicy()
	}
	if m.chance(0.3) {
		m.relabelled()
	}
}

// addLabelled adds an object as add does, with metadata labels.
func (m *randMesh) addLabelled(kind, api, name, ns string, labels map[string]any, spec map[string]any) {
	m.add(kind, api, name, ns, spec)
	m.docs[len(m.docs)-1]["metadata"].(map[string]any)["labels"] = labels
}

// pickService returns a random service that ok accepts, or nil.
func (m *randMesh) pickService(ok func(*rsvc) bool) *rsvc {
	var out []*rsvc
	for _, s := range m.services {
		if ok(s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[m.r.IntN(len(out))]
}

// hasRule reports whether a DestinationRule of ns already names s (by its FQDN or short name).
func (m *randMesh) hasRule(s *rsvc, ns string) bool {
	for _, d := range m.docs {
		if d["kind"] != "DestinationRule" || d["metadata"].(map[string]any)["namespace"] != ns {
			continue
		}
		h := d["spec"].(map[string]any)["host"]
		if h == s.host || h == s.name && s.internal && s.ns == ns {
			return true
		}
	}
	return false
}

// severalAddresses reports whether a ServiceEntry has several addresses: a Sidecar's view of
// such an entry is not generated yet (istiod keeps one of its addresses; docs/parity.md), so
// the stream adds no Sidecar then.
func (m *randMesh) severalAddresses() bool {
	for _, d := range m.docs {
		if d["kind"] != "ServiceEntry" {
			continue
		}
		if a, ok := d["spec"].(map[string]any)["addresses"].([]any); ok && len(a) > 1 {
			return true
		}
	}
	return false
}

// sidecarNamespaces are the namespaces an earlier stream gave a Sidecar.
func (m *randMesh) sidecarNamespaces() map[string]bool {
	out := map[string]bool{}
	for _, d := range m.docs {
		if d["kind"] == "Sidecar" {
			out[d["metadata"].(map[string]any)["namespace"].(string)] = true
		}
	}
	return out
}

// laterService adds an entry of the fourth stream: a VIP, HTTP, GRPC or TCP ports, and
// endpoints: inline, or WorkloadEntries some of whose metadata labels differ from their spec
// labels (istiod's labels are the spec's overridden by the metadata's).
func (m *randMesh) laterService(i int) *rsvc {
	s := &rsvc{name: fmt.Sprintf("l%d", i), ns: m.pick(clientNamespaces...), resolution: m.pick("STATIC", "STATIC", "DNS")}
	s.internal = m.chance(0.6)
	if s.internal {
		s.host = fmt.Sprintf("%s.%s.svc.cluster.local", s.name, s.ns)
	} else {
		s.host = fmt.Sprintf("%s.example.com", s.name)
	}
	s.vip = m.nextVIP()
	nums := slices.Clone(portPool)
	m.r.Shuffle(len(nums), func(i, j int) { nums[i], nums[j] = nums[j], nums[i] })
	for k := range 1 + m.r.IntN(3) {
		p := rport{number: nums[k], protocol: m.pick("HTTP", "HTTP", "GRPC", "TCP")}
		p.name = fmt.Sprintf("%s-%d", strings.ToLower(p.protocol), p.number)
		s.ports = append(s.ports, p)
	}
	spec := m.serviceSpec(s)
	if m.chance(0.6) {
		spec["workloadSelector"] = map[string]any{"labels": map[string]any{"app": s.name}}
		for k := range 1 + m.r.IntN(3) {
			we := map[string]any{"address": m.nextIP(), "labels": map[string]any{"app": s.name, "version": fmt.Sprintf("v%d", 1+k%2)}}
			m.endpointExtras(s, we)
			name := fmt.Sprintf("%s-%d", s.name, k)
			switch m.r.IntN(4) {
			case 0:
				// The metadata's version wins over the spec's.
				m.addLabelled("WorkloadEntry", "networking.istio.io/v1", name, s.ns, map[string]any{"version": fmt.Sprintf("v%d", 2-k%2)}, we)
			case 1:
				// A label of the metadata only: subset canary.
				m.addLabelled("WorkloadEntry", "networking.istio.io/v1", name, s.ns, map[string]any{"track": "canary"}, we)
			case 2:
				if m.chance(0.3) {
					// The metadata's app is not the selector's: the entry selects it not.
					m.addLabelled("WorkloadEntry", "networking.istio.io/v1", name, s.ns, map[string]any{"app": s.name + "-old"}, we)
					break
				}
				fallthrough
			default:
				m.add("WorkloadEntry", "networking.istio.io/v1", name, s.ns, we)
			}
		}
	} else {
		m.inlineEndpoints(s, spec, 3, 0.5)
	}
	m.add("ServiceEntry", "networking.istio.io/v1", s.name, s.ns, spec)
	m.services = append(m.services, s)
	return s
}

// laterTrafficPolicy draws the traffic policy fields of the fourth stream, with a few of the
// first stream's around them; portLevel leaves out what a port cannot set (retryBudget,
// proxyProtocol) and port-level settings.
func (m *randMesh) laterTrafficPolicy(s *rsvc, portLevel bool) map[string]any {
	tp := map[string]any{}
	cp := map[string]any{}
	if m.chance(0.5) {
		tcp := map[string]any{}
		ka := map[string]any{}
		if m.chance(0.6) {
			ka["probes"] = 1 + m.r.IntN(9)
		}
		if m.chance(0.6) {
			ka["time"] = m.duration("75s", "30s", "2m", "1500ms")
		}
		if m.chance(0.5) {
			ka["interval"] = m.duration("10s", "2500ms", "1s")
		}
		tcp["tcpKeepalive"] = ka
		if m.chance(0.4) {
			tcp["maxConnections"] = 10 + m.r.IntN(90)
		}
		cp["tcp"] = tcp
	}
	if m.chance(0.35) {
		h := map[string]any{"useClientProtocol": true}
		if m.chance(0.5) {
			h["idleTimeout"] = m.duration("45s", "5m")
		}
		if m.chance(0.4) {
			h["maxConcurrentStreams"] = 20 + m.r.IntN(80)
		}
		if m.chance(0.3) {
			h["http2MaxRequests"] = 100 + m.r.IntN(200)
		}
		cp["http"] = h
	}
	if len(cp) > 0 {
		tp["connectionPool"] = cp
	}
	if m.chance(0.5) {
		lb := map[string]any{}
		switch m.r.IntN(5) {
		case 0:
			lb["simple"] = "ROUND_ROBIN"
		case 1:
			lb["simple"] = "LEAST_REQUEST"
		case 2:
			lb["simple"] = "RANDOM"
		case 3:
			lb["consistentHash"] = map[string]any{"httpHeaderName": "x-user", "ringHash": map[string]any{}}
		}
		if m.chance(0.75) {
			w := map[string]any{"duration": m.duration("40s", "90s", "5m")}
			if m.chance(0.4) {
				w["aggression"] = m.pick2(1, 2)
			}
			if m.chance(0.3) {
				w["minimumPercent"] = 10 + m.r.IntN(40)
			}
			lb["warmup"] = w
		} else {
			lb["warmupDurationSecs"] = m.duration("20s", "60s")
		}
		tp["loadBalancer"] = lb
	}
	if !portLevel && m.chance(0.4) {
		rb := map[string]any{}
		if m.chance(0.6) {
			rb["percent"] = m.pick2(20, 35) + m.r.IntN(10)
		}
		if m.chance(0.5) {
			rb["minRetryConcurrency"] = 1 + m.r.IntN(8)
		}
		if m.chance(0.3) {
			rb["budgetInterval"] = m.duration("8s", "1s")
		}
		tp["retryBudget"] = rb
	}
	if !portLevel && m.chance(0.3) {
		tp["proxyProtocol"] = map[string]any{"version": m.pick("V1", "V2")}
	}
	if !portLevel && len(s.ports) > 1 && m.chance(0.35) {
		p := s.ports[m.r.IntN(len(s.ports))]
		pl := m.laterTrafficPolicy(s, true)
		if len(pl) == 0 {
			pl["connectionPool"] = map[string]any{"tcp": map[string]any{"tcpKeepalive": map[string]any{"time": "30s"}}}
		}
		pl["port"] = map[string]any{"number": p.number}
		tp["portLevelSettings"] = []any{pl}
	}
	return tp
}

// laterDestinationRule adds a rule of the fourth stream for s in ns, with subsets by version
// and track (those the WorkloadEntries' metadata labels give) in s's namespace.
func (m *randMesh) laterDestinationRule(s *rsvc, ns string, withSubsets bool) {
	spec := map[string]any{"host": m.hostIn(s, ns)}
	if tp := m.laterTrafficPolicy(s, false); len(tp) > 0 {
		spec["trafficPolicy"] = tp
	}
	if withSubsets && m.chance(0.6) {
		var subsets []any
		for _, v := range []string{"v1", "v2", "canary"}[:1+m.r.IntN(3)] {
			labels := map[string]any{"version": v}
			if v == "canary" {
				labels = map[string]any{"track": v}
			}
			ss := map[string]any{"name": v, "labels": labels}
			if m.chance(0.4) {
				if tp := m.laterTrafficPolicy(s, false); len(tp) > 0 {
					ss["trafficPolicy"] = tp
				}
			}
			subsets = append(subsets, ss)
			s.subsets = append(s.subsets, v)
		}
		spec["subsets"] = subsets
	}
	m.add("DestinationRule", "networking.istio.io/v1", fmt.Sprintf("dr4-%s-%s", s.name, ns), ns, spec)
}

// delegatePrefixes are the URI prefixes of the root routes; a delegate's matches are drawn
// within them, beside them and across them.
var delegatePrefixes = []string{"/shop", "/cart", "/admin"}

// delegation adds a root VirtualService for an HTTP service whose routes delegate to
// VirtualServices without hosts: in the root's namespace or another, named with or without a
// namespace, exported to the root's namespace, to their own only, or everywhere, and
// sometimes one that does not exist. A delegate's short names are its own namespace's.
func (m *randMesh) delegation() {
	httpSvcs := m.httpServices()
	if len(httpSvcs) == 0 {
		return
	}
	target := httpSvcs[m.r.IntN(len(httpSvcs))]
	rootNS := m.pick(clientNamespaces...)
	if m.chance(0.5) {
		rootNS = target.ns
	}
	var routes []any
	prefixes := slices.Clone(delegatePrefixes)
	m.r.Shuffle(len(prefixes), func(i, j int) { prefixes[i], prefixes[j] = prefixes[j], prefixes[i] })
	for k := range 1 + m.r.IntN(2) {
		prefix := prefixes[k]
		r := map[string]any{}
		match := []any{map[string]any{"uri": map[string]any{"prefix": prefix}}}
		if m.chance(0.3) {
			match = append(match, map[string]any{"headers": map[string]any{"x-beta": map[string]any{"exact": "on"}}})
		}
		r["match"] = match
		name := fmt.Sprintf("dlg%d", k)
		ns := m.pick(append(slices.Clone(clientNamespaces), rootNS)...)
		d := map[string]any{"name": name}
		if ns != rootNS || m.chance(0.5) {
			d["namespace"] = ns
		}
		r["delegate"] = d
		if m.chance(0.3) {
			r["timeout"] = m.duration("4s", "750ms")
		}
		if m.chance(0.3) {
			r["retries"] = map[string]any{"attempts": 1 + m.r.IntN(3), "perTryTimeout": "1s"}
		}
		if m.chance(0.3) {
			r["headers"] = map[string]any{"request": map[string]any{"set": map[string]any{"x-root": "yes"}}}
		}
		if m.chance(0.15) {
			r["fault"] = map[string]any{"abort": map[string]any{"httpStatus": 503, "percentage": map[string]any{"value": 5}}}
		}
		if m.chance(0.2) {
			r["rewrite"] = map[string]any{"uri": "/v2"}
		}
		if m.chance(0.15) {
			r["corsPolicy"] = map[string]any{"allowOrigins": []any{map[string]any{"exact": "https://shop.example.org"}}, "allowMethods": []any{"GET"}}
		}
		if m.chance(0.15) {
			r["mirror"] = map[string]any{"host": m.hostIn(target, rootNS)}
		}
		if m.chance(0.2) {
			r["name"] = fmt.Sprintf("root-%d", k)
		}
		routes = append(routes, r)
		if m.chance(0.15) {
			continue // a delegate that does not exist: the root's route is dropped
		}
		m.delegateVS(name, ns, rootNS, prefix, httpSvcs)
	}
	if m.chance(0.6) {
		routes = append(routes, map[string]any{"route": []any{map[string]any{"destination": m.destination(target, rootNS, isHTTP)}}})
	}
	spec := map[string]any{"hosts": []any{m.hostIn(target, rootNS)}, "http": routes}
	// Sometimes bound to the mesh and a Gateway's HTTP server too: the gateway's route
	// configuration takes the merged routes.
	if gw, host := m.httpGatewayHost(); gw != "" && m.chance(0.4) {
		spec["hosts"] = []any{m.hostIn(target, rootNS), host}
		spec["gateways"] = []any{"mesh", "istio-system/" + gw}
	}
	m.add("VirtualService", "networking.istio.io/v1", "vs4-root", rootNS, spec)
	// A second root, of another service, sharing the first's first delegate.
	if len(httpSvcs) > 1 && m.chance(0.25) {
		o := httpSvcs[m.r.IntN(len(httpSvcs))]
		if o != target {
			d := routes[0].(map[string]any)["delegate"].(map[string]any)
			r := map[string]any{"match": []any{map[string]any{"uri": map[string]any{"prefix": m.pick(delegatePrefixes...)}}}, "delegate": map[string]any{"name": d["name"], "namespace": m.delegateNS(d, rootNS)}}
			m.add("VirtualService", "networking.istio.io/v1", "vs4-root2", rootNS, map[string]any{
				"hosts": []any{m.hostIn(o, rootNS)},
				"http":  []any{r, map[string]any{"route": []any{map[string]any{"destination": m.destination(o, rootNS, isHTTP)}}}},
			})
		}
	}
}

// delegateNS is the namespace of a root's delegate d.
func (m *randMesh) delegateNS(d map[string]any, rootNS string) string {
	if ns, ok := d["namespace"].(string); ok {
		return ns
	}
	return rootNS
}

// httpGatewayHost returns a Gateway of an earlier stream with an HTTP server (without
// httpsRedirect) and one of its hosts, or "".
func (m *randMesh) httpGatewayHost() (gw, host string) {
	for _, g := range m.gateways {
		for _, sv := range g.servers {
			if sv.protocol != "HTTP" || sv.redirect {
				continue
			}
			h := sv.hosts[0]
			if h == "*" {
				h = "dlg.example.org"
			}
			return g.name, h
		}
	}
	return "", ""
}

// delegateVS adds the delegate name in ns of a root route matching prefix in rootNS.
func (m *randMesh) delegateVS(name, ns, rootNS, prefix string, targets []*rsvc) {
	var routes []any
	n := 1 + m.r.IntN(3)
	for k := range n {
		r := map[string]any{}
		if k < n-1 || m.chance(0.3) {
			mt := map[string]any{}
			switch m.r.IntN(7) {
			case 0, 1:
				mt["uri"] = map[string]any{"prefix": prefix + m.pick("/v1", "/items")}
			case 2:
				mt["uri"] = map[string]any{"exact": prefix + "/count"}
			case 3:
				mt["uri"] = map[string]any{"prefix": m.pick(delegatePrefixes...) + "/x"}
			case 4:
				mt["uri"] = map[string]any{"regex": prefix + "/[0-9]+"}
			case 5:
				mt["queryParams"] = map[string]any{"debug": map[string]any{"exact": "1"}}
			}
			if m.chance(0.3) {
				mt["method"] = map[string]any{"exact": m.pick("GET", "POST")}
			}
			if m.chance(0.2) {
				mt["headers"] = map[string]any{"x-beta": map[string]any{"exact": m.pick("on", "off")}}
			}
			if len(mt) > 0 {
				r["match"] = []any{mt}
			}
		}
		if m.chance(0.1) {
			r["directResponse"] = map[string]any{"status": 404}
			routes = append(routes, r)
			continue
		}
		r["route"] = m.weighted(ns, targets, isHTTP)
		if m.chance(0.3) {
			r["timeout"] = m.duration("1s", "10s")
		}
		if m.chance(0.15) {
			r["retries"] = map[string]any{"attempts": 4}
		}
		if m.chance(0.15) {
			r["rewrite"] = map[string]any{"authority": "inner.example.com"}
		}
		if m.chance(0.2) {
			r["name"] = fmt.Sprintf("inner-%d", k)
		}
		if m.chance(0.25) {
			r["headers"] = map[string]any{"response": map[string]any{"add": map[string]any{"x-from": "delegate"}}}
		}
		routes = append(routes, r)
	}
	spec := map[string]any{"http": routes}
	switch m.r.IntN(4) {
	case 0:
		spec["exportTo"] = []any{rootNS}
	case 1:
		spec["exportTo"] = []any{"."} // not the root's unless ns is
	case 2:
		spec["exportTo"] = []any{"*"}
	}
	// Two root routes may name the same delegate: it is added once.
	for _, d := range m.docs {
		md := d["metadata"].(map[string]any)
		if d["kind"] == "VirtualService" && md["name"] == name && md["namespace"] == ns {
			return
		}
	}
	m.add("VirtualService", "networking.istio.io/v1", name, ns, spec)
}

// httpServices are the services with an HTTP port, wildcards left out.
func (m *randMesh) httpServices() []*rsvc {
	var out []*rsvc
	for _, s := range m.services {
		if s.wildcard {
			continue
		}
		for _, p := range s.ports {
			if isHTTP(p.protocol) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// customAuthz adds one or two AuthorizationPolicies CUSTOM with a provider name, on web,
// the gateway, a client namespace or the relabel workload's tier.
func (m *randMesh) customAuthz() {
	for i := range 1 + m.r.IntN(2) {
		spec := map[string]any{"action": "CUSTOM", "provider": map[string]any{"name": m.pick("ext-a", "ext-b")}}
		ns := "app"
		switch m.r.IntN(5) {
		case 0:
			ns = "istio-system"
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"istio": "ingressgateway"}}
		case 1:
			ns = m.pick("other", "plain")
		case 2:
			ns = "relabel"
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"tier": m.pick("front", "back")}}
		default:
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "web"}}
		}
		var rules []any
		for range 1 + m.r.IntN(2) {
			rule := map[string]any{}
			if m.chance(0.5) {
				src := map[string]any{}
				// Istio's validation admits no identity (principal, namespace) in a CUSTOM
				// rule: addresses only.
				switch m.r.IntN(3) {
				case 0:
					src["ipBlocks"] = []any{"10.2.0.0/16"}
				case 1:
					src["notIpBlocks"] = []any{m.pick("10.4.0.0/16", "10.1.0.1")}
				case 2:
					src["remoteIpBlocks"] = []any{"192.168.0.0/16"}
				}
				rule["from"] = []any{map[string]any{"source": src}}
			}
			if m.chance(0.7) {
				op := map[string]any{}
				switch m.r.IntN(4) {
				case 0:
					op["paths"] = []any{m.pick("/console/*", "/ext")}
				case 1:
					op["methods"] = []any{m.pick("PUT", "DELETE")}
				case 2:
					op["ports"] = []any{m.pick("80", "8080", "9000")}
				case 3:
					op["hosts"] = []any{m.pick(gatewayHosts...)}
				}
				rule["to"] = []any{map[string]any{"operation": op}}
			}
			if m.chance(0.25) {
				rule["when"] = []any{map[string]any{"key": "request.headers[x-tenant]", "notValues": []any{"acme"}}}
			}
			rules = append(rules, rule)
		}
		spec["rules"] = rules
		m.add("AuthorizationPolicy", "security.istio.io/v1", fmt.Sprintf("authz4-%d", i), ns, spec)
	}
}

// outboundPolicy adds a Sidecar with outboundTrafficPolicy REGISTRY_ONLY, or ALLOW_ANY with an
// egressProxy (a service's port, maybe a subset of it), to a client namespace no earlier
// stream gave a Sidecar (or, when the root namespace has none, sometimes to the root).
func (m *randMesh) outboundPolicy() {
	taken := m.sidecarNamespaces()
	var free []string
	for _, ns := range clientNamespaces {
		if !taken[ns] {
			free = append(free, ns)
		}
	}
	if !taken["istio-system"] && m.chance(0.2) {
		free = []string{"istio-system"}
	}
	if len(free) == 0 {
		return
	}
	ns := free[m.r.IntN(len(free))]
	if m.severalAddresses() {
		return
	}
	spec := m.sidecarSpec(ns)
	if ns != "istio-system" && m.chance(0.4) {
		app := "client"
		if ns == "app" {
			app = "web"
		}
		spec["workloadSelector"] = map[string]any{"labels": map[string]any{"app": app}}
	}
	if m.chance(0.6) {
		spec["outboundTrafficPolicy"] = map[string]any{"mode": "REGISTRY_ONLY"}
	} else {
		s := m.pickService(func(s *rsvc) bool { return !s.wildcard })
		if s == nil {
			return
		}
		p := s.ports[m.r.IntN(len(s.ports))]
		ep := map[string]any{"host": s.host, "port": map[string]any{"number": p.number}}
		if len(s.subsets) > 0 && m.chance(0.4) {
			ep["subset"] = s.subsets[m.r.IntN(len(s.subsets))]
		}
		spec["outboundTrafficPolicy"] = map[string]any{"mode": "ALLOW_ANY", "egressProxy": ep}
	}
	m.add("Sidecar", "networking.istio.io/v1", "outbound", ns, spec)
}

// relabelled adds the workload of sidecar-relabel (10.63.0.1 in relabel, node labels app shelf
// and tier front) with labels of its own, a service selecting it, and policies selecting a
// tier: what applies is what the workload's labels, not the node's, select.
func (m *randMesh) relabelled() {
	tier := m.pick("back", "front", "mid")
	we := map[string]any{"address": "10.63.0.1", "labels": map[string]any{"app": "shelf", "tier": tier}, "serviceAccount": "shelf"}
	if m.chance(0.3) {
		m.addLabelled("WorkloadEntry", "networking.istio.io/v1", "shelf-1", "relabel", map[string]any{"tier": m.pick("back", "front")}, we)
	} else {
		m.add("WorkloadEntry", "networking.istio.io/v1", "shelf-1", "relabel", we)
	}
	s := &rsvc{name: "shelf", ns: "relabel", host: "shelf.relabel.svc.cluster.local", internal: true, resolution: "STATIC", vip: m.nextVIP()}
	s.ports = []rport{{name: "http-8080", number: 8080, protocol: "HTTP"}}
	if m.chance(0.5) {
		s.ports = append(s.ports, rport{name: "tcp-9000", number: 9000, protocol: "TCP"})
	}
	spec := m.serviceSpec(s)
	spec["workloadSelector"] = map[string]any{"labels": map[string]any{"app": "shelf"}}
	m.add("ServiceEntry", "networking.istio.io/v1", s.name, s.ns, spec)
	m.services = append(m.services, s)
	if m.chance(0.5) {
		m.add("PeerAuthentication", "security.istio.io/v1", "by-tier", "relabel", map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"tier": m.pick("front", "back")}},
			"mtls":     map[string]any{"mode": m.pick("STRICT", "DISABLE")},
		})
	}
	if m.chance(0.5) {
		m.add("AuthorizationPolicy", "security.istio.io/v1", "by-tier", "relabel", map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"tier": m.pick("front", "back")}},
			"action":   m.pick("ALLOW", "DENY"),
			"rules":    []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"paths": []any{"/private/*"}}}}}},
		})
	}
	if m.chance(0.4) && !m.severalAddresses() {
		m.add("Sidecar", "networking.istio.io/v1", "by-tier", "relabel", map[string]any{
			"workloadSelector": map[string]any{"labels": map[string]any{"tier": m.pick("front", "back")}},
			"egress":           []any{map[string]any{"hosts": []any{"./*"}}},
		})
	}
}
