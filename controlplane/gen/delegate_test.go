package gen

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestDelegateRoutes: a root VirtualService's delegate route is replaced by the delegate's
// routes merged with it, as istiod's VirtualService controller merges them: one route per
// (delegate match, root match) pair that does not conflict, short names of the delegate's
// namespace, the root's timeout where the delegate sets none; a delegate that is missing or not
// exported to the root's namespace drops the route.
func TestDelegateRoutes(t *testing.T) {
	const port = 8090
	svc := func(host, ns, vip string) *model.Service {
		return &model.Service{Hostname: host, Namespace: ns, Addresses: []string{vip},
			Ports: []model.Port{{Name: "http", Number: port, Protocol: model.ProtocolHTTP}}}
	}
	svcs := []*model.Service{svc("front.edge.svc.cluster.local", "edge", "240.9.0.1"), svc("api.core.svc.cluster.local", "core", "240.9.0.2"),
		svc("api-v2.core.svc.cluster.local", "core", "240.9.0.3")}
	prefix := func(p string) *networking.StringMatch {
		return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: p}}
	}
	dest := func(h string) []*networking.HTTPRouteDestination {
		return []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: h}}}
	}
	root := vsConfig("front", "edge", &networking.VirtualService{Hosts: []string{"front.edge.svc.cluster.local"}, Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/api")}}, Delegate: &networking.Delegate{Name: "api", Namespace: "core"}, Timeout: durationpb.New(7e9)},
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/private")}}, Delegate: &networking.Delegate{Name: "private", Namespace: "core"}},
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/none")}}, Delegate: &networking.Delegate{Name: "none"}},
		{Route: dest("front")},
	}})
	api := vsConfig("api", "core", &networking.VirtualService{Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/api/v2")}}, Route: dest("api-v2"), Timeout: durationpb.New(1e9)},
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/other")}}, Route: dest("api-v2")}, // not within /api: dropped
		{Route: dest("api")},
	}})
	private := vsConfig("private", "core", &networking.VirtualService{ExportTo: []string{"."}, Http: []*networking.HTTPRoute{{Route: dest("api")}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{root, api, private}})
	p := sidecarProxy("10.9.9.9", "edge")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"8090"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %v, %v", rs, err)
	}
	if err := rs[0].Message.(*routev3.RouteConfiguration).ValidateAll(); err != nil {
		t.Fatal(err)
	}
	type route struct {
		prefix, cluster string
		timeout         int64
	}
	var got []route
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if vh.GetName() != HostPortName("front.edge.svc.cluster.local", port) {
			continue
		}
		for _, r := range vh.GetRoutes() {
			got = append(got, route{r.GetMatch().GetPrefix(), r.GetRoute().GetCluster(), r.GetRoute().GetTimeout().GetSeconds()})
		}
	}
	want := []route{
		{"/api/v2", "outbound|8090||api-v2.core.svc.cluster.local", 1},
		{"/api", "outbound|8090||api.core.svc.cluster.local", 7},
		{"/", "outbound|8090||front.edge.svc.cluster.local", 0},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(route{})); diff != "" {
		t.Errorf("routes of front (-want +got):\n%s", diff)
	}
}
