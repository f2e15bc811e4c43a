package gen

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestOutboundTrafficPolicy: the catch-all of a sidecar's outbound side follows its Sidecar's
// outboundTrafficPolicy as istiod's buildOutboundCatchAllNetworkFiltersOnly and
// buildCatchAllVirtualHost build it: the virtualOutbound catch-all chain, the default chain of
// a 0.0.0.0_PORT listener and the last virtual host of the port's route configuration go to
// PassthroughCluster (ALLOW_ANY, the mesh default), to BlackHoleCluster and a 502 "block_all"
// (REGISTRY_ONLY), or to the egressProxy's cluster as written (ALLOW_ANY with egressProxy).
func TestOutboundTrafficPolicy(t *testing.T) {
	svcs := []*model.Service{{Hostname: "shop.team.svc.cluster.local", Namespace: "team",
		Ports: []model.Port{{Name: "http", Number: 8088, Protocol: model.ProtocolHTTP}}}}
	allowAny := &routev3.VirtualHost{Name: "allow_any", Domains: []string{"*"}, Routes: []*routev3.Route{{Name: "allow_any",
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: PassthroughCluster}}}}}}
	toProxy := &routev3.VirtualHost{Name: "allow_any", Domains: []string{"*"}, Routes: []*routev3.Route{{Name: "allow_any",
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|3128|edge|squid.egress.example"}}}}}}
	blockAll := &routev3.VirtualHost{Name: "block_all", Domains: []string{"*"}, Routes: []*routev3.Route{{Name: "block_all",
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 502}}}}}
	tests := []struct {
		name    string
		policy  *networking.OutboundTrafficPolicy
		sidecar bool
		cluster string
		vh      *routev3.VirtualHost
	}{
		{name: "no Sidecar", cluster: PassthroughCluster, vh: allowAny},
		{name: "Sidecar without policy", sidecar: true, cluster: PassthroughCluster, vh: allowAny},
		{name: "ALLOW_ANY", sidecar: true, policy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_ALLOW_ANY}, cluster: PassthroughCluster, vh: allowAny},
		{name: "REGISTRY_ONLY", sidecar: true, policy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY}, cluster: BlackHoleCluster, vh: blockAll},
		{name: "egressProxy", sidecar: true, policy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_ALLOW_ANY,
			EgressProxy: &networking.Destination{Host: "squid.egress.example", Subset: "edge", Port: &networking.PortSelector{Number: 3128}}},
			cluster: "outbound|3128|edge|squid.egress.example", vh: toProxy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfgs []*istioconfig.Config
			if tt.sidecar {
				cfgs = append(cfgs, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "team"},
					Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}, OutboundTrafficPolicy: tt.policy}})
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: cfgs})
			p := sidecarProxy("10.44.0.7", "team")
			ls, err := ForType(ListenerType, p).Generate(p, s, []string{VirtualOutboundListener, "0.0.0.0_8088"})
			if err != nil || len(ls) != 2 {
				t.Fatalf("listeners: got %d, %v", len(ls), err)
			}
			want := &tcpproxyv3.TcpProxy{StatPrefix: tt.cluster, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: tt.cluster}}
			for _, r := range ls {
				l := r.Message.(*listenerv3.Listener)
				chain := l.GetDefaultFilterChain()
				if r.Name == VirtualOutboundListener {
					chain = l.GetFilterChains()[len(l.GetFilterChains())-1]
				}
				got := &tcpproxyv3.TcpProxy{}
				if err := chain.GetFilters()[0].GetTypedConfig().UnmarshalTo(got); err != nil {
					t.Fatalf("%s: %v", r.Name, err)
				}
				if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
					t.Errorf("%s catch-all (-want +got):\n%s", r.Name, diff)
				}
				if err := l.ValidateAll(); err != nil {
					t.Errorf("%s: %v", r.Name, err)
				}
			}
			rs, err := ForType(RouteType, p).Generate(p, s, []string{"8088"})
			if err != nil || len(rs) != 1 {
				t.Fatalf("routes: got %d, %v", len(rs), err)
			}
			rc := rs[0].Message.(*routev3.RouteConfiguration)
			if err := rc.ValidateAll(); err != nil {
				t.Error(err)
			}
			vhs := rc.GetVirtualHosts()
			last := vhs[len(vhs)-1]
			if diff := cmp.Diff(tt.vh, last, protocmp.Transform(),
				protocmp.IgnoreFields(&routev3.RouteAction{}, "timeout", "max_grpc_timeout")); diff != "" {
				t.Errorf("catch-all virtual host (-want +got):\n%s", diff)
			}
		})
	}
}
