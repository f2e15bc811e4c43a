package gen

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayGRPCWebServer: a plaintext port whose first (oldest) server is GRPC-WEB gets the
// grpc_web filter in its connection manager, as istiod builds the port's manager from that
// server; an HTTP first server gets none, whatever the later ones say.
func TestGatewayGRPCWebServer(t *testing.T) {
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.8.1"},
		Ports: []model.Port{{Name: "grpc-web", Number: 8080, Protocol: model.ProtocolGRPCWeb}}}
	for _, tc := range []struct {
		name  string
		first string // the older Gateway's server protocol on port 8080
		later string
		want  bool
	}{
		{"grpc-web first", "GRPC-WEB", "HTTP", true},
		{"http first", "HTTP", "GRPC-WEB", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			older := gwConfig("a-older", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(8080, tc.first, "*/one.example.com")}})
			younger := gwConfig("b-younger", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(8080, tc.later, "*/two.example.com")}})
			vs := vsConfig("web", "apps", &networking.VirtualService{Hosts: []string{"one.example.com", "two.example.com"}, Gateways: []string{"istio-system/a-older", "istio-system/b-younger"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(web.Hostname, 8080, "")}}}}})
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web}, Configs: []*istioconfig.Config{older, younger, vs}})
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			r, ok := find(g[ListenerType], "0.0.0.0_8080")
			if !ok {
				t.Fatal("no listener 0.0.0.0_8080")
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := r.Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
				t.Fatal(err)
			}
			got := false
			for _, f := range h.GetHttpFilters() {
				got = got || f.GetName() == grpcWebFilterName
			}
			if got != tc.want {
				t.Errorf("grpc_web filter %v, want %v (filters %v)", got, tc.want, h.GetHttpFilters())
			}
		})
	}
}
