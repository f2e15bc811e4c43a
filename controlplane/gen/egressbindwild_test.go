package gen

import (
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarEgressWildcardBind: an egress listener of a TCP, MONGO, MYSQL or sniffed port bound
// to 0.0.0.0 is not the usual listeners (its services' VIP listeners) but one 0.0.0.0_PORT,
// as istiod keys the listener by bind and port: a sniffed port's HTTP chain fetches route
// configuration PORT (not HOST:PORT) beside the first service's TCP default chain. The
// catch-all listener still builds the VIP listeners of the services it imports (random seeds
// 1, 72 and 80 of the sixth stream; egressbind.yaml 8). An HTTP port's is the usual listener.
func TestSidecarEgressWildcardBind(t *testing.T) {
	tuff := &model.Service{Hostname: "tuff.egressbind.svc.cluster.local", Namespace: "egressbind", Addresses: []string{"240.0.82.1"}, Ports: []model.Port{
		{Name: "tcp", Number: 5500, Protocol: model.ProtocolTCP}, {Name: "auto", Number: 5600, Protocol: model.ProtocolUnknown}, {Name: "http", Number: 5700, Protocol: model.ProtocolHTTP}}}
	egress := func(num uint32, proto string) *networking.IstioEgressListener {
		return &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: "p"}, Bind: "0.0.0.0", Hosts: []string{"./*"}}
	}
	tests := []struct {
		name      string
		egress    *networking.IstioEgressListener
		catchAll  []string
		listeners []string // outbound listeners besides virtualOutbound
		http      bool     // 0.0.0.0_PORT has an HTTP chain fetching route configuration PORT, with tuff's virtual host
	}{
		{"TCP", egress(5500, "TCP"), []string{"~/*"}, []string{"0.0.0.0_5500"}, false},
		{"MYSQL", egress(5500, "MYSQL"), []string{"~/*"}, []string{"0.0.0.0_5500"}, false},
		{"TCP, the catch-all importing the service", egress(5500, "TCP"), []string{"./*"}, []string{"0.0.0.0_5500", "0.0.0.0_5700", "240.0.82.1_5500", "240.0.82.1_5600"}, false},
		{"sniffed", egress(5600, ""), []string{"~/*"}, []string{"0.0.0.0_5600"}, true},
		{"HTTP: the usual listener", egress(5700, "HTTP"), []string{"~/*"}, []string{"0.0.0.0_5700"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "wild", Namespace: "egressbind"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{tt.egress, {Hosts: tt.catchAll}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{tuff}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.65.9.9", "egressbind")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			port := tt.egress.GetPort().GetNumber()
			var wild *listenerv3.Listener
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				if r.Name == VirtualOutboundListener || l.GetTrafficDirection().String() != "OUTBOUND" {
					continue
				}
				got = append(got, r.Name)
				if r.Name == ListenerName("0.0.0.0", port) {
					wild = l
				}
			}
			if !slices.Equal(got, tt.listeners) {
				t.Fatalf("listeners %v, want %v", got, tt.listeners)
			}
			if wild.GetBindToPort() == nil || wild.GetBindToPort().GetValue() {
				t.Errorf("%s binds its port: %v", wild.GetName(), wild)
			}
			rds := routeNames([]Resource{{Name: wild.GetName(), Message: wild}})
			if want := []string{ListenerName("0.0.0.0", port)[len("0.0.0.0_"):]}; tt.http != slices.Equal(rds, want) {
				t.Errorf("%s asks for route configurations %v", wild.GetName(), rds)
			}
			if !tt.http {
				return
			}
			for _, r := range g[RouteType] {
				if r.Name != rds[0] {
					continue
				}
				var vhs []string
				for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
					vhs = append(vhs, vh.GetName())
				}
				if !slices.Contains(vhs, HostPortName(tuff.Hostname, port)) {
					t.Errorf("route configuration %s: virtual hosts %v lack tuff's", r.Name, vhs)
				}
			}
		})
	}
}
