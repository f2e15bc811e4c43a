package run

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/scenarios/units"
)

// scale-10k's sidecarScoping makes the simulator write a Sidecar per namespace and the control
// plane scope every fleet proxy by it: shrunk, the scoped run delivers every event to the
// clients that import it (none missed) with fewer cluster bytes per client than the same run
// with scoping off.
//
// TestSidecarScopingScopesTheFleet also checks that the zone failure (services of every
// namespace at once) is observed, not missed, by every scoped client.
func TestSidecarScopingScopesTheFleet(t *testing.T) {
	run := func(scoped bool) (cdsBytes, missed float64) {
		sc, err := scenarios.Builtin("scale-10k")
		require.NoError(t, err)
		require.True(t, sc.Topology.SidecarScoping, "scale-10k sets sidecarScoping")
		sc.Topology.SidecarScoping = scoped
		sc.Topology.Namespaces, sc.Topology.Services, sc.Topology.SidecarImports = 6, 60, 1
		sc.Topology.EndpointsPerService.Max = 4
		sc.Duration = units.Duration(1500 * time.Millisecond)
		// A zone failure changes services of every namespace at once: each client is held to
		// the services its Sidecar imports (probe.Reach.PredicateNamespaces), so none misses it.
		sc.Churn = []scenarios.Churn{{Kind: "endpoint-flap", Rate: 10},
			{Kind: "zone-failure", At: []units.Duration{units.Duration(700 * time.Millisecond)}, Fraction: 0.5}}
		sc.Clients[0].Count, sc.Clients[0].Ramp = 12, 0
		sc.Phases.Connect.Timeout = units.Duration(20 * time.Second)
		sc.Phases.Drain.Timeout = units.Duration(10 * time.Second)
		sc.Thresholds = map[string][]threshold.Threshold{}
		sc.Complete()
		require.NoError(t, sc.Validate())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := Run(ctx, sc, Options{})
		require.NoError(t, err)
		require.Equal(t, 12.0, find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"], "clients with their full config")
		require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "NACKs")
		zone := map[string]string{"kind": "zone-failure"}
		require.Equal(t, 1.0, find(t, s, collect.MetricSimEvents, zone).Values["count"], "zone failures applied")
		require.Equal(t, 0.0, find(t, s, collect.MetricEventsMissed, zone).Values["count"], "zone failures missed (scoped: %v)", scoped)
		return find(t, s, "xdslab_fleet_bytes_received_total", map[string]string{"type": "CDS"}).Values["count"],
			find(t, s, collect.MetricEventsMissed, nil).Values["count"]
	}
	scopedBytes, scopedMissed := run(true)
	meshBytes, _ := run(false)
	t.Logf("CDS bytes received: %v with scoping, %v without", scopedBytes, meshBytes)
	require.Equal(t, 0.0, scopedMissed, "events missed with scoping")
	// Each Sidecar imports 2 of 6 namespaces: about a third of the clusters.
	require.Less(t, scopedBytes, 0.75*meshBytes, "CDS bytes with scoping (%v) vs without (%v)", scopedBytes, meshBytes)
}
