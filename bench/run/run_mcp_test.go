package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/bench/collect"
)

// TestRunOverMCP: simulator (MCP sink) → our control plane (xds:// config source) → fleet. The
// scenario's thresholds hold every event to be observed by every client it reaches: 0 missed.
func TestRunOverMCP(t *testing.T) {
	sc := loadScenario(t, strings.Replace(smallScenario, "name: small\n", "name: small-mcp\nsink: {kind: mcp}\n", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{Out: t.TempDir()})
	require.NoError(t, err)
	require.True(t, s.Results.Passed, "thresholds: %+v", s.Results.Thresholds)
	require.Equal(t, 0.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"])
	require.Greater(t, find(t, s, collect.MetricSimEvents, nil).Values["count"], 0.0)
	lat := find(t, s, "xdslab_push_latency_seconds", nil).Values
	t.Logf("push latency over MCP: p50 %.1f ms, p99 %.1f ms", lat["p(50)"]*1000, lat["p(99)"]*1000)
}
