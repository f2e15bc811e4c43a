package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/internal/summary"
)

// writeCompareSummary writes a summary whose push latency is lognormal around medianMs (drawn
// from seed draw) and whose push cycles are cycles, under scenario seed 1.
func writeCompareSummary(t *testing.T, path string, draw uint64, medianMs, cycles float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(draw, draw+1))
	h := hdr.New(1, 3_600_000_000, 3)
	for i := 0; i < 500; i++ {
		if err := h.RecordValue(int64(1000 * medianMs * (1 + 0.3*r.NormFloat64()*0.5))); err != nil {
			t.Fatal(err)
		}
	}
	lat, err := summary.NewTrend("xdslab_push_latency_seconds", summary.Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Started: start, Ended: start.Add(10 * time.Second), DurationSeconds: 10},
		Config:   []byte(`{"seed":1}`),
		Results: summary.Results{Passed: true, Metrics: []summary.Metric{lat,
			summary.NewCounter("xdslab_cp_push_cycles_total", summary.Default, cycles, 10*time.Second, nil),
			summary.NewCounter("xdslab_probe_events_total", summary.Default, 100, 10*time.Second, nil),
		}}}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := summary.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
}

func TestCompareCommandExitCodes(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	writeCompareSummary(t, p("base.json"), 1, 100, 50)
	writeCompareSummary(t, p("same.json"), 2, 100, 50)
	writeCompareSummary(t, p("slow.json"), 3, 250, 50)
	writeCompareSummary(t, p("pushy.json"), 4, 100, 60)
	for i := 1; i <= 3; i++ {
		writeCompareSummary(t, p(fmt.Sprintf("base-runs/run-%d/summary.json", i)), uint64(10+i), 100, 50)
		writeCompareSummary(t, p(fmt.Sprintf("new-runs/run-%d/summary.json", i)), uint64(20+i), 100, 50)
	}
	// Push cycles vary between identical runs: they are tested over repeated runs.
	for i := 1; i <= 5; i++ {
		writeCompareSummary(t, p(fmt.Sprintf("base5/run-%d/summary.json", i)), uint64(30+i), 100, float64(49+i))
		writeCompareSummary(t, p(fmt.Sprintf("pushy5/run-%d/summary.json", i)), uint64(40+i), 100, float64(59+i))
	}
	// tune's points: two runs a side, the new one 6.5x slower (152.6ms -> 1.014s was seen).
	for i := 1; i <= 2; i++ {
		writeCompareSummary(t, p(fmt.Sprintf("point-0/run-%d/summary.json", i)), uint64(30+i), 152.6, 50)
		writeCompareSummary(t, p(fmt.Sprintf("point-2/run-%d/summary.json", i)), uint64(40+i), 1014, 50)
	}
	if err := os.WriteFile(p("empty.json"), []byte(`{"version":"1","metadata":{"tool":"xdslab","started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:10Z","durationSeconds":10},"config":{"seed":1},"results":{"passed":true,"metrics":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("broken.json"), []byte("{\"version\": \"1\",\n\"results\": 3}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		// One run a side cannot place a p(99) of 100 events: inconclusive fails closed.
		{"same configuration, one run: inconclusive", []string{p("base.json"), p("same.json")}, exitRegression},
		{"same configuration, one run, inconclusive allowed", []string{p("base.json"), p("same.json"), "--allow-inconclusive"}, exitOK},
		{"2+2 runs, 6.5x slower: regression via the histograms", []string{p("point-0"), p("point-2")}, exitRegression},
		{"2+2 runs, 6.5x slower, inconclusive allowed: still a regression", []string{p("point-0"), p("point-2"), "--allow-inconclusive"}, exitRegression},
		{"planted latency regression fails", []string{p("base.json"), p("slow.json")}, exitRegression},
		{"20% more push cycles over 5 runs a side fails", []string{p("base5"), p("pushy5")}, exitRegression},
		{"one run a side: push cycles are not exact, cannot be tested: inconclusive", []string{p("base.json"), p("pushy.json")}, exitRegression},
		{"one run a side, inconclusive allowed", []string{p("base.json"), p("pushy.json"), "--allow-inconclusive"}, exitOK},
		{"per-metric threshold lets them pass", []string{p("base5"), p("pushy5"), "--metric-threshold", "xdslab_cp_push_cycles_total=25%"}, exitOK},
		{"gate leaves push cycles out", []string{p("base5"), p("pushy5"), "--gate", "latency"}, exitOK},
		{"3+3 run directories: inconclusive", []string{p("base-runs"), p("new-runs"), "--format", "markdown"}, exitRegression},
		{"3+3 run directories, allowed", []string{p("base-runs"), p("new-runs"), "--format", "markdown", "--allow-inconclusive"}, exitOK},
		{"junit to a file", []string{p("base.json"), p("slow.json"), "--format", "junit", "--output", p("junit.xml")}, exitRegression},
		{"one argument", []string{p("base.json")}, exitUsage},
		{"missing file", []string{p("base.json"), p("nope.json")}, exitUsage},
		{"broken file", []string{p("base.json"), p("broken.json")}, exitUsage},
		{"bad threshold", []string{p("base.json"), p("same.json"), "--threshold", "five"}, exitUsage},
		{"bad metric threshold", []string{p("base.json"), p("same.json"), "--metric-threshold", "x:p99=5%"}, exitUsage},
		{"bad format", []string{p("base.json"), p("same.json"), "--format", "pdf"}, exitUsage},
		{"html report to a file", []string{p("point-0"), p("point-2"), "--format", "html", "--output", p("compare.html")}, exitRegression},
		{"bad gate", []string{p("base.json"), p("same.json"), "--gate", "("}, exitUsage},
		// What names nothing base measured would be ignored and the regression pass.
		{"gate typo", []string{p("base.json"), p("slow.json"), "--gate", "^xdslab_push_latncy_seconds$"}, exitUsage},
		{"gate that selects", []string{p("base.json"), p("slow.json"), "--gate", "^xdslab_push_latency_seconds$"}, exitRegression},
		{"bare threshold 5 (500%)", []string{p("base.json"), p("slow.json"), "--threshold", "5"}, exitUsage},
		{"bare metric threshold 5 (500%)", []string{p("base.json"), p("slow.json"), "--metric-threshold", "xdslab_push_latency_seconds=5"}, exitUsage},
		{"metric threshold on an unknown metric", []string{p("base.json"), p("slow.json"), "--metric-threshold", "xdslab_push_latncy_seconds=500%"}, exitUsage},
		{"metric threshold on an absent tag", []string{p("base.json"), p("slow.json"), "--metric-threshold", "xdslab_push_latency_seconds{type:CDS}=500%"}, exitUsage},
		{"metric threshold on a stat never computed", []string{p("base.json"), p("slow.json"), "--metric-threshold", "xdslab_push_latency_seconds:p(95)=500%"}, exitUsage},
		{"direction of an unknown metric", []string{p("base.json"), p("slow.json"), "--worse", "nosuch=up"}, exitUsage},
		{"base that measured nothing", []string{p("empty.json"), p("slow.json")}, exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := runCLI(context.Background(), append([]string{"compare"}, tc.args...)); got != tc.code {
				t.Errorf("xdslab compare %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.code)
			}
		})
	}
	data, err := os.ReadFile(p("junit.xml"))
	if err != nil || !strings.Contains(string(data), "<failure") {
		t.Errorf("junit output lacks the failure (err %v)", err)
	}
}

func TestTuneCommandEstimateOnly(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := t.TempDir()
	code := runCLI(context.Background(), []string{"tune", "quickstart", "--param", "minQuiet=50ms,200ms,1s", "--estimate-only", "--out", out})
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"tune.csv", "tune.json", "tune.txt", "tune.png", "tune.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	kubeScenario := filepath.Join(t.TempDir(), "kube.yaml")
	if err := os.WriteFile(kubeScenario, []byte(strings.Replace(tinyScenario, "seed: 5", "seed: 5\nsink: {kind: kube}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tune", "quickstart"},
		{"tune", "quickstart", "--param", "minQuiet"},
		{"tune", "no-such-scenario", "--param", "minQuiet=1s"},
		{"tune", "quickstart", "--param", "minQuiet=1s", "--repeats", "0"},
		{"tune", "quickstart", "--param", "minQuiet=1s", "--cost", "money"},
		{"tune", "quickstart", "--param", "minQuiet=1s", "--cost", "cpu", "--cpu-split=false", "--out", filepath.Join(out, "cpu")},
		// The in-process runs cannot use the kube sink: they measured another input path.
		{"tune", kubeScenario, "--param", "minQuiet=1s", "--out", filepath.Join(out, "kube")},
	} {
		if code := runCLI(context.Background(), args); code != exitUsage {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
}

// TestTuneRemovesEarlierPoints: a tune into the --out of an earlier, larger one removes that
// tune's point-N directories first: their run-K would otherwise sit beside the new runs under
// the same numbers, and compare reads every run-K of a point directory.
func TestTuneRemovesEarlierPoints(t *testing.T) {
	// The run's keep-alive connections (metrics scrapes) would outlive it into the next
	// test's leak check.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(scenario, []byte(tinyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tune")
	keep := filepath.Join(out, "notes")
	for _, d := range []string{filepath.Join(out, "point-0", "run-3"), filepath.Join(out, "point-5", "run-1"), keep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A rerun refused as a usage error (adaptive-only parameters on a fixed-policy scenario)
	// runs nothing and removes nothing.
	if code := runCLI(ctx, []string{"tune", scenario, "--param", "costFactor=2,4", "--out", out}); code != exitUsage {
		t.Fatalf("adaptive-only sweep: exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(out, "point-5", "run-1")); err != nil {
		t.Fatalf("a refused tune removed the earlier tune's runs: %v", err)
	}
	if code := runCLI(ctx, []string{"tune", scenario, "--param", "minQuiet=50ms", "--out", out}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for path, want := range map[string]bool{
		filepath.Join(out, "point-0", "run-1", "summary.json"): true,
		filepath.Join(out, "point-0", "run-3"):                 false,
		filepath.Join(out, "point-5"):                          false,
		keep:                                                   true,
	} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", path, err == nil, want)
		}
	}
}
