package xds

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"

	"github.com/xdslab/xdslab/controlplane/model"
)

// backend is a loopback gRPC server whose health service reports name as SERVING.
func backend(t *testing.T, name string) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return uint32(lis.Addr().(*net.TCPAddr).Port)
}

func grpcTopology(host string, backendPort uint32) model.SnapshotInput {
	return model.SnapshotInput{
		Services: []*model.Service{{Hostname: host, Namespace: "default",
			Ports: []model.Port{{Name: "grpc", Number: 7070, Protocol: model.ProtocolGRPC}}}},
		Endpoints: map[string][]*model.Endpoint{host: {{Service: host, Address: "127.0.0.1",
			Ports: map[string]uint32{"grpc": backendPort}, Weight: 1, Locality: model.Locality{Region: "r1", Zone: "z1"}}}},
	}
}

// A real grpc-go xDS client (its own resolver and xDS client, GENERATOR=grpc) reaches the
// backend our control plane points it at, and follows an endpoint change to another backend.
func TestGRPCXDSClientFollowsEndpoints(t *testing.T) {
	const host = "echo.default.svc.cluster.local"
	portA, portB := backend(t, "a"), backend(t, "b")
	ts := startServer(t, testOptions())
	ts.push(grpcTopology(host, portA), true)

	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":%q,"channel_creds":[{"type":"insecure"}],"server_features":[]}],
		"node":{"id":"sidecar~127.0.0.1~client.default~default.svc.cluster.local","metadata":{"GENERATOR":"grpc","NAMESPACE":"default"}}}`, ts.addr)
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///"+host+":"+strconv.Itoa(7070), grpc.WithResolvers(rb),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)

	// waitServing polls until the backend answering is the one serving name (bounded).
	waitServing := func(name string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var last error
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
			cancel()
			if err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING {
				return
			}
			last = err
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("calls through xds:///%s never reached backend %q: %v", host, name, last)
	}
	waitServing("a")

	ts.push(grpcTopology(host, portB), false, host)
	waitServing("b")
	for _, c := range ts.Syncz() {
		for _, ty := range c.Types {
			if ty.Nacks != 0 {
				t.Errorf("grpc client NACKed %s: %s", ty.TypeURL, ty.LastError)
			}
		}
	}
}
