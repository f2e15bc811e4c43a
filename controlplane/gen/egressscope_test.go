package gen

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGRPCRoutesIgnoreEgressProtocol: a Sidecar egress listener that declares its port TCP: istiod's grpcgen builds RDS with
// BuildSidecarOutboundVirtualHosts, which ignores the egress listener's protocol.
func TestGRPCRoutesIgnoreEgressProtocol(t *testing.T) {
	svcs := []*model.Service{
		{Hostname: "web.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "grpc", Number: 8080, Protocol: model.ProtocolGRPC}}},
	}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Port: &networking.SidecarPort{Number: 8080, Protocol: "TCP", Name: "tcp"}, Hosts: []string{"app/*"}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{sidecar}})
	p := grpcProxy("app")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"web.app.svc.cluster.local:8080"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %v, %v", rs, err)
	}
	vhs := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()
	if len(vhs) == 0 {
		t.Errorf("no virtual host; istiod gives the GRPC port its virtual host")
	}
}

// TestGRPCHashReadsWholeScope: a gRPC client (and a sidecar) whose Sidecar's port-80 egress listener imports ./* and whose catch-all imports
// other/*: a route on port 80 to other/back with a consistent-hash rule hashes in istiod (the
// SidecarScope holds back's rule), as on a sidecar.
func TestGRPCHashReadsWholeScope(t *testing.T) {
	svcs := []*model.Service{
		{Hostname: "front.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		{Hostname: "back.other.svc.cluster.local", Namespace: "other", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
	}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"./*"}},
			{Hosts: []string{"other/*"}},
		}}}
	vs := vsConfig("v", "app", &networking.VirtualService{Hosts: []string{"front"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "back.other.svc.cluster.local", Port: &networking.PortSelector{Number: 80}}}}}}})
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "back", Namespace: "other"},
		Spec: &networking.DestinationRule{Host: "back.other.svc.cluster.local", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{sidecar, vs, dr}})
	for _, p := range []*model.Proxy{sidecarProxy("10.200.0.9", "app"), grpcProxy("app")} {
		name := "80"
		if p.IsGRPC() {
			name = "front.app.svc.cluster.local:80"
		}
		rs, err := ForType(RouteType, p).Generate(p, s, []string{name})
		if err != nil || len(rs) != 1 {
			t.Fatalf("got %v, %v", rs, err)
		}
		for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
			if vh.GetName() == "allow_any" {
				continue
			}
			if len(vh.GetRoutes()[0].GetRoute().GetHashPolicy()) == 0 {
				t.Errorf("grpc=%v: no hash policy", p.IsGRPC())
			}
		}
	}
}

// TestPassthroughMTLSByPort: a NONE service whose port-80 endpoints all have sidecars but whose port-9090 endpoint has
// none: istiod infers port 80's mTLS from ServiceEndpointsByPort(svc, 80) only.
func TestPassthroughMTLSByPort(t *testing.T) {
	const host = "hl.app.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "app", Resolution: model.ResolutionPassthrough,
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "metrics", Number: 9090, Protocol: model.ProtocolTCP}}}
	eps := []*model.Endpoint{
		{Service: host, Address: "10.9.0.1", Ports: map[string]uint32{"http": 8080}, OnlyListedPorts: true, Labels: map[string]string{TLSModeLabel: "istio"}},
		{Service: host, Address: "10.9.0.2", Ports: map[string]uint32{"metrics": 9090}, OnlyListedPorts: true},
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{host: eps}})
	p := sidecarProxy("10.200.0.9", "app")
	rs, err := ForType(ClusterType, p).Generate(p, s, []string{ClusterName(Outbound, 80, "", host)})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v %v", rs, err)
	}
	c := rs[0].Message.(*clusterv3.Cluster)
	if c.GetTransportSocket() == nil {
		t.Errorf("port 80 cluster has no mTLS although every endpoint of port 80 has a sidecar")
	}
}
