package gen

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarEgressPorts: an egress listener with a port imports only that port of the
// services its hosts match (istiod's serviceMatchingListenerPort); one without a port, or an
// HTTP_PROXY port, imports every port (its services' listeners: the one HTTP proxy listener).
func TestSidecarEgressPorts(t *testing.T) {
	web := &model.Service{Hostname: "web.app.svc.cluster.local", Namespace: "app", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "http-alt", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}}
	db := &model.Service{Hostname: "db.other.svc.cluster.local", Namespace: "other", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{
		{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}, {Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	egress := func(port uint32, proto string, hosts ...string) *networking.IstioEgressListener {
		l := &networking.IstioEgressListener{Hosts: hosts}
		if port != 0 {
			l.Port = &networking.SidecarPort{Number: port, Protocol: proto, Name: "p"}
		}
		return l
	}
	tests := []struct {
		name     string
		egress   []*networking.IstioEgressListener
		clusters []string // outbound PORT|HOST
		proxy    string   // an HTTP proxy listener (httpproxy.go), the only one of its port
	}{
		{"one port", []*networking.IstioEgressListener{egress(8080, "HTTP", "app/*")}, []string{"8080|web.app.svc.cluster.local"}, ""},
		{"a port and a catch-all", []*networking.IstioEgressListener{egress(5432, "TCP", "other/db.other.svc.cluster.local"), egress(0, "", "app/*")},
			[]string{"5000|web.app.svc.cluster.local", "5432|db.other.svc.cluster.local", "8080|web.app.svc.cluster.local", "80|web.app.svc.cluster.local"}, ""},
		{"an HTTP_PROXY port imports every port", []*networking.IstioEgressListener{egress(3128, "HTTP_PROXY", "other/*")},
			[]string{"5432|db.other.svc.cluster.local", "80|db.other.svc.cluster.local"}, "0.0.0.0_3128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "scoped"}, Spec: &networking.Sidecar{Egress: tt.egress}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web, db}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.3.9.9", "scoped")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, r := range g[ClusterType] {
				if cn, err := ParseClusterName(r.Name); err == nil && cn.Direction == Outbound {
					got = append(got, strings.TrimPrefix(strings.Replace(r.Name, "||", "|", 1), "outbound|"))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.clusters) {
				t.Errorf("clusters %v, want %v", got, tt.clusters)
			}
			for _, r := range g[ListenerType] {
				if r.Name == tt.proxy {
					continue
				}
				if i := strings.LastIndexByte(r.Name, '_'); i > 0 && !slices.ContainsFunc(tt.clusters, func(c string) bool { return strings.HasPrefix(c, r.Name[i+1:]+"|") }) {
					t.Errorf("listener %s for a port not imported", r.Name)
				}
			}
		})
	}
}

// TestSidecarEgressListenerPerPort: istiod builds a port's outbound listeners and its route
// configuration from the egress listener that holds the port, and the rest from the catch-all
// one, which adds nothing to the listeners the first built; clusters pool every listener.
func TestSidecarEgressListenerPerPort(t *testing.T) {
	svc := func(host, vip string, ports ...model.Port) *model.Service {
		s := &model.Service{Hostname: host, Namespace: "split", Ports: ports}
		if vip != "" {
			s.Addresses = []string{vip}
		}
		return s
	}
	http := func(n uint32) model.Port { return model.Port{Name: "http", Number: n, Protocol: model.ProtocolHTTP} }
	tcp := func(n uint32) model.Port { return model.Port{Name: "tcp", Number: n, Protocol: model.ProtocolTCP} }
	services := []*model.Service{
		svc("alpha.split.svc.cluster.local", "240.0.41.1", http(8041), http(8042), tcp(9041)),
		svc("beta.split.svc.cluster.local", "240.0.41.2", http(8041), tcp(9041)),
		svc("gamma.split.svc.cluster.local", "240.0.41.3", tcp(9041)),
		svc("delta.split.example", "", tcp(9041)),
		svc("epsilon.split.example", "", tcp(8041)),
	}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "split"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 8041, Protocol: "HTTP", Name: "http"}, Hosts: []string{"split/alpha.split.svc.cluster.local"}},
			{Port: &networking.SidecarPort{Number: 9041, Protocol: "TCP", Name: "tcp"}, Hosts: []string{"split/gamma.split.svc.cluster.local"}},
			{Hosts: []string{"split/*", "splitvs/*"}},
		}}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "alpha", Namespace: "splitvs"},
		Spec: &networking.VirtualService{Hosts: []string{"alpha.split.svc.cluster.local"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "beta.split.svc.cluster.local"}}}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Configs: []*istioconfig.Config{sidecar, vs}})
	p := sidecarProxy("10.5.9.9", "split")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var listeners, clusters []string
	for _, r := range g[ListenerType] {
		listeners = append(listeners, r.Name)
		l := r.Message.(*listenerv3.Listener)
		if r.Name == "0.0.0.0_8041" && strings.Contains(l.GetDefaultFilterChain().String(), "epsilon") {
			t.Errorf("0.0.0.0_8041 is the port's egress listener's: the catch-all's epsilon adds no chain: %v", l.GetDefaultFilterChain())
		}
	}
	for _, r := range g[ClusterType] {
		if strings.HasPrefix(r.Name, "outbound|") {
			clusters = append(clusters, r.Name)
		}
	}
	wantListeners := []string{"0.0.0.0_8041", "0.0.0.0_8042", "0.0.0.0_9041", "240.0.41.1_9041", "240.0.41.2_9041", "240.0.41.3_9041", VirtualOutboundListener, VirtualInboundListener}
	slices.Sort(wantListeners)
	if !slices.Equal(listeners, wantListeners) {
		t.Errorf("listeners %v, want %v", listeners, wantListeners)
	}
	for _, c := range []string{"outbound|8041||beta.split.svc.cluster.local", "outbound|8041||epsilon.split.example", "outbound|8042||alpha.split.svc.cluster.local"} {
		if !slices.Contains(clusters, c) {
			t.Errorf("cluster %s missing: clusters pool every egress listener (%v)", c, clusters)
		}
	}
	routes := map[string]string{}
	for _, r := range g[RouteType] {
		routes[r.Name] = r.Message.(*routev3.RouteConfiguration).String()
	}
	if rc := routes["8041"]; !strings.Contains(rc, "alpha.split.svc.cluster.local") || strings.Contains(rc, "beta.split") {
		t.Errorf("route 8041 should have alpha's default route only (its egress listener imports alpha, not the VirtualService): %s", rc)
	}
	if rc := routes["8042"]; !strings.Contains(rc, "outbound|8042||beta.split.svc.cluster.local") {
		t.Errorf("route 8042 should route alpha by the catch-all's VirtualService: %s", rc)
	}
}

// TestSidecarEgressListenerProtocol: the egress listener that holds a port builds its
// services' listeners there by its own protocol (istiod's listenPort), and the catch-all one
// still builds theirs by the services' protocol where the first built nothing.
func TestSidecarEgressListenerProtocol(t *testing.T) {
	zeta := &model.Service{Hostname: "zeta.split.svc.cluster.local", Namespace: "split", Addresses: []string{"240.0.41.6"},
		Ports: []model.Port{{Name: "tcp", Number: 9044, Protocol: model.ProtocolTCP}}}
	eta := &model.Service{Hostname: "eta.split.svc.cluster.local", Namespace: "split", Addresses: []string{"240.0.41.7"},
		Ports: []model.Port{{Name: "http", Number: 8045, Protocol: model.ProtocolHTTP}}}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "split"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 9044, Protocol: "HTTP", Name: "http"}, Hosts: []string{"split/zeta.split.svc.cluster.local"}},
			{Port: &networking.SidecarPort{Number: 8045, Name: "sniffed"}, Hosts: []string{"split/eta.split.svc.cluster.local"}},
			{Hosts: []string{"split/*"}},
		}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{zeta, eta}, Configs: []*istioconfig.Config{sidecar}})
	p := sidecarProxy("10.5.9.9", "split")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var listeners, routes []string
	for _, r := range g[ListenerType] {
		listeners = append(listeners, r.Name)
	}
	for _, r := range g[RouteType] {
		routes = append(routes, r.Name)
		if r.Name == "9044" && strings.Contains(r.Message.(*routev3.RouteConfiguration).String(), "zeta") {
			t.Errorf("route 9044 has no virtual host of zeta (its port is TCP): %v", r.Message)
		}
	}
	want := []string{"0.0.0.0_8045", "0.0.0.0_9044", "240.0.41.6_9044", "240.0.41.7_8045", VirtualOutboundListener, VirtualInboundListener}
	slices.Sort(want)
	if !slices.Equal(listeners, want) {
		t.Errorf("listeners %v, want %v", listeners, want)
	}
	if want := []string{"8045", "9044", "eta.split.svc.cluster.local:8045"}; !slices.Equal(routes, want) {
		t.Errorf("routes %v, want %v", routes, want)
	}
}

// TestSidecarEgressUnixBindIsNotCatchAll: an egress listener bound to a unix domain socket has
// a port (number 0, as validation requires); istiod's catch-all listener is the one without a
// port, so a UDS listener listed first does not take every other port's listeners and routes.
func TestSidecarEgressUnixBindIsNotCatchAll(t *testing.T) {
	web := &model.Service{Hostname: "web.app.svc.cluster.local", Namespace: "app", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}}
	db := &model.Service{Hostname: "db.other.svc.cluster.local", Namespace: "other", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{
		{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}}}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "scoped"}, Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
		{Port: &networking.SidecarPort{Number: 0, Protocol: "HTTP", Name: "uds"}, Bind: "unix:///var/run/app.sock", Hosts: []string{"other/db.other.svc.cluster.local"}},
		{Hosts: []string{"app/*"}},
	}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web, db}, Configs: []*istioconfig.Config{sc}})
	p := sidecarProxy("10.3.9.9", "scoped")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	var listeners []string
	for _, r := range g[ListenerType] {
		listeners = append(listeners, r.Name)
	}
	for _, want := range []string{"0.0.0.0_80", "10.96.0.10_5000"} {
		if !slices.Contains(listeners, want) {
			t.Errorf("listeners %v lack %s: the catch-all listener (no port) imports web, not the unix socket listener", listeners, want)
		}
	}
	for _, r := range g[RouteType] {
		if r.Name != "80" {
			continue
		}
		if !strings.Contains(r.Message.(*routev3.RouteConfiguration).String(), "web.app.svc.cluster.local") {
			t.Errorf("route configuration 80 has no virtual host of web: %v", r.Message)
		}
	}
}

// TestSidecarEgressProtocolOnWildcardChains: the chains a port's 0.0.0.0 listener gets for
// services without a VIP (a CIDR service, the address-less TCP service) are built with the
// protocol of the egress listener that holds the port, as their VIP listeners are: a MONGO
// port under a TCP egress port gets no mongo_proxy.
func TestSidecarEgressProtocolOnWildcardChains(t *testing.T) {
	cidr := &model.Service{Hostname: "mongo-range.ext", Namespace: "app", Addresses: []string{"10.70.0.0/16"}, Resolution: model.ResolutionPassthrough,
		Ports: []model.Port{{Name: "mongo", Number: 27017, Protocol: model.ProtocolMongo}}}
	wild := &model.Service{Hostname: "mongo-any.ext", Namespace: "app", Resolution: model.ResolutionPassthrough,
		Ports: []model.Port{{Name: "mongo", Number: 27017, Protocol: model.ProtocolMongo}}}
	for _, tc := range []struct {
		name  string
		proto string
		mongo bool
	}{{"held as TCP", "TCP", false}, {"held as MONGO", "MONGO", true}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"}, Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
				{Port: &networking.SidecarPort{Number: 27017, Protocol: tc.proto, Name: "db"}, Hosts: []string{"app/*"}},
			}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{cidr, wild}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.3.9.9", "app")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var l *listenerv3.Listener
			for _, r := range g[ListenerType] {
				if r.Name == "0.0.0.0_27017" {
					l = r.Message.(*listenerv3.Listener)
				}
			}
			if l == nil {
				t.Fatal("no 0.0.0.0_27017 listener")
			}
			chains := append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain())
			if len(chains) < 2 {
				t.Fatalf("listener chains %v, want the CIDR chain and the default chain", chains)
			}
			for _, fc := range chains {
				has := slices.ContainsFunc(fc.GetFilters(), func(f *listenerv3.Filter) bool { return f.GetName() == "envoy.filters.network.mongo_proxy" })
				if has != tc.mongo {
					t.Errorf("chain %v: mongo_proxy %v, want %v", fc.GetFilterChainMatch(), has, tc.mongo)
				}
			}
		})
	}
}
