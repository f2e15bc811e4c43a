package gen

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayServerBind: a server that binds an address gets a listener of its own on it,
// "BIND_PORT", as istiod builds it, beside the port's wildcard listener: its HTTP route
// configuration is "http.PORT.BIND", an HTTPS server's "https.PORT.NAME.GATEWAY.NS.BIND",
// and two TCP servers of one port do not conflict when one binds an address. A unix socket
// bind (istiod's needs port 0) is skipped with an error.
func TestGatewayServerBind(t *testing.T) {
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.5.1"},
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	db := &model.Service{Hostname: "db.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.5.2"},
		Ports: []model.Port{{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}}}
	bound := func(srv *networking.Server, bind string) *networking.Server {
		srv.Bind = bind
		return srv
	}
	https := bound(server(8443, "HTTPS", "*/pier.example.com"), "10.20.0.7")
	https.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "pier-cert"}
	gw := gwConfig("pier", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{
		server(8080, "HTTP", "*/open.example.com"),
		bound(server(8080, "HTTP", "*/pier.example.com"), "10.20.0.7"),
		https,
		server(9000, "TCP", "*"),
		bound(server(9000, "TCP", "*"), "127.0.0.1"),
		bound(server(9001, "TCP", "*"), "unix:///var/run/pier.sock"),
	}})
	vs := vsConfig("pier", "apps", &networking.VirtualService{Hosts: []string{"open.example.com", "pier.example.com"}, Gateways: []string{"istio-system/pier"},
		Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(web.Hostname, 80, "")}}}}})
	tcp := vsConfig("pier-tcp", "apps", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/pier"},
		Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest(db.Hostname, 5432, "")}}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web, db}, Configs: []*istioconfig.Config{gw, vs, tcp}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err == nil || !strings.Contains(err.Error(), `bind "unix:///var/run/pier.sock" is not an IP address`) {
		t.Errorf("error %v, want one about the unix socket bind", err)
	}
	checkResources(t, p, g)
	wantListeners := []string{"0.0.0.0_8080", "0.0.0.0_9000", "10.20.0.7_8080", "10.20.0.7_8443", "127.0.0.1_9000"}
	if got := names(g[ListenerType]); !slices.Equal(got, wantListeners) {
		t.Fatalf("listeners %v, want %v", got, wantListeners)
	}
	rdsOf := map[string]string{}
	for _, r := range g[ListenerType] {
		l := r.Message.(*listenerv3.Listener)
		if a := l.GetAddress().GetSocketAddress(); ListenerName(a.GetAddress(), a.GetPortValue()) != r.Name {
			t.Errorf("listener %s listens on %s:%d", r.Name, a.GetAddress(), a.GetPortValue())
		}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(h) == nil {
					rdsOf[r.Name] = h.GetRds().GetRouteConfigName()
				}
			}
		}
	}
	wantRDS := map[string]string{"0.0.0.0_8080": "http.8080", "10.20.0.7_8080": "http.8080.10.20.0.7", "10.20.0.7_8443": "https.8443.https-8443.pier.istio-system.10.20.0.7"}
	for l, want := range wantRDS {
		if rdsOf[l] != want {
			t.Errorf("listener %s routes by %q, want %q", l, rdsOf[l], want)
		}
	}
	for name, hosts := range map[string][]string{
		"http.8080":           {"open.example.com"},
		"http.8080.10.20.0.7": {"pier.example.com"},
		"https.8443.https-8443.pier.istio-system.10.20.0.7": {"pier.example.com"},
	} {
		var got []string
		for _, vh := range routeConfig(t, g[RouteType], name).GetVirtualHosts() {
			got = append(got, vh.GetDomains()[0])
		}
		if !slices.Equal(got, hosts) {
			t.Errorf("route %s: virtual hosts %v, want %v", name, got, hosts)
		}
	}
}
