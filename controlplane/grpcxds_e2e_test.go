package controlplane_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
)

// writeFile writes a config file atomically, as kubectl-style tools do.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// grpcServiceEntry is a STATIC ServiceEntry with one gRPC port whose single endpoint on 127.0.0.1
// names its target port in a per-endpoint ports: map; locality may be empty (none).
func grpcServiceEntry(name, ns string, port, target int, locality string) string {
	loc := ""
	if locality != "" {
		loc = ", locality: " + locality
	}
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  hosts: [%[1]s.%[2]s.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: grpc, number: %[3]d, protocol: GRPC}
  endpoints:
  - {address: 127.0.0.1, ports: {grpc: %[4]d}%[5]s}
`, name, ns, port, target, loc)
}

// grpc-go's own xDS resolver (bootstrap given in-process) reaches loopback backends through
// ServiceEntries with and without locality, with per-endpoint ports: maps, in two namespaces,
// and follows an endpoint change; the server sees no NACK at all.
func TestGRPCXDSResolverAcrossServiceEntries(t *testing.T) {
	portA, portB, portC := healthBackend(t, "a"), healthBackend(t, "b"), healthBackend(t, "c")
	dir := t.TempDir()
	writeFile(t, dir, "echo.yaml", grpcServiceEntry("echo", "default", 7070, portA, ""))
	writeFile(t, dir, "api.yaml", grpcServiceEntry("api", "other", 8080, portB, "r1/z1/s1"))
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	srv := controlplanetest.NewServer(t, opts)

	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":%q,"channel_creds":[{"type":"insecure"}],"server_features":[]}],
		"node":{"id":"sidecar~127.0.0.2~client-0.default~default.svc.cluster.local","metadata":{"GENERATOR":"grpc","NAMESPACE":"default"}}}`, srv.GRPCAddr())
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	dialXDS := func(target string) healthpb.HealthClient {
		cc, err := grpc.NewClient("xds:///"+target, grpc.WithResolvers(rb), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		return healthpb.NewHealthClient(cc)
	}
	echo := dialXDS("echo.default.svc.cluster.local:7070")
	api := dialXDS("api.other.svc.cluster.local:8080")
	reachesBackend(t, echo, "a") // no locality
	reachesBackend(t, api, "b")  // with a locality, another namespace
	writeFile(t, dir, "echo.yaml", grpcServiceEntry("echo", "default", 7070, portC, ""))
	reachesBackend(t, echo, "c") // the endpoint moved
	reachesBackend(t, api, "b")

	conns := srv.XDS().Syncz()
	if len(conns) == 0 {
		t.Fatal("no xDS connection in /debug/syncz")
	}
	for _, c := range conns {
		for _, ty := range c.Types {
			if ty.Nacks != 0 {
				t.Errorf("the grpc client NACKed %s: %s", ty.TypeURL, ty.LastError)
			}
		}
	}
}
