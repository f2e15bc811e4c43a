package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/scenarios"
)

// scale-10k's sidecarScoping makes the simulator write a Sidecar per namespace and the control
// plane scope every fleet proxy by it: shrunk, the scoped run delivers every event to the
// clients that import it (none missed) with fewer cluster bytes per client than the same run
// with scoping off.
func TestSidecarScopingScopesTheFleet(t *testing.T) {
	run := func(scoped bool) (cdsBytes, missed float64) {
		sc, err := scenarios.Builtin("scale-10k")
		require.NoError(t, err)
		require.True(t, sc.Topology.SidecarScoping, "scale-10k sets sidecarScoping")
		sc.Topology.SidecarScoping = scoped
		sc.Topology.Namespaces, sc.Topology.Services, sc.Topology.SidecarImports = 4, 40, 1
		sc.Topology.EndpointsPerService.Max = 4
		sc.Duration = scenarios.Duration(1500 * time.Millisecond)
		sc.Churn = []scenarios.Churn{{Kind: "endpoint-flap", Rate: 10}}
		sc.Clients[0].Count, sc.Clients[0].Ramp = 8, 0
		sc.Phases.Connect.Timeout = scenarios.Duration(20 * time.Second)
		sc.Phases.Drain.Timeout = scenarios.Duration(10 * time.Second)
		sc.Thresholds = map[string][]scenarios.Threshold{}
		sc.Complete()
		require.NoError(t, sc.Validate())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := Run(ctx, sc, RunOptions{})
		require.NoError(t, err)
		require.Equal(t, 8.0, find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"], "clients with their full config")
		require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "NACKs")
		return find(t, s, "xdslab_fleet_bytes_received_total", map[string]string{"type": "CDS"}).Values["count"],
			find(t, s, MetricEventsMissed, nil).Values["count"]
	}
	scopedBytes, scopedMissed := run(true)
	meshBytes, _ := run(false)
	t.Logf("CDS bytes received: %v with scoping, %v without", scopedBytes, meshBytes)
	require.Equal(t, 0.0, scopedMissed, "events missed with scoping")
	// Each Sidecar imports 2 of 4 namespaces: about half the clusters.
	require.Less(t, scopedBytes, 0.75*meshBytes, "CDS bytes with scoping (%v) vs without (%v)", scopedBytes, meshBytes)
}
