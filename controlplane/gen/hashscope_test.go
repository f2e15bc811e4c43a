package gen

import (
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
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
