package gen

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestEgressPortImportsOnlyServicesWithThePort: an egress listener with a port imports only the
// services that have that port (istiod's needsPortMatch), so a service it names by namespace
// but without the port is not in the proxy's scope: a route to it reads no DestinationRule
// (no consistent hash, the previous-hosts retry predicate instead). Random seed 234 of the
// sixth stream (an egress port 80 importing other/*; egressbind.yaml 10).
func TestEgressPortImportsOnlyServicesWithThePort(t *testing.T) {
	alder := &model.Service{Hostname: "alder.other.svc.cluster.local", Namespace: "other", Addresses: []string{"240.0.92.1"}, Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	birch := &model.Service{Hostname: "birch.other.svc.cluster.local", Namespace: "other", Addresses: []string{"240.0.92.2"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "alder", Namespace: "other"},
		Spec: &networking.DestinationRule{Host: "alder.other.svc.cluster.local", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
			LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}}}}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "birch", Namespace: "other"},
		Spec: &networking.VirtualService{Hosts: []string{"birch.other.svc.cluster.local"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "alder.other.svc.cluster.local", Port: &networking.PortSelector{Number: 8080}}}},
		}}}}
	tests := []struct {
		name     string
		catchAll []string
		hash     bool
	}{
		{"only the port 80 listener names alder", []string{"./*"}, false},
		{"the catch-all imports alder too", []string{"./*", "other/alder.other.svc.cluster.local"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
					{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"other/*"}},
					{Hosts: tt.catchAll},
				}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{alder, birch}, Configs: []*istioconfig.Config{dr, vs, sc}})
			p := sidecarProxy("10.1.0.1", "app")
			rs, err := ForType(RouteType, p).Generate(p, s, []string{"80"})
			if err != nil || len(rs) != 1 {
				t.Fatalf("got %d resources, err %v", len(rs), err)
			}
			var ra *routev3.RouteAction
			for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
				if vh.GetName() == HostPortName(birch.Hostname, 80) {
					ra = vh.GetRoutes()[0].GetRoute()
				}
			}
			if ra == nil {
				t.Fatalf("no route of birch on 80: %v", rs[0].Message)
			}
			if got := len(ra.GetHashPolicy()) > 0; got != tt.hash {
				t.Errorf("hash policy %v, want one: %v", ra.GetHashPolicy(), tt.hash)
			}
		})
	}
}
