package gen

import (
	"slices"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// A route destination hashes on its DestinationRule's consistent hash only when the proxy sees
// the destination's service: istiod reads the rule from the proxy's SidecarScope
// (HashForHTTPDestination), which holds no rule for a service not exported to the proxy's
// namespace. The cluster is named all the same, single or weighted, and a route whose single
// destination does not hash keeps the previous-hosts retry predicate.
func TestRouteHashNeedsVisibleService(t *testing.T) {
	const (
		shopHost  = "shop.app.svc.cluster.local"
		cartHost  = "cart.app.svc.cluster.local"
		stockHost = "stock.store.svc.cluster.local"
	)
	svcs := []*model.Service{
		{Hostname: shopHost, Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		// cart is private to app; stock is exported to store and app only.
		{Hostname: cartHost, Namespace: "app", ExportTo: []string{"."}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		{Hostname: stockHost, Namespace: "store", ExportTo: []string{"store", "app"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
	}
	cartDR := drConfig("cart", "app", &networking.DestinationRule{Host: "cart", TrafficPolicy: consistentHashLB(headerHash("x-cart"))})
	stockDR := drConfig("stock", "store", &networking.DestinationRule{Host: "stock", TrafficPolicy: consistentHashLB(headerHash("x-stock"))})
	vs := vsConfig("shop", "app", &networking.VirtualService{Hosts: []string{shopHost}, Http: []*networking.HTTPRoute{
		{Name: "one", Match: []*networking.HTTPMatchRequest{{Uri: exact("/cart")}}, Route: []*networking.HTTPRouteDestination{dest(cartHost, "", 0)}},
		{Name: "split", Route: []*networking.HTTPRouteDestination{dest(cartHost, "", 30), dest(stockHost, "", 70)}},
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{cartDR, stockDR, vs}})
	tests := []struct {
		ns string
		// want is the header names the routes "one" and "split" hash on.
		one, split []string
	}{
		{"app", []string{"x-cart"}, []string{"x-cart", "x-stock"}},
		{"store", nil, []string{"x-stock"}},
		{"other", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			p := sidecarProxy("10.0.0.9", tt.ns)
			rs, err := ForType(RouteType, p).Generate(p, s, []string{"80"})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*routev3.Route{}
			for _, r := range rs {
				if _, err := validateDeep(r.Message); err != nil {
					t.Fatalf("%s: %v", r.Name, err)
				}
				for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
					if vh.GetName() != shopHost+":80" {
						continue
					}
					for _, rt := range vh.GetRoutes() {
						got[rt.GetName()] = rt
					}
				}
			}
			for name, want := range map[string][]string{"one": tt.one, "split": tt.split} {
				r := got[name]
				if r == nil {
					t.Fatalf("no route %q", name)
				}
				var hs []string
				for _, hp := range r.GetRoute().GetHashPolicy() {
					hs = append(hs, hp.GetHeader().GetHeaderName())
				}
				if !slices.Equal(hs, want) {
					t.Errorf("route %q hashes on %v, want %v", name, hs, want)
				}
				if name == "one" && (r.GetRoute().GetRetryPolicy().GetRetryHostPredicate() == nil) != (len(want) > 0) {
					t.Errorf("route %q: previous-hosts predicate %v with hash %v (istiod drops it only for a hashed single destination)",
						name, r.GetRoute().GetRetryPolicy().GetRetryHostPredicate(), want)
				}
			}
		})
	}
}

// A tcp route's tcp_proxy reads the idle timeout, maximum duration and source-IP hash of its
// first destination's DestinationRule only when the proxy sees that destination's service
// (istiod: buildOutboundNetworkFilters, ServiceForHostname and SidecarScope.DestinationRule),
// for one destination and for weighted ones.
func TestTCPRouteRuleNeedsVisibleService(t *testing.T) {
	const vaultHost = "vault.db.svc.cluster.local"
	svcs := []*model.Service{
		{Hostname: mysqlHost, Namespace: "db", Addresses: []string{"10.96.0.20"}, Ports: []model.Port{{Name: "tcp", Number: 3306, Protocol: model.ProtocolTCP}}},
		{Hostname: replicaHost, Namespace: "db", Addresses: []string{"10.96.0.21"}, Ports: []model.Port{{Name: "tcp", Number: 3306, Protocol: model.ProtocolTCP}}},
		// vault is private to db.
		{Hostname: vaultHost, Namespace: "db", ExportTo: []string{"."}, Addresses: []string{"10.96.0.22"}, Ports: []model.Port{{Name: "tcp", Number: 3306, Protocol: model.ProtocolTCP}}},
	}
	dr := drConfig("vault", "db", &networking.DestinationRule{Host: "vault", TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(time.Hour)}},
		LoadBalancer:   &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
	}})
	for _, weighted := range []bool{false, true} {
		dests := []*networking.RouteDestination{l4dest(vaultHost, "", 0)}
		if weighted {
			dests = []*networking.RouteDestination{l4dest(vaultHost, "", 40), l4dest(replicaHost, "", 60)}
		}
		vs := vsConfig("mysql", "db", &networking.VirtualService{Hosts: []string{"mysql"}, Tcp: []*networking.TCPRoute{tcpRoute(nil, dests...)}})
		s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{dr, vs}})
		for _, ns := range []string{"db", "app"} {
			p := sidecarProxy("10.0.0.9", ns)
			rs, err := ForType(ListenerType, p).Generate(p, s, []string{"10.96.0.20_3306"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Fatalf("%d listeners", len(rs))
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			tp := &tcpproxyv3.TcpProxy{}
			if err := rs[0].Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
				t.Fatal(err)
			}
			sees := ns == "db"
			if (tp.GetIdleTimeout() != nil) != sees || (len(tp.GetHashPolicy()) > 0) != sees {
				t.Errorf("weighted %v, proxy in %s: idle timeout %v, hash %v; want the rule's only where vault is seen", weighted, ns, tp.GetIdleTimeout(), tp.GetHashPolicy())
			}
		}
	}
}

// The route configuration "HOST:PORT" of a sniffed port with a VIP is the virtual host of that
// service among the port's (istiod builds the port's virtual hosts, each service reduced to the
// listener's port): a destination without a port goes to the listener's port, even to a
// service with one other port.
func TestSniffedRouteDestinationPort(t *testing.T) {
	const (
		frontHost = "front.example.com"
		backHost  = "back.app.svc.cluster.local"
	)
	svcs := []*model.Service{
		{Hostname: frontHost, Namespace: "app", Addresses: []string{"240.0.0.9"}, Ports: []model.Port{{Name: "port-80", Number: 80, Protocol: model.ProtocolUnknown}}},
		{Hostname: backHost, Namespace: "app", Addresses: []string{"240.0.0.10"}, Ports: []model.Port{{Name: "http", Number: 5432, Protocol: model.ProtocolHTTP}}},
	}
	vs := vsConfig("front", "app", &networking.VirtualService{Hosts: []string{frontHost}, Http: []*networking.HTTPRoute{
		{Name: "split", Route: []*networking.HTTPRouteDestination{dest(frontHost, "", 50), dest("back", "", 50)}},
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{vs}})
	p := sidecarProxy("10.0.0.9", "app")
	name := HostPortName(frontHost, 80)
	rs, err := ForType(RouteType, p).Generate(p, s, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		if r.Name != name {
			continue
		}
		for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				for _, c := range rt.GetRoute().GetWeightedClusters().GetClusters() {
					got = append(got, c.GetName())
				}
			}
		}
	}
	want := []string{ClusterName(Outbound, 80, "", frontHost), ClusterName(Outbound, 80, "", backHost)}
	if !slices.Equal(got, want) {
		t.Errorf("%s: weighted clusters %v, want %v", name, got, want)
	}
}

// The route configuration "HOST:PORT" of a sniffed VIP port comes from the egress listener that
// holds the port: when that listener does not import the service (the catch-all listener
// does), istiod answers it without a virtual host.
func TestSniffedRouteFromHoldingEgressListener(t *testing.T) {
	const (
		frontHost = "front.app.svc.cluster.local"
		otherHost = "other.app.svc.cluster.local"
	)
	svcs := []*model.Service{
		{Hostname: frontHost, Namespace: "app", Addresses: []string{"240.0.0.9"}, Ports: []model.Port{{Name: "port-80", Number: 80, Protocol: model.ProtocolUnknown}}},
		{Hostname: otherHost, Namespace: "app", Addresses: []string{"240.0.0.10"}, Ports: []model.Port{{Name: "tcp", Number: 80, Protocol: model.ProtocolTCP}}},
	}
	name := HostPortName(frontHost, 80)
	for _, tt := range []struct {
		name   string
		egress []*networking.IstioEgressListener
		vhosts int
	}{
		{"catch-all imports it", []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}, 1},
		{"port 80 held by a listener without it", []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "TCP", Name: "tcp"}, Hosts: []string{"./" + otherHost}},
			{Hosts: []string{"./*"}},
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"}, Spec: &networking.Sidecar{Egress: tt.egress}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.0.0.9", "app")
			rs, err := ForType(RouteType, p).Generate(p, s, []string{name})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rs {
				if r.Name != name {
					continue
				}
				found = true
				if n := len(r.Message.(*routev3.RouteConfiguration).GetVirtualHosts()); n != tt.vhosts {
					t.Errorf("%s: %d virtual hosts, want %d", name, n, tt.vhosts)
				}
			}
			if !found {
				t.Errorf("no route configuration %s", name)
			}
		})
	}
}

// Under a Sidecar, a tcp route's destination without a port goes to its service's only port
// when the proxy's whole scope holds that service, as a destination of a VirtualService an
// egress listener imports, though no egress host names it (istiod: ServiceForHostname on the
// SidecarScope, GetDestinationCluster).
func TestTCPRouteDestinationPortUnderSidecar(t *testing.T) {
	const (
		frontHost = "front.other.svc.cluster.local"
		backHost  = "back.plain.svc.cluster.local"
	)
	svcs := []*model.Service{
		{Hostname: frontHost, Namespace: "other", Addresses: []string{"240.0.0.9"}, Ports: []model.Port{{Name: "tcp", Number: 8443, Protocol: model.ProtocolTCP}}},
		{Hostname: backHost, Namespace: "plain", Addresses: []string{"240.0.0.10"}, Ports: []model.Port{{Name: "tcp", Number: 9000, Protocol: model.ProtocolTCP}}},
	}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "other"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}}}
	vs := vsConfig("front", "other", &networking.VirtualService{Hosts: []string{"front"}, Tcp: []*networking.TCPRoute{tcpRoute(nil, l4dest(backHost, "", 0))}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{sc, vs}})
	p := sidecarProxy("10.0.0.9", "other")
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{"240.0.0.9_8443"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d listeners", len(rs))
	}
	tp := &tcpproxyv3.TcpProxy{}
	if err := rs[0].Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatal(err)
	}
	if got, want := tp.GetCluster(), ClusterName(Outbound, 9000, "", backHost); got != want {
		t.Errorf("tcp_proxy cluster %s, want %s", got, want)
	}
}
