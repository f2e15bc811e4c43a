package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
)

// TestMergeCommandRefusesOtherConfigs: shards of one scenario name whose embedded configs
// differ (another seed, another client count) are inputs of different runs: exit 2, as for
// other start times or shard counts.
func TestMergeCommandRefusesOtherConfigs(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	const cfg = `{"name":"dist","seed":11,"clients":[{"name":"sidecars","count":6}]}`
	write := func(name string, i int, config string) string {
		s := &summary.Summary{Version: summary.Version,
			Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(time.Second), DurationSeconds: 1,
				Segment: &summary.Segment{Index: i, Count: 2}, StartAt: &at, Labels: map[string]string{"scenario": "dist"}},
			Config: []byte(config),
			Results: summary.Results{Passed: true, Metrics: []summary.Metric{
				summary.NewGauge(fleet.MetricConnected, summary.Default, 3, 0, 3, nil),
			}}}
		p := filepath.Join(dir, name)
		if err := summary.WriteFile(p, s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("shard-0.json", 0, cfg)
	for _, tc := range []struct {
		name, config string
		want         int
	}{
		// Merged; its scenario's default thresholds then judge figures these shards lack (99).
		{"same config", cfg, exitThreshold},
		{"another seed", strings.Replace(cfg, `"seed":11`, `"seed":99`, 1), exitUsage},
		{"another client count", strings.Replace(cfg, `"count":6`, `"count":50`, 1), exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := write("shard-1-"+strings.ReplaceAll(tc.name, " ", "-")+".json", 1, tc.config)
			if got := runCLI(context.Background(), []string{"merge", a, b, "--quiet"}); got != tc.want {
				t.Errorf("xdslab merge %s %s: exit %d, want %d", a, b, got, tc.want)
			}
		})
	}
}
