package run

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serveGRPC serves g on a loopback port until the test ends.
func serveGRPC(t *testing.T, g *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return lis.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// TestProbeADS: what a first contact with each kind of target says (issue 31: a dead or wrong
// target was found only after the whole scenario).
func TestProbeADS(t *testing.T) {
	ctx := context.Background()

	// An ADS server with a snapshot for every node answers.
	cache := cachev3.NewSnapshotCache(false, allNodes{}, nil)
	snap, err := cachev3.NewSnapshot("1", map[resource.Type][]types.Resource{resource.ClusterType: {&clusterv3.Cluster{Name: "c"}}})
	require.NoError(t, err)
	require.NoError(t, cache.SetSnapshot(ctx, "all", snap))
	g := grpc.NewServer()
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, serverv3.NewServer(ctx, cache, nil))
	res, err := ProbeADS(ctx, serveGRPC(t, g), ProbeTimeout)
	require.NoError(t, err)
	require.True(t, res.Answered)

	// An ADS server with nothing for the node keeps the stream open and silent: not an error.
	// The full probe timeout, not a short one: under -race on a loaded machine the connection
	// alone can take longer than half a second, which is "no gRPC connection", not silence.
	g2 := grpc.NewServer()
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g2, serverv3.NewServer(ctx, cachev3.NewSnapshotCache(false, allNodes{}, nil), nil))
	res, err = ProbeADS(ctx, serveGRPC(t, g2), ProbeTimeout)
	require.NoError(t, err)
	require.True(t, res.Silent)

	// A gRPC server without ADS.
	g3 := grpc.NewServer()
	healthpb.RegisterHealthServer(g3, health.NewServer())
	_, err = ProbeADS(ctx, serveGRPC(t, g3), ProbeTimeout)
	require.ErrorContains(t, err, "does not serve envoy.service.discovery.v3.AggregatedDiscoveryService")

	// A closed port.
	closed := closedPort(t)
	_, err = ProbeADS(ctx, closed, ProbeTimeout)
	require.ErrorContains(t, err, "nothing accepts TCP connections")
	require.ErrorContains(t, err, closed)

	// An HTTP/1 server.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "<html>hello</html>") }))
	defer web.Close()
	_, err = ProbeADS(ctx, web.Listener.Addr().String(), ProbeTimeout)
	require.ErrorContains(t, err, "not a gRPC server")

	// A TCP server that accepts and never speaks.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, err = ProbeADS(ctx, lis.Addr().String(), 500*time.Millisecond)
	require.Error(t, err)
	t.Log(err)
}

func TestProbeMetrics(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE pilot_services gauge\npilot_services 3")
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintln(w, "<!doctype html><html><body>Grafana</body></html>")
	})
	mux.HandleFunc("/empty", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	require.NoError(t, ProbeMetrics(ctx, srv.URL+"/metrics", ProbeTimeout))
	err := ProbeMetrics(ctx, srv.URL+"/html", ProbeTimeout)
	require.ErrorContains(t, err, "served no Prometheus text")
	require.ErrorContains(t, err, "<!doctype html>")
	require.ErrorContains(t, ProbeMetrics(ctx, srv.URL+"/empty", ProbeTimeout), "no metric in it")
	require.ErrorContains(t, ProbeMetrics(ctx, srv.URL+"/nothing", ProbeTimeout), "404")
	require.ErrorContains(t, ProbeMetrics(ctx, "http://"+closedPort(t)+"/metrics", ProbeTimeout), "connection refused")
}

// TestRunDeadTarget: a run against a closed port or an HTTP server fails in seconds, before
// the sink writes anything, naming what was tried and what came back.
func TestRunDeadTarget(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	for name, addr := range map[string]string{"closed port": closedPort(t), "http server": web.Listener.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			started := time.Now()
			_, err := Run(context.Background(), sc, Options{Target: addr, SinkDir: dir})
			require.ErrorContains(t, err, "--target: probe of "+addr)
			t.Logf("%s in %s", err, time.Since(started))
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, ents, "nothing was written before the probe failed")
		})
	}
}
