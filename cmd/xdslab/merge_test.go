package main

import (
	"context"
	"fmt"
	"os"
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

// TestMergeDir: --dir skips an earlier merge's output in the same volume (a rerun, another
// --out), names a missing directory, and an interrupted --wait exits 130, not 2.
func TestMergeDir(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	shard := func(i int) *summary.Summary {
		return &summary.Summary{Version: summary.Version,
			Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(time.Second), DurationSeconds: 1,
				Segment: &summary.Segment{Index: i, Count: 2}},
			Results: summary.Results{Passed: true, Metrics: []summary.Metric{
				summary.NewGauge(fleet.MetricConnected, summary.Default, 3, 0, 3, nil),
			}}}
	}
	dir := t.TempDir()
	for i := range 2 {
		if err := summary.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)), shard(i)); err != nil {
			t.Fatal(err)
		}
	}
	if code := runCLI(context.Background(), []string{"merge", "--dir", dir, "--out", filepath.Join(dir, "merged.json"), "--quiet"}); code != exitOK {
		t.Fatalf("first merge: exit %d", code)
	}
	onlyMerged := t.TempDir()
	if err := os.Rename(filepath.Join(dir, "merged.json"), filepath.Join(onlyMerged, "merged.json")); err != nil {
		t.Fatal(err)
	}
	if code := runCLI(context.Background(), []string{"merge", "--dir", dir, "--out", filepath.Join(dir, "merged.json"), "--quiet"}); code != exitOK {
		t.Fatalf("second merge: exit %d", code)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		args []string
		want int
	}{
		{"rerun beside its own output", context.Background(), []string{"merge", "--dir", dir}, exitOK},
		{"rerun with --wait", context.Background(), []string{"merge", "--dir", dir, "--wait", "2", "--timeout", "5s"}, exitOK},
		{"only merged summaries", context.Background(), []string{"merge", "--dir", onlyMerged}, exitUsage},
		{"missing dir", context.Background(), []string{"merge", "--dir", filepath.Join(dir, "nope")}, exitUsage},
		{"interrupted wait", canceled, []string{"merge", "--dir", t.TempDir(), "--wait", "2"}, exitInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runCLI(tc.ctx, append(tc.args, "--quiet")); got != tc.want {
				t.Errorf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.want)
			}
		})
	}
	if _, err := waitSummaries(context.Background(), filepath.Join(dir, "nope"), "", 0, time.Second); err == nil || !strings.Contains(err.Error(), "--dir") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("missing dir: %v, want it named", err)
	}
}
