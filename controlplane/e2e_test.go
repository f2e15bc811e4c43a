package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
)

// healthBackend is a loopback gRPC server whose health service reports name as SERVING.
func healthBackend(t *testing.T, name string) int {
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
	return lis.Addr().(*net.TCPAddr).Port
}

func writeEchoEntry(t *testing.T, dir string, backendPort int) {
	t.Helper()
	yaml := fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: echo
  namespace: default
spec:
  hosts: [echo.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: grpc, number: 7070, protocol: GRPC, targetPort: %d}
  endpoints:
  - {address: 127.0.0.1, locality: r1/z1}
`, backendPort)
	// Write atomically, the way the simulator and kubectl-style tools do.
	tmp := filepath.Join(dir, ".echo.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "echo.yaml")); err != nil {
		t.Fatal(err)
	}
}

// The end-to-end check with a real client: a grpc-go application resolving
// xds:///HOST:PORT through grpc-go's own xDS resolver (GENERATOR=grpc), bootstrapped to our
// control plane, reaches the backend named by a ServiceEntry in the watched directory; rewriting
// the ServiceEntry moves its calls to another backend.
func TestGRPCClientFollowsServiceEntryFile(t *testing.T) {
	portA, portB := healthBackend(t, "a"), healthBackend(t, "b")
	dir := t.TempDir()
	writeEchoEntry(t, dir, portA)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	srv := controlplanetest.NewServer(t, opts)

	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":%q,"channel_creds":[{"type":"insecure"}],"server_features":[]}],
		"node":{"id":"sidecar~127.0.0.1~client-0.default~default.svc.cluster.local","metadata":{"GENERATOR":"grpc","NAMESPACE":"default"}}}`, srv.GRPCAddr())
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///echo.default.svc.cluster.local:7070", grpc.WithResolvers(rb),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	reachesBackend(t, hc, "a")
	writeEchoEntry(t, dir, portB)
	reachesBackend(t, hc, "b")
	for _, c := range srv.XDS().Syncz() {
		for _, ty := range c.Types {
			if ty.Nacks != 0 {
				t.Errorf("the grpc client NACKed %s: %s", ty.TypeURL, ty.LastError)
			}
		}
	}
}

// reachesBackend retries a health check through hc until the backend that names itself name
// answers SERVING (the xDS resolver has followed the config), failing after 20 s.
func reachesBackend(t *testing.T, hc healthpb.HealthClient, name string) {
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
	t.Fatalf("calls never reached backend %q: %v", name, last)
}
