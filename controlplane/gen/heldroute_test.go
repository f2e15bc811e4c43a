package gen

import (
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestRouteOfPortHeldByTCPEgress: a Sidecar egress listener of protocol TCP or MONGO (bound
// to an address, under captureMode NONE, or neither) holds a port where an HTTP service it
// imports lives, and the catch-all listener imports that service too, whose HTTP listener
// 0.0.0.0_PORT asks for route configuration "PORT". istiod answers it from the egress listener
// that holds the port, whatever that listener's protocol: a virtual host for each service it
// imports whose own port is HTTP or sniffed (random seeds 10, 49, 87 of the sixth stream;
// sidecarports.yaml).
func TestRouteOfPortHeldByTCPEgress(t *testing.T) {
	ember := &model.Service{Hostname: "ember.app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.0.90.1"}, Ports: []model.Port{{Name: "http", Number: 5300, Protocol: model.ProtocolHTTP}}}
	cinder := &model.Service{Hostname: "cinder.app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.0.90.2"}, Ports: []model.Port{{Name: "auto", Number: 5300, Protocol: model.ProtocolUnknown}}}
	slag := &model.Service{Hostname: "slag.app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.0.90.3"}, Ports: []model.Port{{Name: "tcp", Number: 5300, Protocol: model.ProtocolTCP}}}
	tests := []struct {
		name   string
		egress *networking.IstioEgressListener
		want   []string // the virtual hosts of route configuration 5300
	}{
		{"TCP bound to an address", &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: 5300, Protocol: "TCP", Name: "tcp"}, Bind: "127.0.0.2", Hosts: []string{"./ember.app.svc.cluster.local"}},
			[]string{"ember.app.svc.cluster.local:5300", AllowAnyVirtualHost}},
		{"MONGO under captureMode NONE", &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: 5300, Protocol: "MONGO", Name: "mongo"}, CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./ember.app.svc.cluster.local"}},
			[]string{"ember.app.svc.cluster.local:5300", AllowAnyVirtualHost}},
		{"TCP neither bound nor NONE", &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: 5300, Protocol: "TCP", Name: "tcp"}, Hosts: []string{"./cinder.app.svc.cluster.local", "./ember.app.svc.cluster.local"}},
			[]string{"cinder.app.svc.cluster.local:5300", "ember.app.svc.cluster.local:5300", AllowAnyVirtualHost}},
		{"the holder imports no HTTP service", &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: 5300, Protocol: "TCP", Name: "tcp"}, Bind: "127.0.0.2", Hosts: []string{"./slag.app.svc.cluster.local"}},
			[]string{AllowAnyVirtualHost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "held", Namespace: "app"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{tt.egress, {Hosts: []string{"./*"}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{ember, cinder, slag}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.1.0.1", "app")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			found := false
			for _, r := range g[RouteType] {
				if r.Name != "5300" {
					continue
				}
				found = true
				for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
					got = append(got, vh.GetName())
				}
			}
			if !found {
				t.Fatalf("no route configuration 5300 (routes %v)", names(g[RouteType]))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("virtual hosts of 5300 = %v, want %v", got, want)
			}
		})
	}
}
