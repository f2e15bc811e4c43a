package gen

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"

	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/procstat"
	"github.com/xdslab/xdslab/istioconfig"
)

func routerProxy(ns string, labels map[string]string) *model.Proxy {
	return &model.Proxy{Type: model.Router, IPAddresses: []string{"100.64.0.1"}, ID: "gateway-0." + ns, Namespace: ns,
		DNSDomain: ns + ".svc.cluster.local", Labels: labels}
}

var ingressLabels = map[string]string{"istio": "ingressgateway", "app": "istio-ingressgateway"}

func gwConfig(name, ns string, gw *networking.Gateway) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: name, Namespace: ns, ResourceVersion: "1"}, Spec: gw}
}

func server(num uint32, proto string, hosts ...string) *networking.Server {
	return &networking.Server{Port: &networking.Port{Number: num, Name: strings.ToLower(proto) + "-" + strconv.FormatUint(uint64(num), 10), Protocol: proto}, Hosts: hosts}
}

func passthrough443(hosts ...string) *networking.Server {
	s := server(443, "TLS", hosts...)
	s.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}
	return s
}

func gwDest(host string, port uint32, subset string) *networking.Destination {
	d := &networking.Destination{Host: host, Subset: subset}
	if port != 0 {
		d.Port = &networking.PortSelector{Number: port}
	}
	return d
}

// gatewayInput is a mesh with an ingress gateway (HTTP, TLS passthrough and TCP servers) and the
// VirtualServices around it, including ones a router must not see.
func gatewayInput() model.SnapshotInput {
	reviews := "reviews.default.svc.cluster.local"
	mysql := "mysql.db.svc.cluster.local"
	services := []*model.Service{
		{Hostname: reviews, Namespace: "default", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{{Name: "http", Number: 9080, Protocol: model.ProtocolHTTP}}},
		{Hostname: "ratings.default.svc.cluster.local", Namespace: "default", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{{Name: "http", Number: 9080, Protocol: model.ProtocolHTTP}}},
		{Hostname: mysql, Namespace: "db", Addresses: []string{"10.96.0.20"}, Ports: []model.Port{{Name: "tcp", Number: 3306, Protocol: model.ProtocolTCP}}},
		{Hostname: "secure.default.svc.cluster.local", Namespace: "default", Addresses: []string{"10.96.0.30"}, Ports: []model.Port{{Name: "tls", Number: 8443, Protocol: model.ProtocolTLS}}},
		{Hostname: "unused.default.svc.cluster.local", Namespace: "default", Addresses: []string{"10.96.0.40"}, Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}},
	}
	ep := func(svc, addr, version string) *model.Endpoint {
		return &model.Endpoint{Service: svc, Address: addr, Labels: map[string]string{"version": version}, Weight: 1, Health: model.Healthy}
	}
	endpoints := map[string][]*model.Endpoint{
		reviews:                             {ep(reviews, "10.1.0.1", "v1"), ep(reviews, "10.1.0.2", "v2")},
		mysql:                               {ep(mysql, "10.1.1.1", "v1")},
		"secure.default.svc.cluster.local":  {ep("secure.default.svc.cluster.local", "10.1.2.1", "v1")},
		"ratings.default.svc.cluster.local": {ep("ratings.default.svc.cluster.local", "10.1.3.1", "v1")},
	}
	redirect := server(8080, "HTTP", "*/bookinfo.example.com")
	redirect.Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
	ingress := &networking.Gateway{
		Selector: map[string]string{"istio": "ingressgateway"},
		Servers: []*networking.Server{
			server(80, "HTTP", "*/bookinfo.example.com", "./admin.example.com"),
			redirect,
			passthrough443("*.secure.example.com"),
			server(3306, "TCP", "db/*"),
		},
	}
	egress := &networking.Gateway{Selector: map[string]string{"istio": "egressgateway"}, Servers: []*networking.Server{server(8080, "HTTP", "*")}}
	configs := []*istioconfig.Config{
		gwConfig("ingress", "istio-system", ingress),
		gwConfig("egress", "istio-system", egress),
		{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "reviews", Namespace: "default"}, Spec: &networking.DestinationRule{
			Host: "reviews", Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}},
		}},
		vsConfig("bookinfo", "default", &networking.VirtualService{
			Hosts:    []string{"bookinfo.example.com"},
			Gateways: []string{"istio-system/ingress", "mesh"},
			Http: []*networking.HTTPRoute{
				{Name: "mesh-only", Match: []*networking.HTTPMatchRequest{{Gateways: []string{"mesh"}}},
					Route: []*networking.HTTPRouteDestination{{Destination: gwDest("ratings", 0, "")}}},
				{Name: "canary", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/reviews"}}, Port: 80, Gateways: []string{"istio-system/ingress"}}},
					Route: []*networking.HTTPRouteDestination{{Destination: gwDest("reviews", 9080, "v1"), Weight: 90}, {Destination: gwDest("reviews", 9080, "v2"), Weight: 10}}},
				{Name: "other-port", Match: []*networking.HTTPMatchRequest{{Port: 8080}}, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("unused", 0, "")}}},
				{Name: "rest", Route: []*networking.HTTPRouteDestination{{Destination: gwDest("reviews", 0, "")}}},
			},
		}),
		// Bound by its short gateway name from the gateway's own namespace.
		vsConfig("admin", "istio-system", &networking.VirtualService{
			Hosts:    []string{"admin.example.com"},
			Gateways: []string{"ingress"},
			Http:     []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("ratings.default.svc.cluster.local", 0, "")}}}},
		}),
		vsConfig("secure", "default", &networking.VirtualService{
			Hosts:    []string{"db.secure.example.com", "web.secure.example.com"},
			Gateways: []string{"istio-system/ingress"},
			Tls: []*networking.TLSRoute{
				{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"db.secure.example.com"}, Port: 443}}, Route: []*networking.RouteDestination{{Destination: gwDest("mysql.db.svc.cluster.local", 3306, "")}}},
				{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"web.secure.example.com"}}}, Route: []*networking.RouteDestination{{Destination: gwDest("secure", 0, "")}}},
			},
		}),
		// The legacy name.namespace reference form.
		vsConfig("mysql", "db", &networking.VirtualService{
			Hosts:    []string{"mysql.db.svc.cluster.local"},
			Gateways: []string{"ingress.istio-system"},
			Tcp:      []*networking.TCPRoute{{Match: []*networking.L4MatchAttributes{{Port: 3306}}, Route: []*networking.RouteDestination{{Destination: gwDest("mysql", 0, "")}}}},
		}),
		// Mesh-only and other-gateway VirtualServices the router must not see.
		vsConfig("reviews", "default", &networking.VirtualService{
			Hosts: []string{"reviews"},
			Http:  []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("reviews", 0, "v2")}}}},
		}),
		vsConfig("egress", "default", &networking.VirtualService{
			Hosts: []string{"bookinfo.example.com"}, Gateways: []string{"istio-system/egress"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("unused", 0, "")}}}},
		}),
		// Not exported to istio-system.
		vsConfig("private", "default", &networking.VirtualService{
			Hosts: []string{"bookinfo.example.com"}, Gateways: []string{"istio-system/ingress"}, ExportTo: []string{"."},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("unused", 0, "")}}}},
		}),
	}
	return model.SnapshotInput{Services: services, Endpoints: endpoints, Configs: configs}
}

func TestGatewayGolden(t *testing.T) {
	s := model.NewSnapshot(1, gatewayInput())
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	checkResources(t, p, g)
	checkGolden(t, "router", Types(), g)
}

func names(rs []Resource) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func routeConfig(t *testing.T, rs []Resource, name string) *routev3.RouteConfiguration {
	t.Helper()
	r, ok := find(rs, name)
	if !ok {
		t.Fatalf("route configuration %s missing; have %v", name, names(rs))
	}
	return r.Message.(*routev3.RouteConfiguration)
}

func vhostByName(rc *routev3.RouteConfiguration, name string) *routev3.VirtualHost {
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() == name {
			return vh
		}
	}
	return nil
}

func routeNamesOf(vh *routev3.VirtualHost) []string {
	var out []string
	for _, r := range vh.GetRoutes() {
		out = append(out, r.GetName())
	}
	return out
}

// tcpClusterOf returns the cluster of a filter chain's tcp_proxy.
func tcpClusterOf(t *testing.T, fc *listenerv3.FilterChain) string {
	t.Helper()
	tp := &tcpproxyv3.TcpProxy{}
	if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatal(err)
	}
	return tp.GetCluster()
}

// TestGatewaySemantics checks what a router gets from the gateway mesh, feature by feature.
func TestGatewaySemantics(t *testing.T) {
	s := model.NewSnapshot(1, gatewayInput())
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if got, want := names(g[ListenerType]), []string{"0.0.0.0_3306", "0.0.0.0_443", "0.0.0.0_80", "0.0.0.0_8080"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v (no sidecar listeners on a router)", got, want)
	}
	rc := routeConfig(t, g[RouteType], "http.80")
	var vhs []string
	for _, vh := range rc.GetVirtualHosts() {
		vhs = append(vhs, vh.GetName())
	}
	if want := []string{"admin.example.com:80", "bookinfo.example.com:80"}; !slices.Equal(vhs, want) {
		t.Errorf("virtual hosts %v, want %v", vhs, want)
	}
	vh8080 := vhostByName(routeConfig(t, g[RouteType], "http.8080"), "bookinfo.example.com:8080")
	if vh8080.GetRequireTls() != routev3.VirtualHost_ALL {
		t.Errorf("httpsRedirect server: virtual host %v does not require TLS", vh8080)
	}
	// On port 8080 the port-80 match (canary) is left out and the port-8080 one applies; it
	// matches every request there, so "rest" is unreachable and left out, as istiod does.
	if got, want := routeNamesOf(vh8080), []string{"other-port"}; !slices.Equal(got, want) {
		t.Errorf("bookinfo routes on 8080: %v, want %v", got, want)
	}
	book := vhostByName(rc, "bookinfo.example.com:80")
	if book.GetRequireTls() != routev3.VirtualHost_NONE {
		t.Errorf("plain HTTP server requires TLS")
	}
	// mesh-only (match for the mesh), other-port (port 8080) are left out; the egress and the
	// private (exportTo ".") VirtualServices add nothing.
	if got, want := routeNamesOf(book), []string{"canary", "rest"}; !slices.Equal(got, want) {
		t.Errorf("bookinfo routes %v, want %v", got, want)
	}
	if !slices.Equal(book.GetDomains(), []string{"bookinfo.example.com", "bookinfo.example.com:80"}) {
		t.Errorf("bookinfo domains %v", book.GetDomains())
	}
	canary := book.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()
	if len(canary) != 2 || canary[0].GetName() != "outbound|9080|v1|reviews.default.svc.cluster.local" || canary[0].GetWeight().GetValue() != 90 {
		t.Errorf("canary clusters %v", canary)
	}
	if c := book.GetRoutes()[1].GetRoute().GetCluster(); c != "outbound|9080||reviews.default.svc.cluster.local" {
		t.Errorf("rest routes to %q", c)
	}
	// TLS passthrough: one SNI chain per tls route, to tcp_proxy clusters.
	tlsL, _ := find(g[ListenerType], "0.0.0.0_443")
	l := tlsL.Message.(*listenerv3.Listener)
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != tlsInspectorFilterName {
		t.Errorf("TLS listener filters %v, want the TLS inspector", l.GetListenerFilters())
	}
	chains := map[string]string{}
	for _, fc := range l.GetFilterChains() {
		chains[strings.Join(fc.GetFilterChainMatch().GetServerNames(), ",")] = tcpClusterOf(t, fc)
	}
	wantChains := map[string]string{
		"db.secure.example.com":  "outbound|3306||mysql.db.svc.cluster.local",
		"web.secure.example.com": "outbound|8443||secure.default.svc.cluster.local",
	}
	if diff := cmp.Diff(wantChains, chains); diff != "" {
		t.Errorf("SNI chains (-want +got):\n%s", diff)
	}
	tcpL, _ := find(g[ListenerType], "0.0.0.0_3306")
	if c := tcpClusterOf(t, tcpL.Message.(*listenerv3.Listener).GetFilterChains()[0]); c != "outbound|3306||mysql.db.svc.cluster.local" {
		t.Errorf("TCP listener routes to %q", c)
	}
	for _, r := range g[ListenerType] {
		if bind := r.Message.(*listenerv3.Listener).GetBindToPort(); bind != nil && !bind.GetValue() {
			t.Errorf("listener %s does not bind: a router listens on its ports", r.Name)
		}
	}
	// Only referenced clusters (plus BlackHoleCluster): no ratings subsets, no DR subsets of
	// other hosts.
	wantClusters := []string{
		BlackHoleCluster,
		"outbound|3306||mysql.db.svc.cluster.local",
		"outbound|8000||unused.default.svc.cluster.local", // the other-port route, on the 8080 server
		"outbound|8443||secure.default.svc.cluster.local",
		"outbound|9080|v1|reviews.default.svc.cluster.local",
		"outbound|9080|v2|reviews.default.svc.cluster.local",
		"outbound|9080||ratings.default.svc.cluster.local",
		"outbound|9080||reviews.default.svc.cluster.local",
	}
	if got := names(g[ClusterType]); !slices.Equal(got, wantClusters) {
		t.Errorf("clusters %v, want %v", got, wantClusters)
	}
	// A sidecar on the same snapshot sees the mesh-bound routes, not the gateway-only ones.
	sc := sidecarProxy("10.200.0.1", "default")
	sg, err := generateAll(t, sc, s)
	if err != nil {
		t.Fatalf("sidecar: %v", err)
	}
	if _, ok := find(sg[RouteType], "http.80"); ok {
		t.Errorf("sidecar got the router's route configuration http.80")
	}
	rc9080 := routeConfig(t, sg[RouteType], "9080")
	rv := vhostByName(rc9080, "reviews.default.svc.cluster.local:9080")
	if rv == nil || rv.GetRoutes()[0].GetRoute().GetCluster() != "outbound|9080|v2|reviews.default.svc.cluster.local" {
		t.Errorf("sidecar reviews route: %v", rv)
	}
}

// TestGatewaySelection: which Gateways apply to a router and which VirtualServices bind.
func TestGatewaySelection(t *testing.T) {
	httpGW := func(sel map[string]string) *networking.Gateway {
		return &networking.Gateway{Selector: sel, Servers: []*networking.Server{server(80, "HTTP", "*")}}
	}
	vs := func(name, ns string, gateways []string, match []*networking.HTTPMatchRequest) *istioconfig.Config {
		return vsConfig(name, ns, &networking.VirtualService{Hosts: []string{name + ".example.com"}, Gateways: gateways,
			Http: []*networking.HTTPRoute{{Name: name, Match: match, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("a.default.svc.cluster.local", 0, "")}}}}})
	}
	svc := &model.Service{Hostname: "a.default.svc.cluster.local", Namespace: "default", Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	tests := []struct {
		name    string
		labels  map[string]string
		configs []*istioconfig.Config
		want    []string // virtual hosts of http.80; nil = no listener at all
	}{
		{"selector does not match", map[string]string{"istio": "egressgateway"},
			[]*istioconfig.Config{gwConfig("gw", "gw-ns", httpGW(map[string]string{"istio": "ingressgateway"}))}, nil},
		{"empty selector selects every router", map[string]string{"x": "y"},
			[]*istioconfig.Config{gwConfig("gw", "gw-ns", httpGW(nil)), vs("a", "default", []string{"gw-ns/gw"}, nil)}, []string{"a.example.com:80"}},
		{"selector must match every label", map[string]string{"istio": "ingressgateway"},
			[]*istioconfig.Config{gwConfig("gw", "gw-ns", httpGW(map[string]string{"istio": "ingressgateway", "zone": "a"}))}, nil},
		{"binding forms", ingressLabels, []*istioconfig.Config{
			gwConfig("gw", "gw-ns", httpGW(map[string]string{"istio": "ingressgateway"})),
			vs("slash", "default", []string{"gw-ns/gw"}, nil),
			vs("short", "gw-ns", []string{"gw"}, nil),
			vs("legacy", "default", []string{"gw.gw-ns.svc.cluster.local"}, nil),
			vs("wrongns", "default", []string{"gw"}, nil),
			vs("meshonly", "default", []string{"mesh"}, nil),
			vs("nogateways", "default", nil, nil),
			vs("matchother", "default", []string{"gw-ns/gw"}, []*networking.HTTPMatchRequest{{Gateways: []string{"gw-ns/other"}}}),
		}, []string{"legacy.example.com:80", "short.example.com:80", "slash.example.com:80"}},
		{"no gateway selects: no listeners", ingressLabels, []*istioconfig.Config{vs("a", "default", []string{"gw-ns/gw"}, nil)}, nil},
		{"nothing bound: Istio's 404 virtual host", ingressLabels,
			[]*istioconfig.Config{gwConfig("gw", "gw-ns", httpGW(nil))}, []string{"blackhole:80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: tt.configs})
			p := routerProxy("gw-ns", tt.labels)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if len(g[ListenerType]) != 0 || len(g[RouteType]) != 0 {
					t.Fatalf("got listeners %v routes %v, want none", names(g[ListenerType]), names(g[RouteType]))
				}
				if got := names(g[ClusterType]); !slices.Equal(got, []string{BlackHoleCluster}) {
					t.Errorf("clusters %v, want only BlackHoleCluster", got)
				}
				return
			}
			checkResources(t, p, g)
			var got []string
			for _, vh := range routeConfig(t, g[RouteType], "http.80").GetVirtualHosts() {
				got = append(got, vh.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("virtual hosts %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGatewayExportTo: a VirtualService binds to a gateway only if exported to its namespace.
func TestGatewayExportTo(t *testing.T) {
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Servers: []*networking.Server{server(80, "HTTP", "*")}})
	svc := &model.Service{Hostname: "a.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	for _, tt := range []struct {
		exportTo []string
		bound    bool
	}{
		{nil, true}, {[]string{"*"}, true}, {[]string{"."}, false}, {[]string{"istio-system"}, true},
		{[]string{"other"}, false}, {[]string{"~"}, false}, {[]string{".", "istio-system"}, true},
	} {
		v := vsConfig("a", "apps", &networking.VirtualService{Hosts: []string{"a.example.com"}, Gateways: []string{"istio-system/gw"}, ExportTo: tt.exportTo,
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("a", 0, "")}}}}})
		s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{gw, v}})
		rs, err := ForType(RouteType, routerProxy("istio-system", nil)).Generate(routerProxy("istio-system", nil), s, []string{"http.80"})
		if err != nil {
			t.Fatal(err)
		}
		got := vhostByName(rs[0].Message.(*routev3.RouteConfiguration), "a.example.com:80") != nil
		if got != tt.bound {
			t.Errorf("exportTo %v: bound %v, want %v", tt.exportTo, got, tt.bound)
		}
	}
}

// TestGatewayErrors: bad servers and routes cost only themselves, with an error naming them.
func TestGatewayErrors(t *testing.T) {
	simple := server(8443, "HTTPS", "*")
	// Termination with certificate files is generated (gateway_tlsmodes_test.go).
	simple.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: "/c.pem", PrivateKey: "/k.pem"}
	// AUTO_PASSTHROUGH is generated (gateway_autopassthrough_test.go).
	auto := server(15443, "TLS", "*")
	auto.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Servers: []*networking.Server{
		server(80, "HTTP", "*"), simple, auto, server(80, "TCP", "*"), passthrough443("*"), server(9000, "UDP", "*"),
	}})
	multi := &model.Service{Hostname: "multi.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{
		{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}, {Name: "http2", Number: 8001, Protocol: model.ProtocolHTTP}}}
	one := &model.Service{Hostname: "one.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "tls", Number: 8443, Protocol: model.ProtocolTLS}}}
	configs := []*istioconfig.Config{gw,
		vsConfig("a", "apps", &networking.VirtualService{Hosts: []string{"a.example.com"}, Gateways: []string{"istio-system/gw"},
			Http: []*networking.HTTPRoute{
				{Name: "badregex", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "("}}}},
					Route: []*networking.HTTPRouteDestination{{Destination: gwDest("multi", 8000, "")}}},
				{Name: "good", Route: []*networking.HTTPRouteDestination{{Destination: gwDest("multi", 8001, "")}}},
			},
			Tls: []*networking.TLSRoute{
				{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.example.com"}}}, Route: []*networking.RouteDestination{{Destination: gwDest("one", 0, "")}}},
			}}),
		vsConfig("b", "apps", &networking.VirtualService{Hosts: []string{"a.example.com"}, Gateways: []string{"istio-system/gw"},
			Tls: []*networking.TLSRoute{
				{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.example.com"}}}, Route: []*networking.RouteDestination{{Destination: gwDest("one", 0, "")}}},
				{Match: []*networking.TLSMatchAttributes{{Port: 443}}, Route: []*networking.RouteDestination{{Destination: gwDest("one", 0, "")}}},
			}}),
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{multi, one}, Configs: configs})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err == nil {
		t.Fatal("no error for the unsupported servers and bad routes")
	}
	for _, want := range []string{
		"servers[3]: port 80 is TCP here but HTTP in Gateway istio-system/gw servers[0]",
		"servers[5]: protocol \"UDP\" is not supported",
		"VirtualService apps/a http[0 (badregex)]",
		`VirtualService apps/b tls[0] on Gateway istio-system/gw servers[4] port 443: SNI "a.example.com" is already routed by VirtualService apps/a tls[0]`,
		"VirtualService apps/b tls[1]", "a match without sniHosts",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// What is valid is still served, and passes Envoy's checks.
	checkResources(t, p, g)
	if got := names(g[ListenerType]); !slices.Equal(got, []string{"0.0.0.0_15443", "0.0.0.0_443", "0.0.0.0_80", "0.0.0.0_8443"}) {
		t.Errorf("listeners %v", got)
	}
	vh := vhostByName(routeConfig(t, g[RouteType], "http.80"), "a.example.com:80")
	if got := routeNamesOf(vh); !slices.Equal(got, []string{"good"}) {
		t.Errorf("routes %v, want only the good one", got)
	}
	tlsL, _ := find(g[ListenerType], "0.0.0.0_443")
	if n := len(tlsL.Message.(*listenerv3.Listener).GetFilterChains()); n != 1 {
		t.Errorf("%d SNI chains, want 1 (the duplicate dropped)", n)
	}
}

// TestGatewayKeyScope: routers with the same labels and namespace share bytes; the router class
// never equals a sidecar's, and labels that change the selected gateways change the scope.
// TestGatewayKeyScope: routers with the same labels and namespace share bytes; the router class
// never equals a sidecar's, and labels that change the selected gateways change the scope.
func TestGatewayKeyScope(t *testing.T) {
	s := model.NewSnapshot(1, gatewayInput())
	a := routerProxy("istio-system", ingressLabels)
	b := routerProxy("istio-system", ingressLabels)
	b.IPAddresses, b.ID = []string{"100.64.0.9"}, "gateway-9.istio-system"
	other := routerProxy("istio-system", map[string]string{"istio": "egressgateway"})
	side := sidecarProxy("100.64.0.1", "istio-system")
	side.Labels = ingressLabels
	ga, err := generateAll(t, a, s)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := generateAll(t, b, s)
	gs, _ := generateAll(t, side, s)
	for _, typeURL := range Types() {
		if KeyScope(typeURL, a) != KeyScope(typeURL, b) {
			t.Errorf("%s: routers a and b have scopes %q and %q", typeURL, KeyScope(typeURL, a), KeyScope(typeURL, b))
		}
		if !sameBytes(t, ga[typeURL], gb[typeURL]) {
			t.Errorf("%s: same scope, different bytes", typeURL)
		}
		if typeURL == EndpointType {
			continue
		}
		if KeyScope(typeURL, a) == KeyScope(typeURL, side) {
			t.Errorf("%s: router and sidecar share scope %q", typeURL, KeyScope(typeURL, a))
		}
		if sameBytes(t, ga[typeURL], gs[typeURL]) {
			t.Errorf("%s: router and sidecar got identical resources; the test mesh should tell them apart", typeURL)
		}
		if cacheClass(typeURL, a, s) == cacheClass(typeURL, other, s) {
			t.Errorf("%s: routers selected by different gateways share class %q", typeURL, cacheClass(typeURL, a, s))
		}
	}
	if go2, _ := generateAll(t, other, s); sameBytes(t, ga[ListenerType], go2[ListenerType]) {
		t.Errorf("the egress router got the ingress listeners")
	}
}

func sameBytes(t *testing.T, x, y []Resource) bool {
	t.Helper()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		bx, err1 := Marshal(x[i].Message)
		by, err2 := Marshal(y[i].Message)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if x[i].Name != y[i].Name || !bytes.Equal(bx, by) {
			return false
		}
	}
	return true
}

func TestParseGatewayRef(t *testing.T) {
	tests := []struct {
		ref, vsNS, ns, name string
		mesh, ok            bool
	}{
		{"mesh", "a", "", "", true, true},
		{"istio-system/ingress", "a", "istio-system", "ingress", false, true},
		{"./ingress", "a", "a", "ingress", false, true},
		{"ingress", "a", "a", "ingress", false, true},
		{"ingress.istio-system", "a", "istio-system", "ingress", false, true},
		{"ingress.istio-system.svc.cluster.local", "a", "istio-system", "ingress", false, true},
		{"/ingress", "a", "", "", false, false},
		{"ns/", "a", "", "", false, false},
		{"ns/a/b", "a", "", "", false, false},
		{"ingress.", "a", "", "", false, false},
		{"", "a", "", "", false, false},
		{"a.b/name", "a", "", "", false, false},
		{"name", ".", "", "", false, false},
	}
	for _, tt := range tests {
		ns, name, mesh, ok := ParseGatewayRef(tt.ref, tt.vsNS)
		if ns != tt.ns || name != tt.name || mesh != tt.mesh || ok != tt.ok {
			t.Errorf("ParseGatewayRef(%q, %q) = %q %q %v %v; want %q %q %v %v", tt.ref, tt.vsNS, ns, name, mesh, ok, tt.ns, tt.name, tt.mesh, tt.ok)
		}
	}
}

// FuzzGatewayNames: gateway references and server hosts never panic, and a resolved reference
// written back as namespace/name resolves to itself.
func FuzzGatewayNames(f *testing.F) {
	for _, s := range []string{"mesh", "istio-system/ingress", "ingress", "a.b.svc.cluster.local", "./x", "/", ".", "a/b/c", "*/h", "~/h"} {
		f.Add(s, "default")
	}
	f.Fuzz(func(t *testing.T, ref, vsNS string) {
		ns, name, mesh, ok := ParseGatewayRef(ref, vsNS)
		if ok && !mesh {
			if ns == "" || name == "" || strings.Contains(name, "/") {
				t.Fatalf("%q: ok with ns %q name %q", ref, ns, name)
			}
			if !strings.Contains(ns, "/") {
				ns2, name2, _, ok2 := ParseGatewayRef(ns+"/"+name, "elsewhere")
				if !ok2 || ns2 != ns || name2 != name {
					t.Fatalf("%q: %s/%s resolves to %q %q %v", ref, ns, name, ns2, name2, ok2)
				}
			}
		}
		for _, sh := range parseServerHosts([]string{ref}, vsNS) {
			if sh.host == "" || sh.ns == "~" {
				t.Fatalf("%q: server host %+v", ref, sh)
			}
			_, _ = sh.intersect(name, ns)
		}
	})
}

// gatewayBenchSnapshot is benchSnapshot's 1,000 services plus 4 ingress Gateways (HTTP on 80,
// TLS passthrough on 443) exposing 25 hosts each, every host a VirtualService bound to its
// gateway routing HTTP and SNI to one HTTP service.
func gatewayBenchSnapshot(tb testing.TB) *model.Snapshot {
	tb.Helper()
	top := buildTopology(1000, 10)
	for g := range 4 {
		gw := "gw-" + strconv.Itoa(g)
		domain := "*/*." + gw + ".example.com"
		top.configs = append(top.configs, gwConfig(gw, "istio-system", &networking.Gateway{
			Selector: map[string]string{"istio": "ingressgateway"},
			Servers:  []*networking.Server{server(80, "HTTP", domain), passthrough443(domain)},
		}))
		for h := range 25 {
			svc := host((g*25 + h) * 5) // protocol HTTP in buildTopology
			name := "h-" + strconv.Itoa(h) + "." + gw + ".example.com"
			d := gwDest(svc, 80, "")
			top.configs = append(top.configs, vsConfig(gw+"-h-"+strconv.Itoa(h), "istio-system", &networking.VirtualService{
				Hosts: []string{name}, Gateways: []string{gw},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: d}}}},
				Tls: []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{name}}},
					Route: []*networking.RouteDestination{{Destination: d}}}},
			}))
		}
	}
	return top.snapshot(1)
}

// BenchmarkRouterFullConfig compares the full config of a router behind 4 gateways × 25 hosts
// with a sidecar's on the same 1,000-service mesh: bytes, resources and generation time.
func BenchmarkRouterFullConfig(b *testing.B) {
	s := gatewayBenchSnapshot(b)
	for _, tc := range []struct {
		name string
		p    *model.Proxy
	}{
		{"router", routerProxy("istio-system", ingressLabels)},
		{"sidecar", sidecarProxy("10.0.0.1", "ns-0")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var bytes, resources int
			start, cpu := time.Now(), procstat.CPU()
			for b.Loop() {
				g, err := generateAll(b, tc.p, s)
				if err != nil {
					b.Fatal(err)
				}
				bytes, resources = 0, 0
				for _, rs := range g {
					for _, r := range rs {
						resources++
						buf, err := Marshal(r.Message)
						if err != nil {
							b.Fatal(err)
						}
						bytes += len(buf)
					}
				}
			}
			reportPerProxy(b, start, cpu, bytes, resources)
		})
	}
}

// TestGatewayBenchSnapshotIsValid keeps the benchmark's mesh honest: the router's config from
// it is valid and complete.
func TestGatewayBenchSnapshotIsValid(t *testing.T) {
	if testing.Short() {
		t.Skip("large mesh")
	}
	s := gatewayBenchSnapshot(t)
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	rc := routeConfig(t, g[RouteType], "http.80")
	if n := len(rc.GetVirtualHosts()); n != 100 {
		t.Errorf("%d virtual hosts, want 100", n)
	}
	l, _ := find(g[ListenerType], "0.0.0.0_443")
	if n := len(l.Message.(*listenerv3.Listener).GetFilterChains()); n != 100 {
		t.Errorf("%d SNI chains, want 100", n)
	}
}

// TestGatewayDestinationPort: a destination without a port goes to the service's only port,
// else to the port of the gateway server the route is bound on (istiod's
// GetDestinationCluster), never dropped.
func TestGatewayDestinationPort(t *testing.T) {
	multi := &model.Service{Hostname: "multi.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "grpc", Number: 9090, Protocol: model.ProtocolGRPC}}}
	one := &model.Service{Hostname: "one.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.2"}, Ports: []model.Port{
		{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	tests := []struct {
		name   string
		server uint32
		dest   *networking.Destination
		want   string
	}{
		{"several ports: the server's", 80, gwDest("multi", 0, ""), ClusterName(Outbound, 80, "", multi.Hostname)},
		{"several ports, a server port the service lacks", 8080, gwDest("multi", 0, "v1"), ClusterName(Outbound, 8080, "v1", multi.Hostname)},
		{"one port: that one", 80, gwDest("one", 0, ""), ClusterName(Outbound, 8000, "", one.Hostname)},
		{"a named port wins", 80, gwDest("multi", 9090, ""), ClusterName(Outbound, 9090, "", multi.Hostname)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(tt.server, "HTTP", "*")}})
			vs := vsConfig("www", "apps", &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: tt.dest}}}}})
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{multi, one}, Configs: []*istioconfig.Config{gw, vs}})
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			rc := routeConfig(t, g[RouteType], "http."+strconv.Itoa(int(tt.server)))
			var got []string
			for _, vh := range rc.GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					got = append(got, r.GetRoute().GetCluster())
				}
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("routes to %v, want [%s]", got, tt.want)
			}
		})
	}
}

// TestGatewayVirtualServiceOrder: VirtualServices sharing a host on a gateway contribute their
// routes in istiod's order (creation time, then name, then namespace), so an older specific
// route is not hidden by a newer catch-all that sorts first by name; and catch-alls go after
// every other route of the virtual host, so an older one does not hide a newer specific route.
func TestGatewayVirtualServiceOrder(t *testing.T) {
	svc := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}})
	vs := func(name, ns, route string, match bool) *istioconfig.Config {
		hr := &networking.HTTPRoute{Name: route, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web.apps.svc.cluster.local", 80, "")}}}
		if match {
			hr.Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/" + route}}}}
		}
		return vsConfig(name, ns, &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw"}, Http: []*networking.HTTPRoute{hr}})
	}
	tests := []struct {
		name string
		vss  []*istioconfig.Config
		want []string
	}{
		{"older first", []*istioconfig.Config{createdAt(vs("aaa", "apps", "all", false), 2), createdAt(vs("zzz", "apps", "api", true), 1)}, []string{"api", "all"}},
		{"same time: by name, not namespace", []*istioconfig.Config{vs("b", "apps", "all", false), vs("a", "zz", "api", true)}, []string{"api", "all"}},
		{"newer catch-all last", []*istioconfig.Config{createdAt(vs("aaa", "apps", "api", true), 1), createdAt(vs("zzz", "apps", "all", false), 2)}, []string{"api", "all"}},
		{"older catch-all still last", []*istioconfig.Config{createdAt(vs("zzz", "apps", "all", false), 1), createdAt(vs("aaa", "apps", "api", true), 2)}, []string{"api", "all"}},
		{"catch-alls keep their order", []*istioconfig.Config{createdAt(vs("a", "apps", "all", false), 1), createdAt(vs("b", "apps", "api", true), 2), createdAt(vs("c", "apps", "rest", false), 3)}, []string{"api", "all", "rest"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: append([]*istioconfig.Config{gw}, tt.vss...)})
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			vh := vhostByName(routeConfig(t, g[RouteType], "http.80"), "www.example.com:80")
			if got := routeNamesOf(vh); !slices.Equal(got, tt.want) {
				t.Errorf("routes %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGatewayVirtualHostsCollapsed: hosts whose routes come from the same VirtualServices of the
// same Gateway share one virtual host, named after the first host (istiod's
// collapseDuplicateRoutes); a host with routes of its own keeps its virtual host.
func TestGatewayVirtualHostsCollapsed(t *testing.T) {
	svc := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}})
	route := func(name string) []*networking.HTTPRoute {
		return []*networking.HTTPRoute{{Name: name, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web.apps.svc.cluster.local", 80, "")}}}}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{gw,
		createdAt(vsConfig("shared", "apps", &networking.VirtualService{Hosts: []string{"b.example.com", "a.example.com", "c.example.com"}, Gateways: []string{"istio-system/gw"}, Http: route("shared")}), 1),
		createdAt(vsConfig("extra", "apps", &networking.VirtualService{Hosts: []string{"c.example.com"}, Gateways: []string{"istio-system/gw"}, Http: route("extra")}), 2),
	}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, vh := range routeConfig(t, g[RouteType], "http.80").GetVirtualHosts() {
		got = append(got, vh.GetName()+" "+strings.Join(vh.GetDomains(), ",")+" "+strings.Join(routeNamesOf(vh), ","))
	}
	want := []string{
		"a.example.com:80 a.example.com,a.example.com:80,b.example.com,b.example.com:80 shared",
		"c.example.com:80 c.example.com,c.example.com:80 shared,extra",
	}
	if !slices.Equal(got, want) {
		t.Errorf("virtual hosts\n %q\nwant\n %q", got, want)
	}
}

// TestGatewayHTTPSRedirectWithoutRoutes: a host of an httpsRedirect server that no VirtualService
// routes still gets a virtual host requiring TLS (Envoy redirects to HTTPS), as istiod builds
// it; such hosts share one virtual host. A host with a namespace ("apps/B.example.com") keeps
// it in that virtual host's domains, lowercased, as istiod keys it by the server host as
// written.
func TestGatewayHTTPSRedirectWithoutRoutes(t *testing.T) {
	svc := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	redirect := server(80, "HTTP", "a.example.com", "apps/B.example.com", "routed.example.com")
	redirect.Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{redirect}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{gw,
		vsConfig("routed", "apps", &networking.VirtualService{Hosts: []string{"routed.example.com"}, Gateways: []string{"istio-system/gw"},
			Http: []*networking.HTTPRoute{{Name: "r", Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web.apps.svc.cluster.local", 80, "")}}}}}),
	}})
	got := routerVirtualHosts(t, s, "http.80")
	want := []string{
		"apps/b.example.com,apps/b.example.com:80,a.example.com,a.example.com:80 ALL ",
		"routed.example.com,routed.example.com:80 ALL r",
	}
	if !slices.Equal(got, want) {
		t.Errorf("virtual hosts\n %q\nwant\n %q", got, want)
	}
}

// TestGatewayRoutesAnswerEveryName: a gateway asking for a route configuration of a server
// that is gone (its listener drains) gets an empty one, as istiod answers it.
func TestGatewayRoutesAnswerEveryName(t *testing.T) {
	p := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	s := model.NewSnapshot(1, model.SnapshotInput{})
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"http.8080"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "http.8080" {
		t.Fatalf("route configurations %v, want http.8080", rs)
	}
	rc := rs[0].Message.(*routev3.RouteConfiguration)
	if rc.GetName() != "http.8080" || len(rc.GetVirtualHosts()) != 0 {
		t.Errorf("got %v, want an empty route configuration http.8080", rc)
	}
	if _, err := validateDeep(rc); err != nil {
		t.Error(err)
	}
}

// TestGatewayNothingBoundHasNoRoutes: a gateway server no VirtualService binds to gets
// istiod's virtual host "*" without routes (Envoy answers 404, no route), not a route of its own.
func TestGatewayNothingBoundHasNoRoutes(t *testing.T) {
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Servers: []*networking.Server{server(80, "HTTP", "*")}})
	s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{gw}})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	vhs := routeConfig(t, g[RouteType], "http.80").GetVirtualHosts()
	if len(vhs) != 1 || !slices.Equal(vhs[0].GetDomains(), []string{"*"}) || len(vhs[0].GetRoutes()) != 0 {
		t.Errorf("virtual hosts %v, want one for \"*\" without routes", vhs)
	}
}

// TestGatewaySecondTCPServerSkipped: two Gateways with a TCP server on one port: istiod keeps
// the oldest Gateway's server (creation time, then name) and skips the other whole, so a
// VirtualService bound only to the skipped one routes nothing and the port has no listener.
func TestGatewaySecondTCPServerSkipped(t *testing.T) {
	svc := &model.Service{Hostname: "db.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "tcp", Number: 6379, Protocol: model.ProtocolTCP}}}
	for _, tt := range []struct {
		boundTo      string
		wantListener bool
	}{{"gw/a", true}, {"gw/b", false}} {
		t.Run(tt.boundTo, func(t *testing.T) {
			tcpGW := func(name string) *istioconfig.Config {
				return gwConfig(name, "gw", &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{server(31400, "TCP", "*")}})
			}
			vs := vsConfig("tcp", "apps", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{tt.boundTo},
				Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest("db.apps.svc.cluster.local", 6379, "")}}}}})
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{tcpGW("b"), tcpGW("a"), vs}})
			p := routerProxy("gw", ingressLabels)
			g, err := generateAll(t, p, s)
			if err == nil || !strings.Contains(err.Error(), "gw/b") {
				t.Errorf("error %v, want one naming the skipped server of gw/b", err)
			}
			if got := slices.Contains(names(g[ListenerType]), "0.0.0.0_31400"); got != tt.wantListener {
				t.Errorf("listeners %v: 0.0.0.0_31400 present %v, want %v", names(g[ListenerType]), got, tt.wantListener)
			}
		})
	}
}

// TestGatewayDestinationWithoutPortOfHiddenService: a gateway route's destination without a
// port takes the service's only port when the gateway sees the service, and the server's port
// when the service is exported elsewhere (istiod's GetDestinationCluster finds no service for
// the proxy then).
func TestGatewayDestinationWithoutPortOfHiddenService(t *testing.T) {
	seen := &model.Service{Hostname: "seen.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	hidden := &model.Service{Hostname: "hidden.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.2"}, ExportTo: []string{"."}, Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}})
	vs := vsConfig("vs", "apps", &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw"}, Http: []*networking.HTTPRoute{
		{Name: "hidden", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/hidden")}}, Route: []*networking.HTTPRouteDestination{{Destination: gwDest(hidden.Hostname, 0, "")}}},
		{Name: "seen", Route: []*networking.HTTPRouteDestination{{Destination: gwDest(seen.Hostname, 0, "")}}},
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{seen, hidden}, Configs: []*istioconfig.Config{gw, vs}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, r := range vhostByName(routeConfig(t, g[RouteType], "http.80"), "www.example.com:80").GetRoutes() {
		got = append(got, r.GetRoute().GetCluster())
	}
	want := []string{"outbound|80||hidden.apps.svc.cluster.local", "outbound|8000||seen.apps.svc.cluster.local"}
	if !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

// TestGatewayPassthroughServiceIsEDS: a gateway's cluster of a resolution NONE service is an
// EDS cluster with the usual load balancer (istiod: a gateway cannot pass through to the
// address the client dialled), where a sidecar's is ORIGINAL_DST.
func TestGatewayPassthroughServiceIsEDS(t *testing.T) {
	const host = "legacy.apps.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "apps", Resolution: model.ResolutionPassthrough, Addresses: []string{"10.96.5.1"}, Ports: []model.Port{{Name: "http", Number: 8000, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}})
	vs := vsConfig("vs", "apps", &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw"}, Http: []*networking.HTTPRoute{
		{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(host, 8000, "")}}},
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{gw, vs}})
	name := "outbound|8000||" + host
	for _, tt := range []struct {
		p    *model.Proxy
		typ  clusterv3.Cluster_DiscoveryType
		lb   clusterv3.Cluster_LbPolicy
		eds  bool
		what string
	}{
		{routerProxy("istio-system", ingressLabels), clusterv3.Cluster_EDS, clusterv3.Cluster_LEAST_REQUEST, true, "gateway"},
		{sidecarProxy("10.9.9.9", "apps"), clusterv3.Cluster_ORIGINAL_DST, clusterv3.Cluster_CLUSTER_PROVIDED, false, "sidecar"},
	} {
		g, err := generateAll(t, tt.p, s)
		if err != nil {
			t.Fatal(err)
		}
		checkResources(t, tt.p, g)
		r, ok := find(g[ClusterType], name)
		if !ok {
			t.Fatalf("%s: no cluster %s", tt.what, name)
		}
		c := r.Message.(*clusterv3.Cluster)
		if c.GetType() != tt.typ || c.GetLbPolicy() != tt.lb {
			t.Errorf("%s: cluster type %s, lb %s; want %s, %s", tt.what, c.GetType(), c.GetLbPolicy(), tt.typ, tt.lb)
		}
		if _, ok := find(g[EndpointType], name); ok != tt.eds {
			t.Errorf("%s: EDS assignment listed: %v, want %v", tt.what, ok, tt.eds)
		}
	}
}

// TestGatewayTCPDestinationWithoutPort: a gateway tcp route's destination without a port takes
// the only port of a service the gateway sees, else the server's port (istiod's
// GetDestinationCluster): for a service with several ports, or one exported elsewhere.
func TestGatewayTCPDestinationWithoutPort(t *testing.T) {
	tcp := func(n ...uint32) []model.Port {
		var ps []model.Port
		for _, x := range n {
			ps = append(ps, model.Port{Name: "tcp-" + strconv.Itoa(int(x)), Number: x, Protocol: model.ProtocolTCP})
		}
		return ps
	}
	one := &model.Service{Hostname: "one.apps.svc.cluster.local", Namespace: "apps", Ports: tcp(5432)}
	multi := &model.Service{Hostname: "multi.apps.svc.cluster.local", Namespace: "apps", Ports: tcp(5433, 5434)}
	hidden := &model.Service{Hostname: "hidden.apps.svc.cluster.local", Namespace: "apps", ExportTo: []string{"."}, Ports: tcp(5435)}
	for _, tt := range []struct {
		svc  *model.Service
		want string
	}{
		{one, "outbound|5432||one.apps.svc.cluster.local"},
		{multi, "outbound|31400||multi.apps.svc.cluster.local"},
		{hidden, "outbound|31400||hidden.apps.svc.cluster.local"},
	} {
		gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(31400, "TCP", "*")}})
		vs := vsConfig("vs", "apps", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/gw"}, Tcp: []*networking.TCPRoute{
			{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: tt.svc.Hostname}}}},
		}})
		s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{tt.svc}, Configs: []*istioconfig.Config{gw, vs}})
		p := routerProxy("istio-system", ingressLabels)
		g, err := generateAll(t, p, s)
		if err != nil {
			t.Fatal(err)
		}
		checkResources(t, p, g)
		r, ok := find(g[ListenerType], "0.0.0.0_31400")
		if !ok {
			t.Fatalf("%s: no listener 0.0.0.0_31400", tt.svc.Hostname)
		}
		if got := tcpClusterOf(t, r.Message.(*listenerv3.Listener).GetFilterChains()[0]); got != tt.want {
			t.Errorf("cluster %s, want %s", got, tt.want)
		}
	}
}

// TestGatewayMatchSourceConditions: a match naming the gateway applies on it whatever its
// sourceLabels and sourceNamespace say (istiod checks those only for a match without
// gateways); one without gateways is checked against the gateway's labels and namespace.
// Found by the third stream of hack/istio/parity's random meshes (found.yaml section 15).
func TestGatewayMatchSourceConditions(t *testing.T) {
	svc := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.1.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}})
	route := func(name, uri string, m *networking.HTTPMatchRequest) *networking.HTTPRoute {
		m.Uri = prefix(uri)
		return &networking.HTTPRoute{Name: name, Match: []*networking.HTTPMatchRequest{m}, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web", 0, "")}}}
	}
	vs := vsConfig("www", "apps", &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw", "mesh"}, Http: []*networking.HTTPRoute{
		route("named-labels", "/a", &networking.HTTPMatchRequest{Gateways: []string{"istio-system/gw"}, SourceLabels: map[string]string{"app": "client"}}),
		route("named-namespace", "/b", &networking.HTTPMatchRequest{Gateways: []string{"istio-system/gw"}, SourceNamespace: "apps"}),
		route("mesh-only", "/c", &networking.HTTPMatchRequest{Gateways: []string{"mesh"}}),
		route("unnamed-labels", "/d", &networking.HTTPMatchRequest{SourceLabels: map[string]string{"app": "client"}}),
		route("unnamed-gateway-labels", "/e", &networking.HTTPMatchRequest{SourceLabels: map[string]string{"istio": "ingressgateway"}}),
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{gw, vs}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, vh := range routeConfig(t, g[RouteType], "http.80").GetVirtualHosts() {
		got = append(got, routeNamesOf(vh)...)
	}
	if want := []string{"named-labels", "named-namespace", "unnamed-gateway-labels"}; !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
}

// TestGatewayRedirectPortOfTLSServer: on a server with a tls block (HTTPS, or HTTP with
// httpsRedirect) a redirect without a scheme is to https, so its port 443 (explicit, or the
// request's for derivePort FROM_REQUEST_PORT) is left out, as istiod's IsTLS routes do; on a
// plain HTTP server port 80 is. Found by the third stream of hack/istio/parity's random meshes
// (seed 369; found.yaml section 19).
func TestGatewayRedirectPortOfTLSServer(t *testing.T) {
	https := server(443, "HTTPS", "*")
	https.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert"}
	redirecting := server(8080, "HTTP", "*")
	redirecting.Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
	fromRequest := &networking.HTTPRedirect{Authority: "moved.example.org", RedirectPort: &networking.HTTPRedirect_DerivePort{DerivePort: networking.HTTPRedirect_FROM_REQUEST_PORT}}
	port443 := &networking.HTTPRedirect{Authority: "moved.example.org", RedirectPort: &networking.HTTPRedirect_Port{Port: 443}}
	tests := []struct {
		name     string
		srv      *networking.Server
		redirect *networking.HTTPRedirect
		route    string
		want     uint32
	}{
		{"HTTPS server, request port", https, fromRequest, "https.443.https-443.gw.istio-system", 0},
		{"HTTPS server, explicit 443", https, port443, "https.443.https-443.gw.istio-system", 0},
		{"httpsRedirect server, explicit 443", redirecting, port443, "http.8080", 0},
		{"plain server, request port", server(8080, "HTTP", "*"), fromRequest, "http.8080", 8080},
		{"plain server, explicit 443", server(8080, "HTTP", "*"), port443, "http.8080", 443},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{tt.srv}})
			vs := vsConfig("www", "apps", &networking.VirtualService{Hosts: []string{"www.example.com"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Redirect: tt.redirect}}})
			s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{gw, vs}})
			p := routerProxy("istio-system", ingressLabels)
			g, _ := generateAll(t, p, s)
			checkResources(t, p, g)
			var got []uint32
			for _, vh := range routeConfig(t, g[RouteType], tt.route).GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					if rd := r.GetRedirect(); rd != nil {
						got = append(got, rd.GetPortRedirect())
					}
				}
			}
			if !slices.Equal(got, []uint32{tt.want}) {
				t.Errorf("port_redirect %v, want [%d]", got, tt.want)
			}
		})
	}
}

// routerVirtualHosts generates the ingress router's config from s (checked) and summarises
// route configuration name's virtual hosts, one "domains require_tls route-names" line each.
func routerVirtualHosts(t *testing.T, s *model.Snapshot, name string) []string {
	t.Helper()
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, vh := range routeConfig(t, g[RouteType], name).GetVirtualHosts() {
		got = append(got, strings.Join(vh.GetDomains(), ",")+" "+vh.GetRequireTls().String()+" "+strings.Join(routeNamesOf(vh), ","))
	}
	return got
}
