package bench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/simulator"
)

// silentADS accepts ADS streams and reads every request without ever answering: a control
// plane that admits clients and configures none (istiod with a default mesh config and a
// client it will not serve).
type silentADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
}

func (silentADS) StreamAggregatedResources(s discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

// startSilentADS serves silentADS on a loopback port until the test ends.
func startSilentADS(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, silentADS{})
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return lis.Addr().String()
}

// A run whose clients never get their configuration does not pass, though every threshold the
// scenario wrote does: each client group has the implicit check "every client holds its first
// full config when the connect phase ends", unless it says requireFullConfig: false.
func TestRunFailsWithoutFullConfig(t *testing.T) {
	const base = `
name: never-configured
seed: 5
duration: 300ms
topology: {namespaces: 1, services: 2, endpointsPerService: 1, virtualServices: 0, destinationRules: 0}
churn:
  - {kind: scale, at: [100ms], delta: 1}
clients:
  - {name: sidecars, count: 2, ramp: 0REQUIRE}
phases:
  connect: {timeout: 500ms}
  drain: {timeout: 200ms}
thresholds:
  xdslab_sim_events_total: ['count>0']
`
	for _, tc := range []struct {
		name    string
		require string
		passed  bool
		checks  int // threshold verdicts: the written one, and the implicit one unless relaxed
	}{
		{"implicit check fails the run", "", false, 2},
		{"relaxed by the scenario", ", requireFullConfig: false", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := loadScenario(t, strings.Replace(base, "REQUIRE", tc.require, 1))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Run(ctx, sc, RunOptions{Target: startSilentADS(t), Sink: simulator.SinkFuncs{}})
			require.NoError(t, err)
			require.Equal(t, tc.passed, s.Results.Passed)
			require.Len(t, s.Results.Thresholds, tc.checks)
			require.Equal(t, 2.0, find(t, s, MetricConnectIncomplete, map[string]string{"group": "sidecars"}).Values["value"], "both clients counted")
			require.Equal(t, 2.0, find(t, s, MetricConnectIncomplete, nil).Values["value"])
			require.Contains(t, s.Metadata.Labels["note.connect"], "sidecars 2 of 2")
			for _, th := range s.Results.Thresholds {
				if th.Metric != MetricConnectIncomplete {
					require.True(t, th.Passed, "the written threshold passes: %s %s", th.Metric, th.Expression)
					continue
				}
				require.False(t, th.Passed)
				require.Equal(t, map[string]string{"group": "sidecars"}, th.Tags)
				require.NotNil(t, th.Value)
				require.Equal(t, 2.0, *th.Value)
				require.Contains(t, th.Description, "implicit")
			}
		})
	}
}
