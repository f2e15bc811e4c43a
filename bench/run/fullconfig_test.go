package run

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
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
			s, err := Run(ctx, sc, Options{Target: startSilentADS(t), Sink: simulator.SinkFuncs{}})
			require.NoError(t, err)
			require.Equal(t, tc.passed, s.Results.Passed)
			require.Len(t, s.Results.Thresholds, tc.checks)
			require.Equal(t, 2.0, find(t, s, collect.MetricConnectIncomplete, map[string]string{"group": "sidecars"}).Values["value"], "both clients counted")
			require.Equal(t, 2.0, find(t, s, collect.MetricConnectIncomplete, nil).Values["value"])
			require.Contains(t, s.Metadata.Labels["note.connect"], "sidecars 2 of 2")
			// Why, per group: the silent server never answered.
			require.Equal(t, "sidecars: 2 clients: no response from the control plane (e.g. sidecar~100.64.0.1~pod-0.ns-0~ns-0.svc.cluster.local)",
				s.Metadata.Labels["note.incomplete"])
			for _, th := range s.Results.Thresholds {
				if th.Metric != collect.MetricConnectIncomplete {
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

// TestIncompleteNote: one clause per group and reason, the first example named, at most five.
func TestIncompleteNote(t *testing.T) {
	require.Empty(t, collect.IncompleteNote(nil))
	var gs []fleet.IncompleteGroup
	for i := range 7 {
		gs = append(gs, fleet.IncompleteGroup{Group: "g", Reason: fmt.Sprintf("reason %d", i), Clients: 7 - i, Examples: []string{"n1", "n2"}})
	}
	require.Equal(t, "g: 7 clients: reason 0 (e.g. n1)", collect.IncompleteNote(gs[:1]))
	note := collect.IncompleteNote(gs)
	require.Contains(t, note, "g: 3 clients: reason 4 (e.g. n1); and 2 more reasons")
	require.NotContains(t, note, "reason 5")
}
