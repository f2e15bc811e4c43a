package gen

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGRPCClientAcceptsResources serves the proxyless gRPC resources generated here through
// go-control-plane's reference SotW server (not ours: the ADS server lives in controlplane/xds)
// to grpc-go's own xDS client, and makes an RPC through them: grpc-go accepts the listener, the
// route configuration (VirtualService with a redirect and a direct response route, then one with
// a subset, retries, a timeout, a fault delay, header operations, a mirror and a hash policy) and the fault filter before the router, the cluster
// (DestinationRule with outlier detection and a consistent hash) and the assignment (two
// localities ranked by priority for the client's locality), all scoped by a Sidecar.
func TestGRPCClientAcceptsResources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The backend: a health service on loopback.
	backendLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	backend := grpc.NewServer()
	healthpb.RegisterHealthServer(backend, health.NewServer())
	go backend.Serve(backendLis)
	defer backend.Stop()
	backendPort := uint32(backendLis.Addr().(*net.TCPAddr).Port)

	const svcHost = "backend.test.svc.cluster.local"
	svc := &model.Service{Hostname: svcHost, Namespace: "test", Ports: []model.Port{{Name: "grpc", Number: 7070, Protocol: model.ProtocolGRPC}}}
	ep := &model.Endpoint{Service: svcHost, Address: "127.0.0.1", Ports: map[string]uint32{"grpc": backendPort}, Labels: map[string]string{"version": "v1"}, Locality: model.Locality{Region: "r", Zone: "z"}}
	// Another locality, ranked priority 1 for a client in r/z (outlier detection turns locality
	// failover on): grpc-go takes priorities and stays on priority 0, the live backend.
	far := &model.Endpoint{Service: svcHost, Address: "127.0.0.2", Ports: map[string]uint32{"grpc": backendPort}, Labels: map[string]string{"version": "v1"}, Locality: model.Locality{Region: "r", Zone: "far"}}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "backend", Namespace: "test", ResourceVersion: "1"}, Spec: &networking.DestinationRule{
		Host: "backend",
		TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{Interval: durationpb.New(time.Second), MaxEjectionPercent: 50},
			// A consistent hash: a RING_HASH cluster and a header hash_policy on the route.
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}}},
		Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}},
	}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "backend", Namespace: "test", ResourceVersion: "1"}, Spec: &networking.VirtualService{
		Hosts: []string{"backend"},
		Http: []*networking.HTTPRoute{{
			// A redirect and a direct response, as istiod sends them: grpc-go accepts the route
			// configuration and fails only the RPCs these match.
			Match:    []*networking.HTTPMatchRequest{{Uri: prefix("/moved.Service/")}},
			Redirect: &networking.HTTPRedirect{Uri: "/grpc.health.v1.Health/Check"},
		}, {
			Match:          []*networking.HTTPMatchRequest{{Uri: prefix("/fixed.Service/")}},
			DirectResponse: &networking.HTTPDirectResponse{Status: 503},
		}, {
			Match:   []*networking.HTTPMatchRequest{{Uri: prefix("/grpc.health.v1.Health/")}},
			Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "backend", Subset: "v1"}}},
			Timeout: durationpb.New(5 * time.Second),
			Retries: &networking.HTTPRetry{Attempts: 2, RetryOn: "unavailable"},
			// The fault filter's per-route config (a 1ms delay on every RPC), header operations
			// and a mirror: grpc-go runs the first and ignores the others.
			Fault: &networking.HTTPFaultInjection{Delay: &networking.HTTPFaultInjection_Delay{
				HttpDelayType: &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: durationpb.New(time.Millisecond)}, Percentage: &networking.Percent{Value: 100}}},
			Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-route": "1"}}},
			Mirror:  &networking.Destination{Host: "backend", Subset: "v1"},
			// CORS is left out for gRPC clients: grpc-go would NACK a config for a filter it lacks.
			CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{exact("https://a.example")}},
		}},
	}}
	// A Sidecar scopes the client to its own namespace: other.elsewhere is not in its view.
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "test"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}}}
	other := &model.Service{Hostname: "other.elsewhere.svc.cluster.local", Namespace: "elsewhere", Ports: svc.Ports}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc, other}, Endpoints: map[string][]*model.Endpoint{svcHost: {ep, far}},
		Configs: []*istioconfig.Config{dr, vs, sidecar}})

	p := grpcProxy("test")
	p.Locality = model.Locality{Region: "r", Zone: "z"}
	target := HostPortName(svcHost, 7070)
	gen := func(typeURL string, names ...string) []cachev3.Resource {
		rs, err := ForType(typeURL, p).Generate(p, s, names)
		if err != nil || len(rs) != len(names) {
			t.Fatalf("%s %v: %d resources, %v", typeURL, names, len(rs), err)
		}
		out := make([]cachev3.Resource, len(rs))
		for i, r := range rs {
			out[i] = r.Message
		}
		return out
	}
	cluster := "outbound|7070|v1|" + svcHost
	if rs, _ := ForType(ListenerType, p).Generate(p, s, nil); len(rs) != 1 || rs[0].Name != target {
		t.Fatalf("scoped wildcard LDS: %d listeners, want only %s", len(rs), target)
	}
	if got := ranks(gen(EndpointType, cluster)[0].(*endpointv3.ClusterLoadAssignment)); len(got) != 2 || !strings.HasPrefix(got[0], "r/far/ p=1") {
		t.Fatalf("assignment %v: want the far locality at priority 1", got)
	}
	snap, err := cache.NewSnapshot("1", map[resource.Type][]cachev3.Resource{
		resource.ListenerType: gen(ListenerType, target),
		resource.RouteType:    gen(RouteType, target),
		resource.ClusterType:  gen(ClusterType, cluster),
		resource.EndpointType: gen(EndpointType, cluster),
	})
	if err != nil {
		t.Fatal(err)
	}
	const nodeID = "sidecar~10.200.0.1~client-0.test~test.svc.cluster.local"
	sc := cache.NewSnapshotCache(false, cache.IDHash{}, nil)
	if err := sc.SetSnapshot(ctx, nodeID, snap); err != nil {
		t.Fatal(err)
	}
	cpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp := grpc.NewServer()
	srvCtx, srvCancel := context.WithCancel(ctx)
	defer srvCancel()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(cp, serverv3.NewServer(srvCtx, sc, nil))
	go cp.Serve(cpLis)
	defer cp.Stop()

	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":%q,"channel_creds":[{"type":"insecure"}],"server_features":[]}],
		"node":{"id":%q,"metadata":{"GENERATOR":"grpc","NAMESPACE":"test"}}}`, cpLis.Addr().String(), nodeID)
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xds:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(rb))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("RPC through the generated xDS resources: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("status %v", resp.GetStatus())
	}
}
