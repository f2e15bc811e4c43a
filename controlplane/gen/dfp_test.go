package gen

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	dfphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	envoyvalidate "github.com/xdslab/xdslab/fakeenvoy/validate"
	"github.com/xdslab/xdslab/istioconfig"
)

// dfpMesh is the mesh of dynamicdns.yaml in the parity corpus, with names of its own: wildcard
// DYNAMIC_DNS entries in namespace pier (kiosk external with every port kind, dock internal,
// buoy external under ISTIO_MUTUAL), a DNS service (rope) that meets a younger entry (knot) on
// 7108 and an older one (hitch) on 7109, their DestinationRules, and a DENY policy for the
// proxy's namespace.
func dfpMesh() *model.Snapshot {
	at := func(min int) time.Time { return time.Date(2026, 7, 7, 0, min, 0, 0, time.UTC) }
	port := func(name string, n uint32, p model.Protocol) model.Port {
		return model.Port{Name: name, Number: n, Protocol: p}
	}
	svc := func(host string, min int, res model.Resolution, external bool, ports ...model.Port) *model.Service {
		return &model.Service{Hostname: host, Namespace: "pier", Resolution: res, MeshExternal: external, CreationTime: at(min), Ports: ports,
			Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "pier", Name: host}}
	}
	dock := svc("*.dock.example", 1, model.ResolutionDynamicDNS, false, port("http", 7105, model.ProtocolHTTP), port("tls", 7106, model.ProtocolTLS))
	dock.ServiceAccounts = []string{"spiffe://cluster.local/ns/pier/sa/dock"}
	services := []*model.Service{
		svc("*.kiosk.example", 1, model.ResolutionDynamicDNS, true, port("http", 7101, model.ProtocolHTTP), port("tls", 7102, model.ProtocolTLS),
			port("grpc", 7103, model.ProtocolGRPC), port("h2", 7104, model.ProtocolHTTP2)),
		dock,
		svc("*.buoy.example", 1, model.ResolutionDynamicDNS, true, port("tls", 7107, model.ProtocolTLS)),
		svc("rope.pier.example", 2, model.ResolutionDNS, true, port("http", 7108, model.ProtocolHTTP), port("http2", 7109, model.ProtocolHTTP)),
		svc("*.knot.example", 3, model.ResolutionDynamicDNS, true, port("http", 7108, model.ProtocolHTTP), port("h2", 7110, model.ProtocolHTTP2)),
		svc("*.hitch.example", 0, model.ResolutionDynamicDNS, true, port("http", 7109, model.ProtocolHTTP)),
	}
	tls := func(mode networking.ClientTLSSettings_TLSmode) *networking.ClientTLSSettings {
		return &networking.ClientTLSSettings{Mode: mode}
	}
	portTLS := func(n uint32, t *networking.ClientTLSSettings) *networking.TrafficPolicy_PortTrafficPolicy {
		return &networking.TrafficPolicy_PortTrafficPolicy{Port: &networking.PortSelector{Number: n}, Tls: t}
	}
	skip := tls(networking.ClientTLSSettings_SIMPLE)
	skip.Sni, skip.InsecureSkipVerify = "gate.kiosk.example", wrapperspb.Bool(true)
	sans := tls(networking.ClientTLSSettings_SIMPLE)
	sans.SubjectAltNames = []string{"till.kiosk.example"}
	h2 := portTLS(7104, sans)
	h2.OutlierDetection = &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(4)}
	mutual := tls(networking.ClientTLSSettings_ISTIO_MUTUAL)
	mutual.Sni = "buoy.internal"
	configs := []*istioconfig.Config{
		drConfig("kiosk", "pier", &networking.DestinationRule{Host: "*.kiosk.example",
			TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer:   &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(3 * time.Second), MaxConnections: 40}},
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{
					portTLS(7102, tls(networking.ClientTLSSettings_SIMPLE)), portTLS(7103, skip), h2,
				},
			},
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}},
		}),
		drConfig("buoy", "pier", &networking.DestinationRule{Host: "*.buoy.example", TrafficPolicy: &networking.TrafficPolicy{Tls: mutual}}),
		authzConfig("pier", "deny-tools", &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY, Rules: []*securityapi.Rule{{
			From: []*securityapi.Rule_From{{Source: &securityapi.Source{IpBlocks: []string{"10.77.0.0/16"}}}},
		}}}, nil),
	}
	return model.NewSnapshot(1, model.SnapshotInput{Services: services, Configs: configs})
}

// TestDynamicForwardProxy: a wildcard DYNAMIC_DNS entry's HTTP, HTTP2, GRPC and TLS ports get
// istiod's dynamic forward proxy: one cluster per port (no subsets, CLUSTER_PROVIDED whatever
// the rule's load balancer, the rule's pool, outlier detection and TLS, auto SNI and SAN
// validation as istiod sets them for such a cluster, none of the entry's SANs; the insecure
// options allowed where Envoy would reject istiod's cluster without them), the HTTP filter
// before the router of a port whose HTTP chain the entry builds (the oldest service with one
// there), and on a TLS port the SNI filter before the tcp_proxy of the host's SNI chain, after
// the proxy's own network RBAC filters.
func TestDynamicForwardProxy(t *testing.T) {
	s := dfpMesh()
	p := sidecarProxy("10.71.0.1", "pier")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)

	type tlsKind int
	const (
		plaintext tlsKind = iota
		socket
		matches
	)
	cases := []struct {
		cluster            string
		tls                tlsKind
		sni                string // the socket's SNI
		autoSNI, autoSAN   bool
		insecure, h2, odet bool
		timeout            time.Duration
	}{
		{cluster: "outbound|7101||*.kiosk.example", timeout: 3 * time.Second},
		// Port-level settings replace the rule's pool.
		{cluster: "outbound|7102||*.kiosk.example", tls: socket, autoSNI: true, autoSAN: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7103||*.kiosk.example", tls: socket, sni: "gate.kiosk.example", insecure: true, h2: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7104||*.kiosk.example", tls: socket, autoSNI: true, autoSAN: true, h2: true, odet: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7105||*.dock.example", tls: matches, autoSNI: true, autoSAN: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7106||*.dock.example", tls: matches, autoSNI: true, autoSAN: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7107||*.buoy.example", tls: socket, sni: "buoy.internal", autoSAN: true, insecure: true, timeout: DefaultConnectTimeout},
		{cluster: "outbound|7108||*.knot.example", timeout: DefaultConnectTimeout},
		// Not istiod's: HTTP/2 options without TLS, which Envoy takes only with the insecure
		// options allowed.
		{cluster: "outbound|7110||*.knot.example", insecure: true, h2: true, timeout: DefaultConnectTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.cluster, func(t *testing.T) {
			r, ok := find(g[ClusterType], tc.cluster)
			if !ok {
				t.Fatal("no cluster")
			}
			c := r.Message.(*clusterv3.Cluster)
			if err := envoyvalidate.Cluster(c); err != nil {
				t.Errorf("the fake Envoy rejects it: %v", err)
			}
			ct := c.GetClusterType()
			cfg := &dfpclusterv3.ClusterConfig{}
			if ct.GetName() != dfpClusterTypeName || ct.GetTypedConfig().UnmarshalTo(cfg) != nil {
				t.Fatalf("cluster type %v, want %s", ct, dfpClusterTypeName)
			}
			host := tc.cluster[len("outbound|7101||"):]
			if dc := cfg.GetDnsCacheConfig(); dc.GetName() != host+"_dfp_dns_cache" || dc.GetDnsLookupFamily() != clusterv3.Cluster_V4_ONLY {
				t.Errorf("DNS cache %v, want %s_dfp_dns_cache, V4_ONLY", dc, host)
			}
			if cfg.GetAllowInsecureClusterOptions() != tc.insecure {
				t.Errorf("allow_insecure_cluster_options %v, want %v", cfg.GetAllowInsecureClusterOptions(), tc.insecure)
			}
			if c.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED || c.GetLbConfig() != nil || c.GetEdsClusterConfig() != nil || c.GetLoadAssignment() != nil {
				t.Errorf("lb_policy %v, lb_config %v, eds %v, assignment %v: want CLUSTER_PROVIDED alone", c.GetLbPolicy(), c.GetLbConfig(), c.GetEdsClusterConfig(), c.GetLoadAssignment())
			}
			if got := c.GetConnectTimeout().AsDuration(); got != tc.timeout {
				t.Errorf("connect_timeout %v, want %v", got, tc.timeout)
			}
			if (c.GetOutlierDetection() != nil) != tc.odet || (c.GetCommonLbConfig() != nil) != tc.odet {
				t.Errorf("outlier detection %v, common lb config %v; want them: %v", c.GetOutlierDetection(), c.GetCommonLbConfig(), tc.odet)
			}
			opts := &upstreamhttpv3.HttpProtocolOptions{}
			if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]; a != nil {
				if err := a.UnmarshalTo(opts); err != nil {
					t.Fatal(err)
				}
			}
			if u := opts.GetUpstreamHttpProtocolOptions(); u.GetAutoSni() != tc.autoSNI || u.GetAutoSanValidation() != tc.autoSAN {
				t.Errorf("auto_sni %v, auto_san_validation %v; want %v, %v", u.GetAutoSni(), u.GetAutoSanValidation(), tc.autoSNI, tc.autoSAN)
			}
			if got := opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil; got != tc.h2 {
				t.Errorf("HTTP/2 upstream %v, want %v", got, tc.h2)
			}
			ts := c.GetTransportSocket()
			switch tc.tls {
			case plaintext:
				if ts != nil || c.GetTransportSocketMatches() != nil {
					t.Errorf("TLS %v %v, want none", ts, c.GetTransportSocketMatches())
				}
			case matches:
				if ts != nil || len(c.GetTransportSocketMatches()) != 2 {
					t.Fatalf("socket %v, %d matches; want auto-mTLS matches", ts, len(c.GetTransportSocketMatches()))
				}
				ts = c.GetTransportSocketMatches()[0].GetTransportSocket()
			case socket:
				if ts == nil || c.GetTransportSocketMatches() != nil {
					t.Fatalf("socket %v, matches %v; want a socket", ts, c.GetTransportSocketMatches())
				}
			}
			if ts != nil {
				up := &tlsv3.UpstreamTlsContext{}
				if err := ts.GetTypedConfig().UnmarshalTo(up); err != nil {
					t.Fatal(err)
				}
				if up.GetSni() != tc.sni {
					t.Errorf("SNI %q, want %q", up.GetSni(), tc.sni)
				}
				// Never the entry's service accounts (dock has one).
				vc := up.GetCommonTlsContext().GetCombinedValidationContext().GetDefaultValidationContext()
				if sans := vc.GetMatchSubjectAltNames(); len(sans) > 0 && sans[0].GetExact() != "till.kiosk.example" {
					t.Errorf("SANs %v, want only the rule's", sans)
				}
			}
		})
	}
	for _, name := range []string{"outbound|7101|v1|*.kiosk.example", "outbound_.7101_._.*.kiosk.example"} {
		if _, ok := find(g[ClusterType], name); ok {
			t.Errorf("cluster %s: istiod builds no subset or other cluster for the entry", name)
		}
	}
	if n := len(g[EndpointType]); n != 0 {
		t.Errorf("%d assignments, want none (no EDS cluster)", n)
	}

	// HTTP: the filter, before the router, where the entry builds the port's HTTP chain.
	for _, tc := range []struct {
		listener, cache string // "" for no dynamic forward proxy filter
	}{
		{"0.0.0.0_7101", "*.kiosk.example_dfp_dns_cache"},
		{"0.0.0.0_7103", "*.kiosk.example_dfp_dns_cache"},
		{"0.0.0.0_7105", "*.dock.example_dfp_dns_cache"},
		{"0.0.0.0_7108", ""}, // rope is older than knot: its HTTP chain
		{"0.0.0.0_7109", "*.hitch.example_dfp_dns_cache"},
	} {
		r, ok := find(g[ListenerType], tc.listener)
		if !ok {
			t.Errorf("no listener %s", tc.listener)
			continue
		}
		l := r.Message.(*listenerv3.Listener)
		h := &hcmv3.HttpConnectionManager{}
		if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
			t.Fatalf("%s: %v", tc.listener, err)
		}
		var names []string
		for _, f := range h.GetHttpFilters() {
			names = append(names, f.GetName())
		}
		want := []string{"envoy.filters.http.fault", "envoy.filters.http.cors", routerFilterName}
		if tc.cache != "" {
			want = slices.Insert(want, 2, dfpHTTPFilterName)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: filters %v, want %v", tc.listener, names, want)
			continue
		}
		if tc.cache != "" {
			fc := &dfphttpv3.FilterConfig{}
			if err := h.GetHttpFilters()[2].GetTypedConfig().UnmarshalTo(fc); err != nil || fc.GetDnsCacheConfig().GetName() != tc.cache {
				t.Errorf("%s: filter config %v (%v), want cache %s", tc.listener, fc, err, tc.cache)
			}
		}
	}

	// TLS: the host's SNI chain, the proxy's RBAC, the SNI filter on the port, the tcp_proxy.
	r, ok := find(g[ListenerType], "0.0.0.0_7102")
	if !ok {
		t.Fatal("no listener 0.0.0.0_7102")
	}
	l := r.Message.(*listenerv3.Listener)
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != tlsInspectorFilterName {
		t.Errorf("listener filters %v, want the TLS inspector", l.GetListenerFilters())
	}
	fc := l.GetFilterChains()[0]
	if got := fc.GetFilterChainMatch().GetServerNames(); !slices.Equal(got, []string{"*.kiosk.example"}) {
		t.Errorf("server names %v, want the host", got)
	}
	var names []string
	for _, f := range fc.GetFilters() {
		names = append(names, f.GetName())
	}
	if want := []string{networkRBACFilterName, sniDFPFilterName, tcpProxyFilterName}; !slices.Equal(names, want) {
		t.Fatalf("filters %v, want %v", names, want)
	}
	sni := &snidfpv3.FilterConfig{}
	if err := fc.GetFilters()[1].GetTypedConfig().UnmarshalTo(sni); err != nil || sni.GetPortValue() != 7102 || sni.GetDnsCacheConfig().GetName() != "*.kiosk.example_dfp_dns_cache" {
		t.Errorf("SNI filter %v (%v), want port 7102 and the host's cache", sni, err)
	}
	if !slices.Contains(r.Deps, istioconfig.Key{Kind: istioconfig.KindAuthorizationPolicy, Namespace: "pier", Name: "deny-tools"}) {
		t.Errorf("deps %v: want the policy its RBAC comes from", r.Deps)
	}

	// Routes go to the cluster like any service's.
	rr, ok := find(g[RouteType], "7101")
	if !ok {
		t.Fatal("no route configuration 7101")
	}
	var found bool
	for _, vh := range rr.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if slices.Contains(vh.GetDomains(), "*.kiosk.example") {
			found = vh.GetRoutes()[0].GetRoute().GetCluster() == "outbound|7101||*.kiosk.example"
		}
	}
	if !found {
		t.Error("route configuration 7101: no virtual host *.kiosk.example to its cluster")
	}
}

// TestDynamicForwardProxyCacheClass: a DYNAMIC_DNS entry's TLS chain carries the proxy's own
// RBAC filters, so its outbound listener follows which policies select the proxy: proxies a
// selector tells apart get different listeners and listener cache classes (InboundScope),
// proxies it does not tell apart share both.
func TestDynamicForwardProxyCacheClass(t *testing.T) {
	base := dfpMesh()
	in := model.SnapshotInput{Services: base.Services(), Configs: append(slices.Clone(base.Configs(istioconfig.KindDestinationRule)),
		authzConfig("pier", "cashiers", &securityapi.AuthorizationPolicy{Selector: selector("role", "cashier"), Rules: []*securityapi.Rule{{
			From: []*securityapi.Rule_From{{Source: &securityapi.Source{Namespaces: []string{"pier"}}}},
		}}}, nil))}
	s := model.NewSnapshot(2, in)
	proxy := func(role string) *model.Proxy {
		p := sidecarProxy("10.71.0.2", "pier")
		p.Labels = map[string]string{"app": "client", "role": role}
		return p
	}
	cashier, cashier2, porter := proxy("cashier"), proxy("cashier"), proxy("porter")
	chain := func(p *model.Proxy) Resource {
		rs, err := ForType(ListenerType, p).Generate(p, s, []string{"0.0.0.0_7102"})
		if err != nil || len(rs) != 1 {
			t.Fatalf("%d listeners, %v", len(rs), err)
		}
		return rs[0]
	}
	if !sameBytes(t, []Resource{chain(cashier)}, []Resource{chain(cashier2)}) || cacheClass(ListenerType, cashier, s) != cacheClass(ListenerType, cashier2, s) {
		t.Error("proxies the policies select alike: different listeners or classes")
	}
	if sameBytes(t, []Resource{chain(cashier)}, []Resource{chain(porter)}) {
		t.Error("the policy's RBAC is not on the TLS chain of the proxy it selects alone")
	}
	if cacheClass(ListenerType, cashier, s) == cacheClass(ListenerType, porter, s) {
		t.Error("proxies whose outbound listeners differ share a listener cache class")
	}
}

// TestDynamicForwardProxyNilProxy: without a proxy (the generators' nil input), a TLS port's
// chain still gets its SNI filter, and no proxy's policies.
func TestDynamicForwardProxyNilProxy(t *testing.T) {
	rs, err := ForType(ListenerType, nil).Generate(nil, dfpMesh(), []string{"0.0.0.0_7102"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%d listeners, %v", len(rs), err)
	}
	var names []string
	for _, f := range rs[0].Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters() {
		names = append(names, f.GetName())
	}
	if want := []string{sniDFPFilterName, tcpProxyFilterName}; !slices.Equal(names, want) {
		t.Errorf("filters %v, want %v", names, want)
	}
}

// TestDynamicForwardProxyFamily: the DNS cache a DYNAMIC_DNS entry's cluster and filters share
// resolves in the proxy's family, as its DNS clusters do: V6_ONLY on an IPv6-only proxy (its
// wildcard listeners on ::), V4_ONLY otherwise; cluster and filters must agree, Envoy keeping
// one cache per name.
func TestDynamicForwardProxyFamily(t *testing.T) {
	for _, tc := range []struct {
		ip, wildcard string
		want         clusterv3.Cluster_DnsLookupFamily
	}{{"10.71.0.1", "0.0.0.0", clusterv3.Cluster_V4_ONLY}, {"fd00:71::1", "::", clusterv3.Cluster_V6_ONLY}} {
		t.Run(tc.ip, func(t *testing.T) {
			p := sidecarProxy(tc.ip, "pier")
			g, err := generateAll(t, p, dfpMesh())
			if err != nil {
				t.Fatal(err)
			}
			r, ok := find(g[ClusterType], "outbound|7101||*.kiosk.example")
			if !ok {
				t.Fatal("no cluster")
			}
			cc := &dfpclusterv3.ClusterConfig{}
			if err := r.Message.(*clusterv3.Cluster).GetClusterType().GetTypedConfig().UnmarshalTo(cc); err != nil {
				t.Fatal(err)
			}
			if got := cc.GetDnsCacheConfig().GetDnsLookupFamily(); got != tc.want {
				t.Errorf("cluster's cache family %v, want %v", got, tc.want)
			}
			r, ok = find(g[ListenerType], tc.wildcard+"_7101")
			if !ok {
				t.Fatalf("no listener %s_7101", tc.wildcard)
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := r.Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
				t.Fatal(err)
			}
			fc := &dfphttpv3.FilterConfig{}
			if err := h.GetHttpFilters()[2].GetTypedConfig().UnmarshalTo(fc); err != nil || fc.GetDnsCacheConfig().GetDnsLookupFamily() != tc.want {
				t.Errorf("HTTP filter %v (%v), want family %v", fc, err, tc.want)
			}
			r, ok = find(g[ListenerType], tc.wildcard+"_7102")
			if !ok {
				t.Fatalf("no listener %s_7102", tc.wildcard)
			}
			sni := &snidfpv3.FilterConfig{}
			if err := r.Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[1].GetTypedConfig().UnmarshalTo(sni); err != nil || sni.GetDnsCacheConfig().GetDnsLookupFamily() != tc.want {
				t.Errorf("SNI filter %v (%v), want family %v", sni, err, tc.want)
			}
		})
	}
}
