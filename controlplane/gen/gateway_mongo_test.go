package gen

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	mongov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayMongoStatPrefix: a MONGO server's mongo_proxy takes istiod's stat prefix (the
// prefix of Envoy's mongo.* statistics, which dashboards read): the cluster of a tcp route with
// one destination, "NAME.NAMESPACE" of the VirtualService for a weighted one.
func TestGatewayMongoStatPrefix(t *testing.T) {
	docs := &model.Service{Hostname: "docs.store.svc.cluster.local", Namespace: "store", Addresses: []string{"10.96.7.1"},
		Ports: []model.Port{{Name: "mongo", Number: 27017, Protocol: model.ProtocolMongo}}}
	spare := &model.Service{Hostname: "spare.store.svc.cluster.local", Namespace: "store", Addresses: []string{"10.96.7.2"},
		Ports: []model.Port{{Name: "mongo", Number: 27017, Protocol: model.ProtocolMongo}}}
	dest := func(h string, w int32) *networking.RouteDestination {
		return &networking.RouteDestination{Destination: gwDest(h, 27017, ""), Weight: w}
	}
	for _, tc := range []struct {
		name  string
		route []*networking.RouteDestination
		want  string
	}{
		{"one destination", []*networking.RouteDestination{dest(docs.Hostname, 0)}, "outbound|27017||docs.store.svc.cluster.local"},
		{"weighted", []*networking.RouteDestination{dest(docs.Hostname, 80), dest(spare.Hostname, 20)}, "docs-route.store"},
		{"weighted to one", []*networking.RouteDestination{dest(docs.Hostname, 100), dest(spare.Hostname, 0)}, "docs-route.store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := gwConfig("docs-gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(27018, "MONGO", "*")}})
			vs := vsConfig("docs-route", "store", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/docs-gw"},
				Tcp: []*networking.TCPRoute{{Route: tc.route}}})
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{docs, spare}, Configs: []*istioconfig.Config{gw, vs}})
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			r, ok := find(g[ListenerType], "0.0.0.0_27018")
			if !ok {
				t.Fatal("no listener 0.0.0.0_27018")
			}
			fs := r.Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()
			mp := &mongov3.MongoProxy{}
			if len(fs) != 2 || fs[0].GetTypedConfig().UnmarshalTo(mp) != nil {
				t.Fatalf("filters %v, want mongo_proxy then tcp_proxy", fs)
			}
			if mp.GetStatPrefix() != tc.want {
				t.Errorf("mongo_proxy stat prefix %q, want %q", mp.GetStatPrefix(), tc.want)
			}
		})
	}
}
