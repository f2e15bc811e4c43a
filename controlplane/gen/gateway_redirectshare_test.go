package gen

import (
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayRedirectSharedPort: two Gateways' HTTP servers on port 80, one of them with
// httpsRedirect, sharing hosts. As istiod builds the port's virtual hosts: a host the
// redirecting server lists as written requires TLS whichever server's VirtualService routes it;
// a VirtualService with no HTTP route on the port (tcp routes only) makes no virtual host and
// requires TLS nowhere; a host listed with a namespace is a virtual host of that literal string;
// and hosts with the same routes collapse only into the last one seen with the same
// require_tls (random seeds 345, 398 and 536; corpus gwredirectshare.yaml).
func TestGatewayRedirectSharedPort(t *testing.T) {
	svc := &model.Service{Hostname: "shop.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.3.1"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	httpVS := func(name, route string, gw string, hosts ...string) *istioconfig.Config {
		return vsConfig(name, "apps", &networking.VirtualService{Hosts: hosts, Gateways: []string{gw},
			Http: []*networking.HTTPRoute{{Name: route, Route: []*networking.HTTPRouteDestination{{Destination: gwDest("shop.apps.svc.cluster.local", 8080, "")}}}}})
	}
	tcpOnlyVS := func(name, gw string, hosts ...string) *istioconfig.Config {
		return vsConfig(name, "apps", &networking.VirtualService{Hosts: hosts, Gateways: []string{gw},
			Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest("shop.apps.svc.cluster.local", 8080, "")}}}}})
	}
	redirecting := func(hosts ...string) *istioconfig.Config {
		srv := server(80, "HTTP", hosts...)
		srv.Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
		return createdAt(gwConfig("redirecting", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{srv}}), 1)
	}
	plain := func(hosts ...string) *istioconfig.Config {
		return createdAt(gwConfig("plain", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", hosts...)}}), 2)
	}
	for _, tt := range []struct {
		name    string
		configs []*istioconfig.Config
		want    []string // per virtual host: domains, require_tls, route names
	}{{
		// The redirecting server lists the host; only the plain server's VirtualService routes it.
		name: "listed host requires TLS",
		configs: []*istioconfig.Config{redirecting("cart.example.org"), plain("*"),
			httpVS("cart", "cart-route", "istio-system/plain", "cart.example.org")},
		want: []string{"cart.example.org,cart.example.org:80 ALL cart-route"},
	}, {
		// A VirtualService bound to the redirecting "*" server with tcp routes only adds nothing:
		// the plain server's host keeps no require_tls, and "*" redirects on its own.
		name: "tcp-only VirtualService makes no virtual host",
		configs: []*istioconfig.Config{redirecting("*"), plain("cart.example.org"),
			tcpOnlyVS("tcp-only", "istio-system/redirecting", "cart.example.org", "blog.example.org"),
			httpVS("cart", "cart-route", "istio-system/plain", "cart.example.org")},
		want: []string{
			"* ALL ",
			"cart.example.org,cart.example.org:80 NONE cart-route",
		},
	}, {
		// Hosts a, b, c with the same routes; b requires TLS: a and c do not collapse across it.
		name: "collapse compares with the last host seen",
		configs: []*istioconfig.Config{redirecting("b.example.org"), plain("*"),
			httpVS("abc", "abc-route", "istio-system/plain", "a.example.org", "b.example.org", "c.example.org")},
		want: []string{
			"a.example.org,a.example.org:80 NONE abc-route",
			"b.example.org,b.example.org:80 ALL abc-route",
			"c.example.org,c.example.org:80 NONE abc-route",
		},
	}, {
		// A namespaced host of the redirecting server names no routed virtual host: the plain
		// server's host stays without require_tls, and the literal string redirects.
		name: "namespaced host is literal",
		configs: []*istioconfig.Config{redirecting("apps/cart.example.org"), plain("*"),
			httpVS("cart", "cart-route", "istio-system/plain", "cart.example.org")},
		want: []string{
			"apps/cart.example.org,apps/cart.example.org:80 ALL ",
			"cart.example.org,cart.example.org:80 NONE cart-route",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: tt.configs})
			got := routerVirtualHosts(t, s, "http.80")
			if !slices.Equal(got, tt.want) {
				t.Errorf("virtual hosts\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// TestGatewayRoutesRepeatPerServer: a VirtualService bound to two Gateways whose HTTP servers
// on one port both expose its host gives that virtual host its routes once per server, as
// istiod appends them (the repeats never match first; the catch-all routes still go last), and
// a host only one server exposes does not collapse with it.
func TestGatewayRoutesRepeatPerServer(t *testing.T) {
	svc := &model.Service{Hostname: "shop.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.3.1"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	gw := func(name string, min int, hosts ...string) *istioconfig.Config {
		return createdAt(gwConfig(name, "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", hosts...)}}), min)
	}
	dest := []*networking.HTTPRouteDestination{{Destination: gwDest("shop.apps.svc.cluster.local", 8080, "")}}
	vs := vsConfig("both", "apps", &networking.VirtualService{Hosts: []string{"pier.example.org", "quay.example.org"},
		Gateways: []string{"istio-system/east", "istio-system/west"},
		Http: []*networking.HTTPRoute{
			{Name: "prefixed", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/p"}}}}, Route: dest},
			{Name: "rest", Route: dest},
		}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{
		gw("east", 1, "pier.example.org"), gw("west", 2, "pier.example.org", "quay.example.org"), vs}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, vh := range routeConfig(t, g[RouteType], "http.80").GetVirtualHosts() {
		got = append(got, strings.Join(vh.GetDomains(), ",")+" "+strings.Join(routeNamesOf(vh), ","))
	}
	want := []string{
		"pier.example.org,pier.example.org:80 prefixed,prefixed,rest,rest",
		"quay.example.org,quay.example.org:80 prefixed,rest",
	}
	if !slices.Equal(got, want) {
		t.Errorf("virtual hosts\n %q\nwant\n %q", got, want)
	}
}
