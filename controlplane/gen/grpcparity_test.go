package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// grpcParityMesh is a mesh for the proxyless gRPC parity cases (hack/istio/parity
// TestParityGRPCWithIstio found each difference on the parity corpus): an HTTP service with two
// ports, a TCP and a UDP service, a passthrough (resolution NONE) one, and a Sidecar in
// namespace "scoped" that imports only port 80 of web.
func grpcParityMesh(configs ...*istioconfig.Config) *model.Snapshot {
	svcs := []*model.Service{
		{Hostname: "web.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "admin", Number: 9000, Protocol: model.ProtocolHTTP}}},
		{Hostname: "db.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}}},
		{Hostname: "dns.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "udp", Number: 5353, Protocol: model.ProtocolUDP}}},
		{Hostname: "open.example.org", Namespace: "app", Resolution: model.ResolutionPassthrough, Ports: []model.Port{{Name: "http", Number: 8193, Protocol: model.ProtocolHTTP}}},
	}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "scoped"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"app/*"}}}}}
	return model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: append(configs, sidecar)})
}

// TestGRPCListenerNames: a proxyless gRPC client's LDS names are answered as istiod's grpcgen
// answers them: a service's host name, or a short name of the client's namespace ("NAME",
// "NAME.NS", "NAME.NS.svc"), the listener named as asked and its RDS name the service's
// "FQDN:PORT"; a port of any protocol and resolution (TCP, UDP, passthrough); not a short name
// of another namespace, nor a port a Sidecar does not import.
func TestGRPCListenerNames(t *testing.T) {
	s := grpcParityMesh()
	tests := []struct {
		name string
		ns   string
		ask  string
		rds  string // "" for no listener
	}{
		{"full host name", "app", "web.app.svc.cluster.local:80", "web.app.svc.cluster.local:80"},
		{"name", "app", "web:80", "web.app.svc.cluster.local:80"},
		{"name.ns", "app", "web.app:9000", "web.app.svc.cluster.local:9000"},
		{"name.ns.svc", "app", "web.app.svc:80", "web.app.svc.cluster.local:80"},
		{"name.ns from another namespace", "other", "web.app:80", ""},
		{"name from another namespace", "other", "web:80", ""},
		{"tcp port", "app", "db:5432", "db.app.svc.cluster.local:5432"},
		{"udp port", "app", "dns.app.svc.cluster.local:5353", "dns.app.svc.cluster.local:5353"},
		{"passthrough service", "other", "open.example.org:8193", "open.example.org:8193"},
		{"port the Sidecar imports", "scoped", "web.app.svc.cluster.local:80", "web.app.svc.cluster.local:80"},
		{"port the Sidecar leaves out", "scoped", "web.app.svc.cluster.local:9000", ""},
		{"no such port", "app", "web:81", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := grpcProxy(tt.ns)
			rs, err := ForType(ListenerType, p).Generate(p, s, []string{tt.ask})
			if err != nil {
				t.Fatal(err)
			}
			if tt.rds == "" {
				if len(rs) != 0 {
					t.Fatalf("got %d listeners, want none", len(rs))
				}
				return
			}
			if len(rs) != 1 || rs[0].Name != tt.ask {
				t.Fatalf("got %v, want one listener %s", rs, tt.ask)
			}
			l := rs[0].Message.(*listenerv3.Listener)
			if l.GetName() != tt.ask {
				t.Errorf("listener name %q, want %q", l.GetName(), tt.ask)
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := l.GetApiListener().GetApiListener().UnmarshalTo(h); err != nil {
				t.Fatal(err)
			}
			if got := h.GetRds().GetRouteConfigName(); got != tt.rds {
				t.Errorf("RDS name %q, want %q", got, tt.rds)
			}
			// The route configuration it names, and the one of the name asked, exist.
			for _, n := range []string{tt.rds, tt.ask} {
				if rs, err := ForType(RouteType, p).Generate(p, s, []string{n}); err != nil || len(rs) != 1 || rs[0].Name != n {
					t.Errorf("RDS %s: %v, %v", n, rs, err)
				}
			}
		})
	}
	// A wildcard request lists the Sidecar's imports only.
	p := grpcProxy("scoped")
	rs, _ := ForType(ListenerType, p).Generate(p, s, nil)
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if want := []string{"web.app.svc.cluster.local:80"}; !slices.Equal(names, want) {
		t.Errorf("scoped wildcard LDS %v, want %v", names, want)
	}
}

// TestGRPCRoutesByPortProtocol: a port that is not HTTP (nor sniffed) for the client gets a route
// configuration without virtual hosts, as istiod's sidecar route builder gives it none (RPCs to
// it fail); an HTTP port of a passthrough service routes to its cluster, an EDS cluster since
// grpc-go has no ORIGINAL_DST (istiod's grpcgen builds EDS for every service).
func TestGRPCRoutesByPortProtocol(t *testing.T) {
	s := grpcParityMesh()
	p := grpcProxy("app")
	tests := []struct {
		name    string
		cluster string // the default route's cluster, "" for no virtual host
	}{
		{"db.app.svc.cluster.local:5432", ""},
		{"dns.app.svc.cluster.local:5353", ""},
		{"web.app.svc.cluster.local:9000", "outbound|9000||web.app.svc.cluster.local"},
		{"open.example.org:8193", "outbound|8193||open.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ForType(RouteType, p).Generate(p, s, []string{tt.name})
			if err != nil || len(rs) != 1 {
				t.Fatalf("got %v, %v", rs, err)
			}
			vhs := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()
			if tt.cluster == "" {
				if len(vhs) != 0 {
					t.Fatalf("virtual hosts %v, want none", vhs)
				}
				return
			}
			if len(vhs) != 1 || vhs[0].GetRoutes()[0].GetRoute().GetCluster() != tt.cluster {
				t.Fatalf("virtual hosts %v, want one routing to %s", vhs, tt.cluster)
			}
		})
	}
	rs, err := ForType(ClusterType, p).Generate(p, s, []string{"outbound|8193||open.example.org"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("passthrough cluster: %v, %v", rs, err)
	}
	if c := rs[0].Message.(*clusterv3.Cluster); c.GetType() != clusterv3.Cluster_EDS || c.GetEdsClusterConfig().GetServiceName() != c.GetName() {
		t.Errorf("passthrough cluster for gRPC: type %v, EDS %v", c.GetType(), c.GetEdsClusterConfig())
	}
}

// TestGRPCRetryPolicy: a proxyless gRPC route's retry policy is istiod's, which builds gRPC
// routes with the sidecar's builder: 2 retries on its default conditions (grpc-go reads
// "unavailable" and "cancelled") on the default route and on a VirtualService route without
// retries, none with attempts 0, the route's attempts, conditions and backoff otherwise; never a
// host predicate.
func TestGRPCRetryPolicy(t *testing.T) {
	tests := []struct {
		name    string
		retries *networking.HTTPRetry // nil with vs false: no VirtualService
		vs      bool
		want    string // "ON/N/BACKOFF", "" for no policy
	}{
		{"default route", nil, false, DefaultRetryOn + "/2/"},
		{"route without retries", nil, true, DefaultRetryOn + "/2/"},
		{"attempts 0", &networking.HTTPRetry{Attempts: 0}, true, ""},
		{"attempts without conditions", &networking.HTTPRetry{Attempts: 3}, true, DefaultRetryOn + "/3/"},
		{"conditions and backoff", &networking.HTTPRetry{Attempts: 4, RetryOn: "unavailable,internal", Backoff: durationpb.New(50 * time.Millisecond)}, true, "unavailable,internal/4/50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfgs []*istioconfig.Config
			if tt.vs {
				cfgs = append(cfgs, vsConfig("v", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
					{Route: []*networking.HTTPRouteDestination{dest("web", "", 0)}, Retries: tt.retries},
				}}))
			}
			s := grpcParityMesh(cfgs...)
			p := grpcProxy("app")
			rs, err := ForType(RouteType, p).Generate(p, s, []string{"web.app.svc.cluster.local:80"})
			if err != nil || len(rs) != 1 {
				t.Fatalf("got %v, %v", rs, err)
			}
			rp := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetRetryPolicy()
			got := ""
			if rp != nil {
				got = rp.GetRetryOn() + "/" + strings.TrimPrefix(rp.GetNumRetries().String(), "value:") + "/"
				if b := rp.GetRetryBackOff().GetBaseInterval(); b != nil {
					got += b.AsDuration().String()
				}
				if len(rp.GetRetryHostPredicate()) > 0 || rp.GetHostSelectionRetryMaxAttempts() != 0 {
					t.Errorf("host predicate for a gRPC client: %v", rp)
				}
			}
			if got != tt.want {
				t.Errorf("retry policy %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGRPCRouteDestinationPort: a VirtualService destination without a port on a gRPC route
// configuration takes the route configuration's port, as on a sidecar's (istiod builds both
// with one builder), not the destination service's only port.
func TestGRPCRouteDestinationPort(t *testing.T) {
	svcs := []*model.Service{
		{Hostname: "front.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 9443, Protocol: model.ProtocolHTTP}}},
		{Hostname: "back.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 8086, Protocol: model.ProtocolHTTP}}},
	}
	vs := vsConfig("v", "app", &networking.VirtualService{Hosts: []string{"front"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{dest("back", "", 0)}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{vs}})
	p := grpcProxy("app")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"front.app.svc.cluster.local:9443"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %v, %v", rs, err)
	}
	if got, want := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster(), "outbound|9443||back.app.svc.cluster.local"; got != want {
		t.Errorf("cluster %s, want %s", got, want)
	}
}

// TestGRPCRoutesOfVirtualServiceDestination: a service the client's Sidecar imports only as the
// destination of a VirtualService it imports (by the VirtualService's other host, from any
// namespace) still gets its virtual host on an HTTP port (GRPC here), as istiod's sidecar route
// builder gives the VirtualService's host one (random mesh seed 134); a service imported only as a
// destination gets none.
func TestGRPCRoutesOfVirtualServiceDestination(t *testing.T) {
	svcs := []*model.Service{
		{Hostname: "s0.other.svc.cluster.local", Namespace: "other", Ports: []model.Port{{Name: "http", Number: 5432, Protocol: model.ProtocolHTTP}}},
		{Hostname: "s2.example.com", Namespace: "plain", Ports: []model.Port{{Name: "grpc", Number: 5432, Protocol: model.ProtocolGRPC}}},
		{Hostname: "s3.plain.svc.cluster.local", Namespace: "plain", Ports: []model.Port{{Name: "http", Number: 8443, Protocol: model.ProtocolHTTP}}},
	}
	vs := vsConfig("v", "plain", &networking.VirtualService{Hosts: []string{"s0.other.svc.cluster.local", "s2.example.com"}, Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/s3")}}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "s3.plain.svc.cluster.local", Port: &networking.PortSelector{Number: 8443}}}}},
		{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "s2.example.com", Port: &networking.PortSelector{Number: 5432}}}}},
	}})
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*", "*/s0.other.svc.cluster.local"}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{vs, sidecar}})
	p := grpcProxy("app")
	ls, err := ForType(ListenerType, p).Generate(p, s, []string{"s2.example.com:5432"})
	if err != nil || len(ls) != 1 {
		t.Fatalf("listener: %v, %v; want one (the Sidecar imports the VirtualService, so its destination)", ls, err)
	}
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"s2.example.com:5432"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %v, %v", rs, err)
	}
	vhs := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()
	if len(vhs) != 1 || vhs[len(vhs)-1].GetRoutes()[1].GetRoute().GetCluster() != "outbound|5432||s2.example.com" {
		t.Fatalf("virtual hosts %v, want one routing to outbound|5432||s2.example.com", vhs)
	}
	// A service imported only as a destination, whose host no imported VirtualService names,
	// has a listener but no virtual host: the sidecar's route configuration of its port has
	// none for it (random mesh seed 229).
	if ls, err := ForType(ListenerType, p).Generate(p, s, []string{"s3.plain.svc.cluster.local:8443"}); err != nil || len(ls) != 1 {
		t.Fatalf("listener of the destination: %v, %v", ls, err)
	}
	rs, err = ForType(RouteType, p).Generate(p, s, []string{"s3.plain.svc.cluster.local:8443"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %v, %v", rs, err)
	}
	if vhs := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts(); len(vhs) != 0 {
		t.Errorf("virtual hosts %v for a destination no VirtualService names, want none", vhs)
	}
}

// TestGRPCRoutesOfVirtualServiceOnlyHosts: where the port's egress listener does not hold a
// service but imports a VirtualService whose host covers it, the gRPC route configuration
// "HOST:PORT" is that VirtualService's virtual host on the sidecar's route configuration of the
// port, as istiod's grpcgen keeps it: the domains of the VirtualService's host (HOST and
// HOST:PORT, not the service's short names; random mesh seed 119), or of a wildcard host that
// covers the service (no virtual host before).
func TestGRPCRoutesOfVirtualServiceOnlyHosts(t *testing.T) {
	svcs := []*model.Service{
		{Hostname: "front.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		{Hostname: "back.other.svc.cluster.local", Namespace: "other", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		{Hostname: "side.far.svc.cluster.local", Namespace: "far", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
	}
	toFront := []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "front.app.svc.cluster.local", Port: &networking.PortSelector{Number: 80}}}}
	toSide := []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "side.far.svc.cluster.local", Port: &networking.PortSelector{Number: 80}}}}
	wild := vsConfig("wild", "app", &networking.VirtualService{Hosts: []string{"*.other.svc.cluster.local"}, Http: []*networking.HTTPRoute{{Route: toFront}}})
	via := vsConfig("via", "app", &networking.VirtualService{Hosts: []string{"side.far.svc.cluster.local"}, Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/front")}}, Route: toFront},
		{Route: toSide},
	}})
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"./*"}},
			{Hosts: []string{"other/*"}},
		}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{wild, via, sidecar}})
	p := grpcProxy("app")
	for _, tc := range []struct {
		name, route string
		domains     []string
		clusters    []string
	}{
		{"wildcard host covering a service the listener does not hold", "back.other.svc.cluster.local:80",
			[]string{"*.other.svc.cluster.local", "*.other.svc.cluster.local:80"}, []string{"outbound|80||front.app.svc.cluster.local"}},
		{"host of a service imported only as a destination", "side.far.svc.cluster.local:80",
			[]string{"side.far.svc.cluster.local", "side.far.svc.cluster.local:80"}, []string{"outbound|80||front.app.svc.cluster.local", "outbound|80||side.far.svc.cluster.local"}},
		{"service the listener holds", "front.app.svc.cluster.local:80",
			[]string{"front.app.svc.cluster.local:80", "front.app.svc.cluster.local", "front:80", "front", "front.app:80", "front.app", "front.app.svc:80", "front.app.svc"}, []string{"outbound|80||front.app.svc.cluster.local"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := ForType(RouteType, p).Generate(p, s, []string{tc.route})
			if err != nil || len(rs) != 1 {
				t.Fatalf("got %v, %v", rs, err)
			}
			vhs := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()
			if len(vhs) != 1 {
				t.Fatalf("virtual hosts %v, want one", vhs)
			}
			if got := vhs[0].GetDomains(); !slices.Equal(got, tc.domains) {
				t.Errorf("domains %q, want %q", got, tc.domains)
			}
			var clusters []string
			for _, r := range vhs[0].GetRoutes() {
				clusters = append(clusters, r.GetRoute().GetCluster())
				if r.GetRoute().GetRetryPolicy().GetNumRetries().GetValue() != 2 {
					t.Errorf("route %s: retry policy %v, want gRPC's default (2 retries)", r.GetName(), r.GetRoute().GetRetryPolicy())
				}
			}
			if !slices.Equal(clusters, tc.clusters) {
				t.Errorf("clusters %q, want %q", clusters, tc.clusters)
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Error(err)
			}
		})
	}
}
