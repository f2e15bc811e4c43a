package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/scenarios"
)

// authzScenario: namespace-wide AuthorizationPolicies in every namespace and a config-change
// process rewriting two of them per event, watched by SotW and Delta sidecars that NACK what
// Envoy would reject, and by proxyless gRPC clients (which get no inbound RBAC, so no authz
// event targets them).
const authzScenario = `
name: authz
seed: 11
duration: 3s
topology:
  namespaces: 3
  services: 9
  endpointsPerService: {dist: constant, value: 2}
  authorizationPolicies: {perNamespace: 3}
churn:
  - {kind: config-change, target: authz, every: 250ms, services: 2}
clients:
  - {name: sotw, count: 6, ramp: 0, nack: {realistic: true}}
  - {name: delta, xds: delta, count: 3, ramp: 0, nack: {realistic: true}}
  - {name: grpc, xds: grpc, type: grpc, count: 2, ramp: 0}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 10s}
thresholds:
  xdslab_events_missed_total: ['count==0']
`

// TestAuthzChurnInProcess: every AuthorizationPolicy rewrite is observed, as the new rule count
// of its RBAC policies on virtualInbound, by the sidecars of its namespace; nothing is missed or
// NACKed.
// The variant reads the mesh over MCP under Sidecar scoping: scoping limits what a sidecar
// imports, not which inbound policies apply to it, so every rewrite still reaches the
// policy's namespace. (It leaves out the proxyless gRPC group, whose default targets, every
// service port, include services a scoped namespace does not import.)
func TestAuthzChurnInProcess(t *testing.T) {
	for _, tc := range []struct{ name, extra string }{
		{"memory", ""},
		{"mcp-scoped", "sink: {kind: mcp}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := authzScenario + tc.extra
			if tc.extra != "" {
				src = strings.Replace(src, "  authorizationPolicies:", "  sidecarScoping: true\n  sidecarImports: 1\n  authorizationPolicies:", 1)
				src = strings.Replace(src, "  - {name: grpc, xds: grpc, type: grpc, count: 2, ramp: 0}\n", "", 1)
			}
			runAuthz(t, loadScenario(t, src))
		})
	}
}

func runAuthz(t *testing.T, sc *scenarios.Scenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{})
	require.NoError(t, err)
	require.Equal(t, float64(sc.TotalClients()), find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"], "clients with their full config")
	require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "NACKs")
	events := find(t, s, collect.MetricSimEvents, nil).Values["count"]
	require.GreaterOrEqual(t, events, 8.0, "a rewrite every 250ms for 3s")
	require.Equal(t, 0.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"], "events missed")
	require.Equal(t, 0.0, find(t, s, "xdslab_probe_missed_total", nil).Values["count"], "observations missed")
	push := find(t, s, "xdslab_push_latency_seconds", map[string]string{"kind": "config-change"})
	h, err := push.Histogram.Decode()
	require.NoError(t, err)
	// Two policies of at most two namespaces per event, each namespace holding 2 of the 9
	// sidecars (SotW and Delta): every event is observed by at least 2 clients.
	require.GreaterOrEqual(t, float64(h.TotalCount()), 2*events, "observations")
	t.Logf("authz events %v, observations %d, push latency p50 %.3fs p99 %.3fs",
		events, h.TotalCount(), push.Values["p(50)"], push.Values["p(99)"])
	require.True(t, s.Results.Passed)
}
