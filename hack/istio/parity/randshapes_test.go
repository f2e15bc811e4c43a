package parity_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// shapeStream is mixed into the seed of the third PCG stream (shapes), drawn after the first
// two: every object a seed produced before these shapes were added stays as it was.
const shapeStream = 0x2545f4914f6cdd1d

// shapes appends the shapes of the third stream, those the first two do not draw: services of
// its own (t0, t1, …) with HTTP ports and endpoints in several localities, DestinationRules
// for them with the load balancer, connection pool, outlier detection, TLS and locality fields
// the first stream leaves out, mesh VirtualServices with the richer HTTP matches and actions
// (header regexes, withoutHeaders, query parameter prefixes and regexes, source labels and
// namespaces, ports, authorities, CORS, delays, gRPC aborts, regex rewrites, redirect
// variants, several mirrors, destination-level headers), tls and tcp routes with sniHosts,
// destination subnets and source labels, and a Gateway whose server hosts carry namespaces,
// bound together with the mesh by one VirtualService.
func (m *randMesh) shapes() {
	m.r = rand.New(rand.NewPCG(m.seed^shapeStream, shapeStream))
	var own []*rsvc
	for i := range 1 + m.r.IntN(2) {
		own = append(own, m.shapeService(i))
	}
	for _, s := range own {
		if m.chance(0.7) {
			m.shapeDestinationRule(s, s.ns, true)
		}
		if m.chance(0.2) {
			if ns := m.pick(clientNamespaces...); ns != s.ns {
				m.shapeDestinationRule(s, ns, false)
			}
		}
	}
	gw := ""
	if m.chance(0.4) {
		gw = m.shapeGateway()
	}
	for i := range 1 + m.r.IntN(3) {
		m.shapeVirtualService(i, own, gw)
	}
	if m.chance(0.4) {
		m.shapeL4Routes()
	}
}

// shapeService adds an entry of the third stream: a VIP, a first port that is HTTP, HTTP2 or
// GRPC, maybe more of the first stream's kinds, and endpoints (inline or WorkloadEntries) in
// several localities with version labels.
func (m *randMesh) shapeService(i int) *rsvc {
	s := &rsvc{name: fmt.Sprintf("t%d", i), ns: m.pick(clientNamespaces...), resolution: m.pick("STATIC", "STATIC", "DNS")}
	s.internal = m.chance(0.6)
	if s.internal {
		s.host = fmt.Sprintf("%s.%s.svc.cluster.local", s.name, s.ns)
	} else {
		s.host = fmt.Sprintf("%s.example.com", s.name)
	}
	s.vip = m.nextVIP()
	first := rport{number: portPool[m.r.IntN(len(portPool))], protocol: m.pick("HTTP", "HTTP", "HTTP2", "GRPC")}
	first.name = fmt.Sprintf("%s-%d", strings.ToLower(first.protocol), first.number)
	s.ports = []rport{first}
	if m.chance(0.4) {
		for _, p := range m.ports(s) {
			if p.number != first.number {
				s.ports = append(s.ports, p)
				break
			}
		}
	}
	spec := m.serviceSpec(s)
	if m.chance(0.4) {
		spec["workloadSelector"] = map[string]any{"labels": map[string]any{"app": s.name}}
		for k := range 1 + m.r.IntN(3) {
			we := map[string]any{"address": m.nextIP(), "labels": map[string]any{"app": s.name, "version": fmt.Sprintf("v%d", 1+k%2)}}
			m.endpointExtras(s, we)
			m.add("WorkloadEntry", "networking.istio.io/v1", fmt.Sprintf("%s-%d", s.name, k), s.ns, we)
		}
	} else {
		m.inlineEndpoints(s, spec, 3, 0.5)
	}
	m.add("ServiceEntry", "networking.istio.io/v1", s.name, s.ns, spec)
	m.services = append(m.services, s)
	return s
}

// shapeTrafficPolicy draws the traffic policy fields the first stream does not.
func (m *randMesh) shapeTrafficPolicy(s *rsvc, portLevel bool) map[string]any {
	tp := map[string]any{}
	var od map[string]any
	if m.chance(0.5) {
		od = map[string]any{"interval": m.duration("5s", "1s"), "baseEjectionTime": m.duration("15s", "1m")}
		switch m.r.IntN(3) {
		case 0:
			od["consecutiveGatewayErrors"] = 1 + m.r.IntN(5)
		case 1:
			od["consecutive5xxErrors"] = 1 + m.r.IntN(5)
			od["minHealthPercent"] = m.r.IntN(60)
		case 2:
			od["splitExternalLocalOriginErrors"] = true
			od["consecutiveLocalOriginFailures"] = 1 + m.r.IntN(5)
		}
		if m.chance(0.3) {
			od["maxEjectionPercent"] = 100
		}
		tp["outlierDetection"] = od
	}
	if m.chance(0.6) {
		lb := map[string]any{}
		switch m.r.IntN(6) {
		case 0:
			lb["consistentHash"] = map[string]any{"httpQueryParameterName": "user"}
		case 1:
			c := map[string]any{"name": "sticky", "ttl": m.duration("0s", "30s", "1h")}
			if m.chance(0.5) {
				c["path"] = "/app"
			}
			lb["consistentHash"] = map[string]any{"httpCookie": c}
		case 2:
			lb["consistentHash"] = map[string]any{"httpHeaderName": "x-session", "ringHash": map[string]any{"minimumRingSize": 1024 * (1 + m.r.IntN(4))}}
		case 3:
			lb["consistentHash"] = map[string]any{"httpQueryParameterName": "shard", "maglev": map[string]any{"tableSize": 65537}}
		default:
			lb["simple"] = m.pick("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "PASSTHROUGH")
		}
		if !portLevel && m.chance(0.5) {
			ll := map[string]any{}
			switch m.r.IntN(4) {
			case 0:
				ll["distribute"] = []any{map[string]any{"from": "region-a/zone-1/*", "to": map[string]any{"region-a/zone-1/*": 70, "region-b/zone-1/*": 30}}}
			case 1:
				ll["failover"] = []any{map[string]any{"from": "region-a", "to": "region-b"}}
			case 2:
				if s.resolution == "DNS" {
					// istiod panics building a DNS cluster with failoverPriority whose
					// endpoints are in several localities (it ranks the first locality's
					// endpoints by the whole service's list): nothing to compare.
					ll["failover"] = []any{map[string]any{"from": "region-b", "to": "region-a"}}
					break
				}
				ll["failoverPriority"] = []any{"topology.kubernetes.io/region", "version"}
			case 3:
				ll["enabled"] = false
			}
			lb["localityLbSetting"] = ll
		}
		if lb["simple"] == "PASSTHROUGH" && (s.resolution == "DNS" || lb["localityLbSetting"] != nil) {
			lb["simple"] = "LEAST_REQUEST"
		}
		tp["loadBalancer"] = lb
	}
	if m.chance(0.4) {
		cp := map[string]any{}
		if m.chance(0.5) {
			cp["tcp"] = map[string]any{"maxConnectionDuration": m.duration("10m", "1h"), "connectTimeout": m.duration("2s", "100ms")}
		}
		if m.chance(0.6) {
			h := map[string]any{"maxConcurrentStreams": 50 + m.r.IntN(100)}
			if m.chance(0.5) {
				h["http2MaxRequests"] = 100 + m.r.IntN(100)
			}
			if m.chance(0.3) {
				h["maxRetries"] = 3
			}
			cp["http"] = h
		}
		if len(cp) > 0 {
			tp["connectionPool"] = cp
		}
	}
	if m.chance(0.3) {
		switch m.r.IntN(3) {
		case 0:
			tp["tls"] = map[string]any{"mode": "SIMPLE", "insecureSkipVerify": true, "sni": "direct." + s.host}
		case 1:
			tp["tls"] = map[string]any{"mode": "MUTUAL", "clientCertificate": "/etc/client/cert.pem", "privateKey": "/etc/client/key.pem", "caCertificates": "/etc/client/ca.pem", "subjectAltNames": []any{s.host}}
		case 2:
			tp["tls"] = map[string]any{"mode": "ISTIO_MUTUAL", "sni": "outbound." + s.host}
		}
	}
	if lb, ok := tp["loadBalancer"].(map[string]any); ok && lb["localityLbSetting"] != nil {
		if ll := lb["localityLbSetting"].(map[string]any); (ll["failover"] != nil || ll["failoverPriority"] != nil) && od == nil {
			// Failover takes effect with outlier detection only; draw it with one half the time.
			if m.chance(0.5) {
				tp["outlierDetection"] = map[string]any{"consecutive5xxErrors": 3, "interval": "2s", "baseEjectionTime": "30s"}
			}
		}
	}
	if !portLevel && len(s.ports) > 1 && m.chance(0.4) {
		p := s.ports[1+m.r.IntN(len(s.ports)-1)]
		pl := m.shapeTrafficPolicy(s, true)
		if len(pl) == 0 {
			pl["connectionPool"] = map[string]any{"tcp": map[string]any{"maxConnections": 7}}
		}
		pl["port"] = map[string]any{"number": p.number}
		tp["portLevelSettings"] = []any{pl}
	}
	return tp
}

// shapeDestinationRule adds a rule of the third stream for s in ns: its subsets (in s's
// namespace only) may have policies of their own, with port-level settings.
func (m *randMesh) shapeDestinationRule(s *rsvc, ns string, withSubsets bool) {
	spec := map[string]any{"host": m.hostIn(s, ns)}
	if tp := m.shapeTrafficPolicy(s, false); len(tp) > 0 {
		spec["trafficPolicy"] = tp
	}
	if withSubsets && m.chance(0.7) {
		var subsets []any
		for _, v := range []string{"v1", "v2"}[:1+m.r.IntN(2)] {
			ss := map[string]any{"name": v, "labels": map[string]any{"version": v}}
			if m.chance(0.5) {
				if tp := m.shapeTrafficPolicy(s, false); len(tp) > 0 {
					ss["trafficPolicy"] = tp
				}
			}
			subsets = append(subsets, ss)
			s.subsets = append(s.subsets, v)
		}
		spec["subsets"] = subsets
	}
	switch m.r.IntN(5) {
	case 0:
		spec["exportTo"] = []any{"*"}
	case 1:
		if o := m.pick("app", "other", "plain", "istio-system"); o != ns {
			spec["exportTo"] = []any{".", o}
		}
	}
	m.add("DestinationRule", "networking.istio.io/v1", fmt.Sprintf("dr3-%s-%s", s.name, ns), ns, spec)
}

// shapeGateway adds a Gateway on the ingress gateway whose servers' hosts carry namespaces
// (`./`, `ns/`, `*/`), and returns its name.
func (m *randMesh) shapeGateway() string {
	hostNS := func(h string) string { return m.pick("./", "app/", "other/", "*/", "") + h }
	servers := []any{map[string]any{
		"port":  map[string]any{"number": m.pick2(80, 8081), "name": "http-shapes", "protocol": "HTTP"},
		"hosts": []any{hostNS("shapes.example.org"), hostNS("*.shapes.example.org")},
	}}
	if m.chance(0.5) {
		tls := map[string]any{"mode": m.pick("SIMPLE", "MUTUAL"), "credentialName": "shapes-cert"}
		servers = append(servers, map[string]any{
			"port":  map[string]any{"number": m.pick2(443, 8443), "name": "https-shapes", "protocol": "HTTPS"},
			"hosts": []any{hostNS("shapes.example.org")},
			"tls":   tls,
		})
	}
	m.add("Gateway", "networking.istio.io/v1", "shapes", "istio-system", map[string]any{
		"selector": map[string]any{"istio": "ingressgateway"},
		"servers":  servers,
	})
	return "istio-system/shapes"
}

// shapeVirtualService adds a VirtualService of the third stream: for one of the stream's own
// services (or an HTTP service of the others), maybe bound to the mesh and the stream's
// Gateway both, with one to three routes of the richer shapes.
func (m *randMesh) shapeVirtualService(i int, own []*rsvc, gw string) {
	var httpSvcs []*rsvc
	for _, s := range m.services {
		if s.wildcard {
			continue
		}
		for _, p := range s.ports {
			if isHTTP(p.protocol) {
				httpSvcs = append(httpSvcs, s)
				break
			}
		}
	}
	target := own[m.r.IntN(len(own))]
	if m.chance(0.2) {
		target = httpSvcs[m.r.IntN(len(httpSvcs))]
	}
	ns := target.ns
	if m.chance(0.4) {
		ns = m.pick(clientNamespaces...)
	}
	spec := map[string]any{}
	hosts := []any{m.hostIn(target, ns)}
	var gateways []string
	if gw != "" && i == 0 {
		gateways = []string{gw}
		if m.chance(0.6) {
			gateways = append(gateways, "mesh")
		}
		hosts = append(hosts, m.pick("shapes.example.org", "a.shapes.example.org"))
		spec["gateways"] = toAny(gateways)
	}
	spec["hosts"] = hosts
	var routes []any
	n := 1 + m.r.IntN(3)
	for k := range n {
		routes = append(routes, m.shapeHTTPRoute(ns, target, httpSvcs, gateways, k == n-1))
	}
	spec["http"] = routes
	switch m.r.IntN(6) {
	case 0:
		spec["exportTo"] = []any{"*"}
	case 1:
		if o := m.pick(clientNamespaces...); o != ns {
			spec["exportTo"] = []any{".", o}
		}
	}
	m.add("VirtualService", "networking.istio.io/v1", fmt.Sprintf("vs3-%d", i), ns, spec)
}

func (m *randMesh) shapeMatch(target *rsvc, gateways []string) map[string]any {
	match := map[string]any{}
	strMatch := func(exact, prefix, regex string) map[string]any {
		switch m.r.IntN(3) {
		case 0:
			return map[string]any{"exact": exact}
		case 1:
			return map[string]any{"prefix": prefix}
		}
		return map[string]any{"regex": regex}
	}
	switch m.r.IntN(4) {
	case 0:
		match["uri"] = strMatch("/orders", "/orders/", "/orders/[a-z]+/[0-9]{2,4}")
		if m.chance(0.4) {
			match["ignoreUriCase"] = true
		}
	case 1:
		match["uri"] = map[string]any{"prefix": "/"}
	}
	if m.chance(0.35) {
		match["headers"] = map[string]any{"x-tenant": strMatch("blue", "bl", "^(blue|green)$")}
	}
	if m.chance(0.25) {
		wh := strMatch("true", "t", "tru.*")
		if m.chance(0.3) {
			wh = map[string]any{}
		}
		match["withoutHeaders"] = map[string]any{"x-debug": wh}
	}
	if m.chance(0.2) {
		match["queryParams"] = map[string]any{"version": strMatch("2", "2.", "^[0-9]+$")}
	}
	if m.chance(0.15) {
		match["authority"] = strMatch(target.host, strings.SplitN(target.host, ".", 2)[0], "^"+strings.SplitN(target.host, ".", 2)[0]+"[.].*")
	}
	if m.chance(0.15) {
		match["sourceLabels"] = map[string]any{"app": m.pick("web", "client")}
	}
	if m.chance(0.1) {
		match["sourceNamespace"] = m.pick(clientNamespaces...)
	}
	if m.chance(0.15) {
		match["port"] = target.ports[m.r.IntN(len(target.ports))].number
	}
	if m.chance(0.1) {
		match["scheme"] = map[string]any{"exact": "http"}
	}
	if len(gateways) > 1 && m.chance(0.5) {
		match["gateways"] = []any{gateways[m.r.IntN(len(gateways))]}
	}
	if m.chance(0.2) {
		match["name"] = "m"
	}
	return match
}

func (m *randMesh) shapeHTTPRoute(ns string, target *rsvc, targets []*rsvc, gateways []string, last bool) map[string]any {
	r := map[string]any{}
	if !last || m.chance(0.3) {
		var ms []any
		for range 1 + m.r.IntN(2) {
			if mt := m.shapeMatch(target, gateways); len(mt) > 0 {
				ms = append(ms, mt)
			}
		}
		if len(ms) > 0 {
			r["match"] = ms
		}
	}
	if m.chance(0.2) {
		r["name"] = "shaped"
	}
	switch m.r.IntN(10) {
	case 0:
		rd := map[string]any{}
		switch m.r.IntN(4) {
		case 0:
			rd["uri"] = "/elsewhere"
			rd["authority"] = "moved.example.org"
		case 1:
			rd["scheme"] = "https"
			rd["port"] = 8443
		case 2:
			rd["derivePort"] = "FROM_PROTOCOL_DEFAULT"
			rd["scheme"] = "https"
		case 3:
			rd["authority"] = "new.example.org"
			rd["derivePort"] = "FROM_REQUEST_PORT"
		}
		if m.chance(0.6) {
			rd["redirectCode"] = m.pick("302", "307", "308")
		}
		if code, ok := rd["redirectCode"].(string); ok {
			var c int
			fmt.Sscan(code, &c)
			rd["redirectCode"] = c
		}
		r["redirect"] = rd
		m.shapeHeaders(r, false)
		return r
	case 1:
		dr := map[string]any{"status": m.pick2(200, 404)}
		if m.chance(0.5) {
			dr["body"] = map[string]any{"bytes": "c2hhcGVz"}
		}
		r["directResponse"] = dr
		m.shapeHeaders(r, false)
		return r
	}
	route := m.weighted(ns, append([]*rsvc{target}, targets...)[:1+m.r.IntN(2)], isHTTP)
	for _, rd := range route {
		if m.chance(0.2) {
			m.shapeHeaders(rd.(map[string]any), true)
		}
	}
	r["route"] = route
	m.shapeHeaders(r, false)
	if m.chance(0.25) {
		f := map[string]any{}
		switch m.r.IntN(3) {
		case 0:
			f["delay"] = map[string]any{"fixedDelay": m.duration("2s", "150ms"), "percentage": map[string]any{"value": 12.5}}
		case 1:
			f["abort"] = map[string]any{"grpcStatus": m.pick("UNAVAILABLE", "DEADLINE_EXCEEDED"), "percentage": map[string]any{"value": 50}}
		case 2:
			f["delay"] = map[string]any{"fixedDelay": "1s"}
			f["abort"] = map[string]any{"httpStatus": 429}
		}
		r["fault"] = f
	}
	if m.chance(0.25) {
		rt := map[string]any{"attempts": 1 + m.r.IntN(3), "retryOn": m.pick("connect-failure,refused-stream,unavailable,cancelled,503", "reset,retriable-4xx", "5xx")}
		if m.chance(0.5) {
			rt["retryRemoteLocalities"] = true
		}
		if m.chance(0.5) {
			rt["perTryTimeout"] = "500ms"
		}
		r["retries"] = rt
	}
	if m.chance(0.15) {
		r["timeout"] = m.duration("3m", "12s")
	}
	if m.chance(0.2) {
		if m.chance(0.5) {
			r["rewrite"] = map[string]any{"uriRegexRewrite": map[string]any{"match": "^/orders/(.*)$", "rewrite": `/v2/\1`}}
		} else {
			r["rewrite"] = map[string]any{"uri": "/", "authority": "inner." + target.host}
		}
	}
	if m.chance(0.2) {
		c := map[string]any{"allowOrigins": []any{map[string]any{"exact": "https://shop.example.org"}}}
		if m.chance(0.5) {
			c["allowOrigins"] = append(c["allowOrigins"].([]any), map[string]any{"regex": "https://.*[.]example[.]org"}, map[string]any{"prefix": "http://localhost"})
		}
		if m.chance(0.6) {
			c["allowMethods"] = []any{"GET", "POST"}
		}
		if m.chance(0.5) {
			c["allowHeaders"] = []any{"x-tenant", "content-type"}
		}
		if m.chance(0.4) {
			c["exposeHeaders"] = []any{"x-trace"}
		}
		if m.chance(0.4) {
			c["maxAge"] = "24h"
		}
		if m.chance(0.4) {
			c["allowCredentials"] = m.chance(0.5)
		}
		r["corsPolicy"] = c
	}
	if m.chance(0.15) {
		var mirrors []any
		for k := range 1 + m.r.IntN(2) {
			mr := map[string]any{"destination": m.destination(targets[m.r.IntN(len(targets))], ns, isHTTP)}
			if k == 0 || m.chance(0.5) {
				mr["percentage"] = map[string]any{"value": float64(5 * (1 + m.r.IntN(10)))}
			}
			mirrors = append(mirrors, mr)
		}
		r["mirrors"] = mirrors
	}
	return r
}

// shapeHeaders maybe adds request and response header operations to r (a route or, when
// dest, a route destination).
func (m *randMesh) shapeHeaders(r map[string]any, dest bool) {
	if !dest && !m.chance(0.3) {
		return
	}
	h := map[string]any{}
	if m.chance(0.7) {
		req := map[string]any{}
		switch m.r.IntN(3) {
		case 0:
			req["add"] = map[string]any{"x-shape": "added"}
		case 1:
			req["set"] = map[string]any{"x-shape": "set", "x-two": "2"}
		case 2:
			req["remove"] = []any{"x-remove-me"}
		}
		h["request"] = req
	}
	if len(h) == 0 || m.chance(0.5) {
		resp := map[string]any{}
		switch m.r.IntN(3) {
		case 0:
			resp["add"] = map[string]any{"x-resp": "added"}
		case 1:
			resp["set"] = map[string]any{"x-resp": "set"}
		case 2:
			resp["remove"] = []any{"server"}
		}
		h["response"] = resp
	}
	r["headers"] = h
}

// shapeL4Routes adds a mesh VirtualService with tls routes (sniHosts, ports) for a TLS or
// HTTPS service, or tcp routes (destinationSubnets, sourceLabels, ports) for a TCP one.
func (m *randMesh) shapeL4Routes() {
	var tlsSvcs, tcpSvcs []*rsvc
	for _, s := range m.services {
		if s.wildcard {
			continue
		}
		for _, p := range s.ports {
			switch p.protocol {
			case "TLS", "HTTPS":
				tlsSvcs = append(tlsSvcs, s)
			case "TCP":
				tcpSvcs = append(tcpSvcs, s)
			}
		}
	}
	tlsSvcs, tcpSvcs = slices.Compact(tlsSvcs), slices.Compact(tcpSvcs)
	ns := m.pick(clientNamespaces...)
	if len(tlsSvcs) > 0 && (len(tcpSvcs) == 0 || m.chance(0.5)) {
		s := tlsSvcs[m.r.IntN(len(tlsSvcs))]
		isTLS := func(p string) bool { return p == "TLS" || p == "HTTPS" }
		mt := map[string]any{"sniHosts": []any{s.host}}
		if m.chance(0.4) {
			for _, p := range s.ports {
				if isTLS(p.protocol) {
					mt["port"] = p.number
					break
				}
			}
		}
		if m.chance(0.2) {
			mt["sourceLabels"] = map[string]any{"app": m.pick("web", "client")}
		}
		m.add("VirtualService", "networking.istio.io/v1", "vs3-tls", ns, map[string]any{
			"hosts": []any{s.host}, // sniHosts must be within the hosts: no short name
			"tls":   []any{map[string]any{"match": []any{mt}, "route": m.weighted(ns, tlsSvcs, isTLS)}},
		})
		return
	}
	if len(tcpSvcs) == 0 {
		return
	}
	s := tcpSvcs[m.r.IntN(len(tcpSvcs))]
	isTCP := func(p string) bool { return p == "TCP" }
	mt := map[string]any{}
	if s.vip != "" && m.chance(0.5) {
		mt["destinationSubnets"] = []any{s.vip + "/32"}
	}
	if m.chance(0.3) {
		mt["sourceLabels"] = map[string]any{"app": m.pick("web", "client")}
	}
	if m.chance(0.3) {
		for _, p := range s.ports {
			if isTCP(p.protocol) {
				mt["port"] = p.number
				break
			}
		}
	}
	tr := map[string]any{"route": m.weighted(ns, tcpSvcs, isTCP)}
	if len(mt) > 0 {
		tr["match"] = []any{mt}
	}
	routes := []any{tr}
	if len(mt) > 0 && m.chance(0.6) {
		routes = append(routes, map[string]any{"route": m.weighted(ns, tcpSvcs, isTCP)})
	}
	m.add("VirtualService", "networking.istio.io/v1", "vs3-tcp", ns, map[string]any{
		"hosts": []any{m.hostIn(s, ns)},
		"tcp":   routes,
	})
}
