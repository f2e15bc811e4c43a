package gen

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSniffedRouteOfTCPPortUnderSniffedEgress: an egress listener without a protocol over a
// TCP port with a VIP makes the VIP listener sniffed, whose HTTP chain asks for "HOST:PORT";
// istiod builds virtual hosts by the service's own port protocol, so the route configuration
// has none, the service's VirtualService http routes notwithstanding (random seed 50 of the
// sixth stream; sidecarports.yaml). A port sniffed by its own declaration keeps its virtual host.
func TestSniffedRouteOfTCPPortUnderSniffedEgress(t *testing.T) {
	flint := &model.Service{Hostname: "flint.app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.0.91.1"}, Ports: []model.Port{
		{Name: "tcp", Number: 5400, Protocol: model.ProtocolTCP}, {Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	chert := &model.Service{Hostname: "chert.app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.0.91.2"}, Ports: []model.Port{
		{Name: "auto", Number: 5400, Protocol: model.ProtocolUnknown}}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "flint", Namespace: "app"},
		Spec: &networking.VirtualService{Hosts: []string{"flint", "chert"}, Http: []*networking.HTTPRoute{{
			Redirect: &networking.HTTPRedirect{Uri: "/moved"},
		}}}}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 5400, Name: "any"}, Hosts: []string{"./*"}},
			{Hosts: []string{"./*"}},
		}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{flint, chert}, Configs: []*istioconfig.Config{vs, sc}})
	p := sidecarProxy("10.1.0.1", "app")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	want := map[string]int{"flint.app.svc.cluster.local:5400": 0, "chert.app.svc.cluster.local:5400": 1}
	for name, n := range want {
		var rc *routev3.RouteConfiguration
		for _, r := range g[RouteType] {
			if r.Name == name {
				rc = r.Message.(*routev3.RouteConfiguration)
			}
		}
		if rc == nil {
			t.Fatalf("no route configuration %s (routes %v)", name, names(g[RouteType]))
		}
		if got := len(rc.GetVirtualHosts()); got != n {
			t.Errorf("%s: %d virtual hosts, want %d: %v", name, got, n, rc.GetVirtualHosts())
		}
	}
}

// TestSniffedBoundRouteOfServiceWithoutVIP: an egress listener without a protocol bound to an
// address (or under captureMode NONE) over a service without a VIP: the bound listener's HTTP
// chain asks for "HOST:PORT", which istiod answers with the service's virtual host (domain
// "*", its VirtualService's routes), as for a service with a VIP (random seed 232 of the sixth
// stream; egressbind.yaml 9). Bound to 0.0.0.0 the chain asks for "PORT" instead.
func TestSniffedBoundRouteOfServiceWithoutVIP(t *testing.T) {
	shale := &model.Service{Hostname: "shale.app.svc.cluster.local", Namespace: "app", Resolution: model.ResolutionDNS, Ports: []model.Port{
		{Name: "http2", Number: 7400, Protocol: model.ProtocolHTTP2}}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "shale", Namespace: "app"},
		Spec: &networking.VirtualService{Hosts: []string{"shale"}, Http: []*networking.HTTPRoute{{
			Redirect: &networking.HTTPRedirect{Uri: "/moved"},
		}}}}
	for _, eg := range []*networking.IstioEgressListener{
		{Port: &networking.SidecarPort{Number: 7400, Name: "any"}, Bind: "127.0.0.2", Hosts: []string{"./*"}},
		{Port: &networking.SidecarPort{Number: 7400, Name: "any"}, CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./*"}},
	} {
		sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
			Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{eg, {Hosts: []string{"./*"}}}}}
		s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{shale}, Configs: []*istioconfig.Config{vs, sc}})
		p := sidecarProxy("10.1.0.1", "app")
		g, err := generateAll(t, p, s)
		if err != nil {
			t.Fatal(err)
		}
		checkResources(t, p, g)
		const name = "shale.app.svc.cluster.local:7400"
		var rc *routev3.RouteConfiguration
		for _, r := range g[RouteType] {
			if r.Name == name {
				rc = r.Message.(*routev3.RouteConfiguration)
			}
		}
		if rc == nil {
			t.Fatalf("bind %q: no route configuration %s (routes %v)", eg.GetBind(), name, names(g[RouteType]))
		}
		vhs := rc.GetVirtualHosts()
		if len(vhs) != 1 || len(vhs[0].GetDomains()) != 1 || vhs[0].GetDomains()[0] != "*" || len(vhs[0].GetRoutes()) != 1 || vhs[0].GetRoutes()[0].GetRedirect() == nil {
			t.Errorf("bind %q: %s = %v, want one virtual host \"*\" with the redirect", eg.GetBind(), name, vhs)
		}
	}
}
