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

// shrinkIngress turns ingress-churn into a test-sized run: a small mesh behind 2 gateways,
// 2 SotW and 2 Delta routers (and sidecars when withSidecars), 3 s of churn.
func shrinkIngress(t *testing.T, withSidecars bool) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Builtin("ingress-churn")
	require.NoError(t, err)
	sc.Duration = units.Duration(3 * time.Second)
	sc.Topology.Namespaces, sc.Topology.Services = 3, 24
	sc.Topology.EndpointsPerService.Max = 4
	sc.Topology.Gateways.Count, sc.Topology.Gateways.HostsPerGateway = 2, 5
	for i := range sc.Churn {
		c := &sc.Churn[i]
		c.Rate = units.Rate(min(c.Rate.PerSecond()*2, 4))
	}
	var groups []scenarios.Client
	for _, c := range sc.Clients {
		c.Ramp = 0
		if c.Type == scenarios.TypeRouter {
			c.Count = 2
		} else {
			if !withSidecars {
				continue
			}
			c.Count = 4
		}
		groups = append(groups, c)
	}
	sc.Clients = groups
	sc.Phases.Connect.Timeout = units.Duration(20 * time.Second)
	sc.Phases.Drain.Timeout = units.Duration(10 * time.Second)
	sc.Thresholds = map[string][]threshold.Threshold{}
	sc.Complete()
	require.NoError(t, sc.Validate())
	return sc
}

// TestIngressChurnRouters runs a shrunk ingress-churn against the in-process control plane:
// routers (SotW and Delta, realistic NACK policy) get their full gateway config, accept
// everything, observe every gateway re-binding and every endpoint change of a gateway backend,
// and miss nothing; with sidecars beside them, nothing is missed either (sidecar-only events do
// not target routers, router-only ones do not target sidecars).
func TestIngressChurnRouters(t *testing.T) {
	for _, withSidecars := range []bool{false, true} {
		name := "routers-only"
		if withSidecars {
			name = "routers-and-sidecars"
		}
		t.Run(name, func(t *testing.T) {
			sc := shrinkIngress(t, withSidecars)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := Run(ctx, sc, Options{})
			require.NoError(t, err)
			require.Equal(t, float64(sc.TotalClients()), find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"], "clients with their full config")
			require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "NACKs")
			if m, ok := s.Results.Find(collect.MetricCPRejects, nil); ok {
				require.Equal(t, 0.0, m.Values["count"], "pilot_total_xds_rejects")
			}
			if m, ok := s.Results.Find("xdslab_fleet_warming_timeouts_total", nil); ok {
				t.Logf("warming timeouts: %v", m.Values["count"])
			}
			require.Equal(t, 0.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"], "events missed")
			require.Equal(t, 0.0, find(t, s, "xdslab_probe_missed_total", nil).Values["count"], "observations missed")
			for _, kind := range []string{"config-change", "endpoint-flap"} {
				h, err := find(t, s, "xdslab_push_latency_seconds", map[string]string{"kind": kind}).Histogram.Decode()
				require.NoError(t, err)
				require.Positivef(t, h.TotalCount(), "%s observed by no client", kind)
			}
		})
	}
}

// TestFleetConfigRouterLabels: router groups carry the label the simulated Gateways select
// unless they set an istio label; sidecars keep theirs as written.
func TestFleetConfigRouterLabels(t *testing.T) {
	sc, err := scenarios.Builtin("ingress-churn")
	require.NoError(t, err)
	sc.Clients[1].Node.Labels = map[string]string{"istio": "private", "app": "gw"}
	sc.Clients[2].Node.Labels = map[string]string{"app": "web"}
	cfg, err := FleetConfig(sc, "127.0.0.1:1")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"istio": "ingressgateway"}, cfg.Groups[0].Identity.Labels)
	require.Equal(t, "router", cfg.Groups[0].Identity.Type)
	require.Equal(t, map[string]string{"istio": "private", "app": "gw"}, cfg.Groups[1].Identity.Labels)
	require.Equal(t, map[string]string{"app": "web"}, cfg.Groups[2].Identity.Labels)
	require.Equal(t, "sidecar", cfg.Groups[2].Identity.Type)
}
