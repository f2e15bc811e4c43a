package gen

import (
	"fmt"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	mongov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// networkStacks renders each filter chain of l (its default chain last) as its network
// filters, "NAME(stat prefix)" for mongo_proxy and tcp_proxy.
func networkStacks(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	var out []string
	for _, fc := range append(l.GetFilterChains(), l.GetDefaultFilterChain()) {
		if fc == nil {
			continue
		}
		var fs []string
		for _, f := range fc.GetFilters() {
			m, err := anypb.UnmarshalNew(f.GetTypedConfig(), proto.UnmarshalOptions{})
			if err != nil {
				t.Fatalf("%s: %v", f.GetName(), err)
			}
			switch c := m.(type) {
			case *mongov3.MongoProxy:
				fs = append(fs, fmt.Sprintf("mongo(%s)", c.GetStatPrefix()))
			case *tcpproxyv3.TcpProxy:
				fs = append(fs, fmt.Sprintf("tcp(%s)", c.GetStatPrefix()))
			default:
				fs = append(fs, f.GetName())
			}
		}
		out = append(out, strings.Join(fs, " "))
	}
	return out
}

// TestMongo checks istiod's filters of a MONGO port (buildNetworkFiltersStack): mongo_proxy
// before the tcp_proxy, with its stat prefix, wherever a tcp_proxy serves the port — a
// service's VIP listener, a tcp route's weighted clusters, a port without VIP, a CIDR
// address, the inbound chains, a gateway's MONGO server.
func TestMongo(t *testing.T) {
	const (
		mongo  = "mongo.db.svc.cluster.local"
		mongo2 = "mongo2.db.svc.cluster.local"
		hl     = "mongo-hl.db.svc.cluster.local"
		cidr   = "mongo.corp"
	)
	port := func(n uint32) []model.Port {
		return []model.Port{{Name: "mongo", Number: n, Protocol: model.ProtocolMongo}}
	}
	gw := &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{server(27017, "MONGO", "db/*")}}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{
			{Hostname: mongo, Namespace: "db", Addresses: []string{"10.96.0.50"}, Ports: port(27017)},
			{Hostname: mongo2, Namespace: "db", Addresses: []string{"10.96.0.51"}, Ports: port(27017)},
			{Hostname: hl, Namespace: "db", Ports: port(27018)},
			{Hostname: cidr, Namespace: "db", Addresses: []string{"10.200.0.0/16"}, Ports: port(27019), MeshExternal: true},
		},
		Endpoints: map[string][]*model.Endpoint{mongo: {{Service: mongo, Address: "10.1.5.1", Weight: 1}}},
		Configs: []*istioconfig.Config{
			vsConfig("w", "db", &networking.VirtualService{Hosts: []string{mongo2}, Tcp: []*networking.TCPRoute{tcpRoute(nil, l4dest(mongo, "", 50), l4dest(mongo2, "", 50))}}),
			gwConfig("ingress", "istio-system", gw),
			vsConfig("gw", "db", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/ingress"},
				Tcp: []*networking.TCPRoute{tcpRoute(nil, l4dest(mongo, "", 0))}}),
		},
	})
	c := func(n uint32, h string) string { return ClusterName(Outbound, n, "", h) }
	sidecar := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.1.5.1"}, Namespace: "db", ID: "mongo-0.db"}
	in := ClusterName(Inbound, 27017, "", "")
	tests := []struct {
		proxy    *model.Proxy
		listener string
		want     []string
	}{
		{sidecar, "10.96.0.50_27017", []string{fmt.Sprintf("mongo(%[1]s) tcp(%[1]s)", c(27017, mongo))}},
		{sidecar, "10.96.0.51_27017", []string{"mongo(w.db) tcp(w.db)"}},
		{sidecar, "0.0.0.0_27018", []string{fmt.Sprintf("mongo(%[1]s) tcp(%[1]s)", c(27018, hl))}},
		{sidecar, "0.0.0.0_27019", []string{fmt.Sprintf("mongo(%[1]s) tcp(%[1]s)", c(27019, cidr)), "tcp(PassthroughCluster)"}},
		{routerProxy("istio-system", ingressLabels), "0.0.0.0_27017", []string{fmt.Sprintf("mongo(%[1]s) tcp(%[1]s)", c(27017, mongo))}},
	}
	for _, tc := range tests {
		t.Run(tc.listener, func(t *testing.T) {
			rs, err := ForType(ListenerType, tc.proxy).Generate(tc.proxy, s, []string{tc.listener})
			if err != nil || len(rs) != 1 {
				t.Fatalf("Generate: %d resources, %v", len(rs), err)
			}
			l := rs[0].Message.(*listenerv3.Listener)
			if diff := cmp.Diff(tc.want, networkStacks(t, l)); diff != "" {
				t.Errorf("filters (-want +got):\n%s", diff)
			}
			if _, err := validateDeep(l); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("inbound", func(t *testing.T) {
		rs, err := ForType(ListenerType, sidecar).Generate(sidecar, s, []string{VirtualInboundListener})
		if err != nil || len(rs) != 1 {
			t.Fatalf("Generate: %d resources, %v", len(rs), err)
		}
		l := rs[0].Message.(*listenerv3.Listener)
		n := 0
		for _, fc := range l.GetFilterChains() {
			if fc.GetName() != in {
				continue
			}
			n++
			if got, want := networkStacks(t, &listenerv3.Listener{FilterChains: []*listenerv3.FilterChain{fc}}), fmt.Sprintf("mongo(%[1]s) tcp(%[1]s)", in); got[0] != want {
				t.Errorf("chain %v: %s, want %s", fc.GetFilterChainMatch(), got[0], want)
			}
		}
		if n == 0 {
			t.Errorf("no %s chain", in)
		}
		if _, err := validateDeep(l); err != nil {
			t.Error(err)
		}
	})
}
