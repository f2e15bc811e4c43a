package tune

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/bench/compare"
	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// policyTuneRun models a control plane where the adaptive policy at the same minQuiet costs
// fewer push cycles and a little more latency than the fixed one (its window grows under
// load), with a small spread between repeats so the U test has samples to rank.
type policyTuneRun struct {
	calls []RunInfo
	// adaptiveLat and adaptiveCycles scale the adaptive policy's latency and push cycles.
	adaptiveLat, adaptiveCycles float64
}

func (f *policyTuneRun) run(_ context.Context, sc *scenarios.Scenario, info RunInfo) (*summary.Summary, error) {
	f.calls = append(f.calls, info)
	d := sc.ControlPlane.Debounce
	lat := float64(20*time.Millisecond+d.MinQuiet.D()) * (1 + 0.01*float64(info.Repeat))
	cycles := (2000/(1+d.MinQuiet.D().Seconds()*100))*(1+0.01*float64(info.Repeat)) + 0.5
	if d.Policy == "adaptive" {
		lat *= f.adaptiveLat
		cycles *= f.adaptiveCycles * (1 + 0.1*d.Adaptive.CostFactor) / 1.4
	}
	h := hdr.New(1, 3_600_000_000, 3)
	for i := 0; i < 100; i++ {
		// 98 values at lat/2 and the top two at lat: p(50) = lat/2, p(99) = lat.
		v := time.Duration(lat / 2)
		if i >= 98 {
			v = time.Duration(lat)
		}
		if err := h.RecordValue(v.Microseconds()); err != nil {
			return nil, err
		}
	}
	trend, err := summary.NewTrend("xdslab_push_latency_seconds", summary.Time, h, 1e-6, nil)
	if err != nil {
		return nil, err
	}
	cycles = math.Round(cycles)
	dur := sc.Duration.D()
	return &summary.Summary{Version: summary.Version, Results: summary.Results{Passed: true, Metrics: []summary.Metric{
		trend,
		summary.NewCounter("xdslab_cp_push_cycles_total", summary.Default, cycles, dur, nil),
		summary.NewGauge("xdslab_debounce_events_per_push", summary.Default, 400/cycles, 0, 0, nil),
		summary.NewGauge("xdslab_cpu_seconds", summary.Time, cycles/1000, 0, 0, map[string]string{"side": "controlplane"}),
		summary.NewCounter("xdslab_fleet_bytes_received_total", summary.Data, cycles*1e4, dur, nil),
	}}}, nil
}

// TestTunePolicies: policies are swept like any parameter; the fixed points that differ only
// in adaptive parameters run once; the runs interleave; and the report says, with the U
// test, how the best adaptive point fares against the best fixed one. The text report and
// the plot are golden.
func TestTunePolicies(t *testing.T) {
	fake := &policyTuneRun{adaptiveLat: 0.9, adaptiveCycles: 0.8}
	res, err := Tune(context.Background(), quickstartScenario(t), Options{
		Params:     mustParams(t, "policy=fixed,adaptive", "minQuiet=50ms,200ms", "costFactor=2,4"),
		Repeats:    4,
		Interleave: true,
		Run:        fake.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 6 || len(res.Duplicates) != 2 {
		t.Fatalf("%d points, duplicates %q; want 6 points and the 2 fixed points differing only in costFactor left out", len(res.Points), res.Duplicates)
	}
	if len(fake.calls) != 24 {
		t.Fatalf("runs = %d, want 6 points × 4", len(fake.calls))
	}
	// Interleaved: repeat 1 of every point, then repeat 2 …
	for n, c := range fake.calls {
		if c.Repeat != n/6+1 || c.Point != n%6 {
			t.Fatalf("run %d was point %d repeat %d, want point %d repeat %d", n, c.Point, c.Repeat, n%6, n/6+1)
		}
	}
	for _, p := range res.Points {
		if want := p.Settings[0].Value; p.Policy != want || len(p.perRun) != 4 {
			t.Errorf("point %s: policy %q, %d runs' figures", p.Label, p.Policy, len(p.perRun))
		}
	}
	c := res.Policies
	if c == nil {
		t.Fatal("no policy comparison")
	}
	// p(99) < 250ms: minQuiet 200ms (220ms) meets it for both; the cheapest fixed point is
	// minQuiet=200ms, the cheapest adaptive one minQuiet=200ms with costFactor 2.
	if got := res.Points[c.Fixed].Label; got != "policy=fixed minQuiet=200ms" {
		t.Errorf("best fixed = %s", got)
	}
	if got := res.Points[c.Adaptive].Label; got != "policy=adaptive minQuiet=200ms costFactor=2" {
		t.Errorf("best adaptive = %s", got)
	}
	if c.Verdict != PolicyBetter || c.MinRuns != 4 {
		t.Errorf("verdict %s (min runs %d): %s", c.Verdict, c.MinRuns, c.Why)
	}
	for _, f := range c.Figures {
		if f.Verdict != PolicyBetter || !(float64(f.P) < 0.05) || f.NFixed != 4 || f.NAdapt != 4 {
			t.Errorf("figure %+v, want better with p < 0.05 over 4+4 runs", f)
		}
	}

	dir := t.TempDir()
	if err := WriteFiles(dir, res); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, TextFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "policies.txt.golden"), text)
	m, err := buildPlot(res)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "policies.plot.golden"), []byte(m.String()))
	svg, err := os.ReadFile(filepath.Join(dir, SVGFile))
	if err != nil || !strings.Contains(string(svg), "frontier, adaptive") || !strings.Contains(string(svg), "dominated, fixed") {
		t.Errorf("svg lacks the per-policy legend (err %v)", err)
	}
}

// TestTunePoliciesFewRuns: with fewer runs than the U test needs the comparison says
// inconclusive however far apart the medians are; the lab fails closed.
func TestTunePoliciesFewRuns(t *testing.T) {
	fake := &policyTuneRun{adaptiveLat: 0.5, adaptiveCycles: 0.5}
	res, err := Tune(context.Background(), quickstartScenario(t), Options{
		Params: mustParams(t, "policy=fixed,adaptive"), Repeats: 3, Run: fake.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Policies
	if c == nil || c.Verdict != PolicyInconclusive || !strings.Contains(c.Why, "fewer than 4 runs a side") {
		t.Fatalf("comparison %+v, want inconclusive", c)
	}
	var buf strings.Builder
	if err := WriteText(&buf, res); err != nil || !strings.Contains(buf.String(), "verdict: INCONCLUSIVE") {
		t.Errorf("report (%v):\n%s", err, buf.String())
	}
	// One policy only: nothing to compare.
	res, err = Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, "minQuiet=50ms,100ms"), Repeats: 4, Run: (&policyTuneRun{}).run})
	if err != nil || res.Policies != nil {
		t.Errorf("single-policy tune: comparison %+v, err %v", res.Policies, err)
	}
}

// TestComparePoliciesVerdicts: the overall verdict from the figures' U tests.
func TestComparePoliciesVerdicts(t *testing.T) {
	runs := func(lat50, lat99, cycles, cpu []float64) []PointFigures {
		out := make([]PointFigures, len(lat50))
		for i := range out {
			out[i] = PointFigures{PushLatencyP50: compare.Float(lat50[i]), PushLatencyP99: compare.Float(lat99[i]), PushCycles: compare.Float(cycles[i]), CPUSeconds: compare.Float(cpu[i])}
		}
		return out
	}
	lo, hi := []float64{1, 1.1, 1.2, 1.3, 1.4}, []float64{2, 2.1, 2.2, 2.3, 2.4}
	mixed := []float64{1, 2.2, 1.2, 2.1, 1.4}
	tests := []struct {
		name     string
		fixed    []PointFigures
		adaptive []PointFigures
		want     PolicyComparisonResult
		figures  []PolicyComparisonResult
	}{
		{"better on all", runs(hi, hi, hi, hi), runs(lo, lo, lo, lo), PolicyBetter, nil},
		{"worse latency, same cost", runs(lo, lo, mixed, mixed), runs(hi, hi, mixed, mixed), PolicyWorse,
			[]PolicyComparisonResult{PolicyWorse, PolicyWorse, PolicyNoDifference, PolicyNoDifference}},
		{"trade-off", runs(lo, lo, hi, hi), runs(hi, hi, lo, lo), PolicyMixed, nil},
		{"no difference", runs(mixed, mixed, mixed, mixed), runs(mixed, mixed, mixed, mixed), PolicyNoDifference, nil},
		{"missing CPU", runs(hi, hi, hi, []float64{nan, nan, nan, nan, nan}), runs(lo, lo, lo, lo), PolicyInconclusive, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{Cost: CostPushCycles, Points: []Point{
				{Index: 0, Label: "f", Policy: "fixed", Runs: 5, perRun: tt.fixed},
				{Index: 1, Label: "a", Policy: "adaptive", Runs: 5, perRun: tt.adaptive},
			}}
			for i := range r.Points {
				f := r.Points[i].perRun[2]
				r.Points[i].Measured = &f
			}
			c := comparePolicies(r, false, 0)
			if c == nil || c.Verdict != tt.want {
				t.Fatalf("comparison %+v, want %s", c, tt.want)
			}
			for i, w := range tt.figures {
				if c.Figures[i].Verdict != w {
					t.Errorf("figure %s: %s (p %v), want %s", c.Figures[i].Figure, c.Figures[i].Verdict, c.Figures[i].P, w)
				}
			}
		})
	}
}

var nan = math.NaN()
