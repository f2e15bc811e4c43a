package tune

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot/plotter"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// fakeTuneRun models a control plane whose p99 push latency is 20ms + minQuiet and whose
// push cycles fall as minQuiet grows; a 1s maxDelay costs 20% more pushes at the same
// latency (so those points are dominated). It records what it was asked to run.
type fakeTuneRun struct {
	calls []RunInfo
	fail  string // a point label whose runs fail
}

func (f *fakeTuneRun) run(_ context.Context, sc *scenarios.Scenario, info RunInfo) (*summary.Summary, error) {
	f.calls = append(f.calls, info)
	if info.Label == f.fail {
		return nil, errors.New("control plane crashed")
	}
	mq := sc.ControlPlane.Debounce.MinQuiet.D()
	md := sc.ControlPlane.Debounce.MaxDelay.D()
	lat := 20*time.Millisecond + mq
	h := hdr.New(1, 3_600_000_000, 3)
	for i := 0; i < 100; i++ {
		// 98 values at lat/2 and the top two at lat: p(50) = lat/2, p(99) = lat.
		v := lat / 2
		if i >= 98 {
			v = lat
		}
		if err := h.RecordValue(v.Microseconds()); err != nil {
			return nil, err
		}
	}
	trend, err := summary.NewTrend("xdslab_push_latency_seconds", summary.Time, h, 1e-6, nil)
	if err != nil {
		return nil, err
	}
	cycles := float64(int(2000 / (1 + mq.Seconds()*100)))
	if md < 5*time.Second {
		cycles *= 1.2
	}
	dur := sc.Duration.D()
	return &summary.Summary{Version: summary.Version, Results: summary.Results{Passed: true, Metrics: []summary.Metric{
		trend,
		summary.NewCounter("xdslab_cp_push_cycles_total", summary.Default, cycles, dur, nil),
		summary.NewGauge("xdslab_debounce_events_per_push", summary.Default, 400/cycles, 0, 0, nil),
		summary.NewGauge("xdslab_cpu_seconds", summary.Time, cycles/1000, 0, 0, map[string]string{"side": "controlplane"}),
		summary.NewCounter("xdslab_fleet_bytes_received_total", summary.Data, cycles*1e4, dur, nil),
	}}}, nil
}

// quickstartScenario is quickstart with one threshold: p(99) push latency under 250ms.
func quickstartScenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Builtin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	sc.Thresholds = nil
	if err := sc.Set("thresholds.xdslab_push_latency_seconds", "['p(99)<250ms']"); err != nil {
		t.Fatal(err)
	}
	return sc
}

func mustParams(t *testing.T, specs ...string) []Param {
	t.Helper()
	var ps []Param
	for _, s := range specs {
		p, err := ParseParam(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func TestTuneFakeRuns(t *testing.T) {
	fake := &fakeTuneRun{}
	res, err := Tune(context.Background(), quickstartScenario(t), Options{
		Params:  mustParams(t, "minQuiet=50ms,100ms,200ms,500ms", "maxDelay=1s,10s"),
		Repeats: 2,
		Run:     fake.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fake.calls); got != 16 {
		t.Errorf("runs = %d, want 8 points × 2 repeats", got)
	}
	if len(res.Points) != 8 {
		t.Fatalf("points = %d, want 8", len(res.Points))
	}
	// p99 = 20ms + minQuiet: 70, 120, 220, 520ms; under 250ms: 50, 100 and 200ms.
	// The cheapest of those is minQuiet=200ms with maxDelay=10s.
	rec := res.Points[res.Recommended]
	if res.Recommended < 0 || rec.Label != "minQuiet=200ms maxDelay=10s" {
		t.Fatalf("recommended %d (%s), want minQuiet=200ms maxDelay=10s; why: %s", res.Recommended, rec.Label, res.Why)
	}
	// Every maxDelay=1s point costs more at equal latency: dominated. The rest form the frontier.
	var front []string
	for _, i := range res.Frontier {
		front = append(front, res.Points[i].Label)
	}
	want := "minQuiet=500ms maxDelay=10s|minQuiet=200ms maxDelay=10s|minQuiet=100ms maxDelay=10s|minQuiet=50ms maxDelay=10s"
	if strings.Join(front, "|") != want {
		t.Errorf("frontier = %v, want %s", front, want)
	}
	if res.Knee < 0 || !res.Points[res.Knee].Pareto {
		t.Errorf("knee %d is not on the frontier", res.Knee)
	}
	for _, p := range res.Points {
		if p.Measured == nil || p.Runs != 2 {
			t.Fatalf("point %s: measured %v runs %d", p.Label, p.Measured, p.Runs)
		}
		if wantMeets := p.Settings[0].Value != "500ms"; p.MeetsThresholds != wantMeets {
			t.Errorf("point %s meets thresholds = %v, want %v (%v)", p.Label, p.MeetsThresholds, wantMeets, p.FailedThresholds)
		}
		if p.Estimate.Events == 0 || p.Estimate.PushCycles == 0 {
			t.Errorf("point %s: empty estimate %+v", p.Label, p.Estimate)
		}
	}
	// The estimate: a longer minQuiet merges more events, never fewer.
	if a, b := res.Points[1].Estimate.PushCycles, res.Points[7].Estimate.PushCycles; a < b {
		t.Errorf("estimated push cycles at minQuiet=50ms (%d) < at 500ms (%d)", a, b)
	}
	if res.Check == nil || res.Check.Point != res.Recommended || float64(res.Check.PushCyclesMeasured) != float64(rec.Measured.PushCycles) {
		t.Errorf("estimate check = %+v, want one at the recommended point", res.Check)
	}

	// The files: table, report, plots.
	dir := t.TempDir()
	if err := WriteFiles(dir, res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 9 || rows[0][1] != "minQuiet" || rows[0][2] != "maxDelay" {
		t.Errorf("csv: %d rows, header %v", len(rows), rows[0])
	}
	pngData, err := os.ReadFile(filepath.Join(dir, PNGFile))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil || img.Bounds().Dx() < 300 {
		t.Errorf("png: %v, bounds %v", err, img.Bounds())
	}
	svg, err := os.ReadFile(filepath.Join(dir, SVGFile))
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("200ms/10s")) {
		t.Errorf("svg lacks the plot or the point labels (err %v)", err)
	}
	for _, name := range []string{TextFile, CSVFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", name+".golden"), data)
	}
}

func TestTuneBadPoints(t *testing.T) {
	fake := &fakeTuneRun{fail: "minQuiet=100ms maxDelay=1s"}
	res, err := Tune(context.Background(), quickstartScenario(t), Options{
		Params: mustParams(t, "minQuiet=100ms,2s", "maxDelay=1s"),
		Run:    fake.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Points[0].Error; !strings.Contains(e, "control plane crashed") {
		t.Errorf("failed run error = %q", e)
	}
	if e := res.Points[1].Error; !strings.Contains(e, "invalid settings") || !strings.Contains(e, "maxDelay") {
		t.Errorf("invalid point error = %q, want the scenario's maxDelay < minQuiet message", e)
	}
	if res.Recommended != -1 || !strings.Contains(res.Why, "no point ran successfully") {
		t.Errorf("recommended %d why %q", res.Recommended, res.Why)
	}
	if len(fake.calls) != 1 {
		t.Errorf("runs = %d, want 1 (the invalid point is never run)", len(fake.calls))
	}
}

func TestTuneEstimateOnly(t *testing.T) {
	res, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, "minQuiet=0s,100ms,1s", "maxDelay=10s"), EstimateOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	p0, p1, p2 := res.Points[0].Estimate, res.Points[1].Estimate, res.Points[2].Estimate
	// minQuiet 0 pushes every event at once: as many cycles as events, no delay.
	if p0.PushCycles != p0.Events || float64(p0.DebounceDelayMax) != 0 {
		t.Errorf("minQuiet=0: %d cycles for %d events, max delay %v", p0.PushCycles, p0.Events, p0.DebounceDelayMax)
	}
	if !(p0.PushCycles > p1.PushCycles && p1.PushCycles > p2.PushCycles) {
		t.Errorf("push cycles not decreasing with minQuiet: %d %d %d", p0.PushCycles, p1.PushCycles, p2.PushCycles)
	}
	if d := float64(p1.DebounceDelayMean); d < 0.1 || d > 10 {
		t.Errorf("minQuiet=100ms: mean debounce delay %vs, want between minQuiet and maxDelay", d)
	}
	if res.Recommended < 0 {
		t.Errorf("estimate-only tune recommends nothing: %s", res.Why)
	}
	var buf bytes.Buffer
	if err := Plot(&buf, res, "svg"); err != nil {
		t.Fatal(err)
	}
}

func TestParseParam(t *testing.T) {
	tests := []struct {
		in, path string
		n        int
		err      string
	}{
		{"minQuiet=50ms,100ms,200ms", "controlPlane.debounce.minQuiet", 3, ""},
		{"maxDelay=1s", "controlPlane.debounce.maxDelay", 1, ""},
		{"clients[0].count=100,200", "clients[0].count", 2, ""},
		{"minQuiet", "", 0, "write NAME=V1,V2"},
		{"minQuiet=50ms,,1s", "", 0, "empty value"},
		{"minQuiet=1s,1s", "", 0, "listed twice"},
		// Values are written as in a scenario file: a flow mapping or list keeps its commas.
		{"topology.endpointsPerService={dist: exp, mean: 4},{dist: uniform, min: 1, max: 5}", "topology.endpointsPerService", 2, ""},
		{"thresholds.xdslab_push_latency_seconds=['p(99)<1s', 'avg<500ms'],[\"p(99)<2s\"]", "thresholds.xdslab_push_latency_seconds", 2, ""},
		{"description='a, b',c", "description", 2, ""},
		// An apostrophe inside a word opens no quote, as in YAML: the comma splits.
		{"description=it's a,b", "description", 2, ""},
		{"description={k: 'x, y'},z", "description", 2, ""},
		// YAML's escapes inside quotes: '' in single quotes, \" in double quotes.
		{"description='it''s a,b',c", "description", 2, ""},
		{"description=\"a\\\",b\",c", "description", 2, ""},
		{"duration=5s", "duration", 1, ""},
		// A short name misspelt is an unknown parameter with the nearest short name, not an
		// unknown top-level field.
		{"minQuite=1s", "", 0, `unknown parameter "minQuite"; did you mean "minQuiet"?`},
		{"foo=1,2", "", 0, `unknown parameter "foo"; use a short name (costFactor, endpoints, maxDelay, maxQuiet, minQuiet, policy, pushThrottle, weight) or a scenario path`},
	}
	for _, tc := range tests {
		p, err := ParseParam(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseParam(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p.Path != tc.path || len(p.Values) != tc.n {
			t.Errorf("ParseParam(%q) = %+v, %v", tc.in, p, err)
		}
	}
	// An unknown path is caught before the sweep, with the scenario's own message.
	_, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, "controlPlane.debounce.minQiet=1s"), EstimateOnly: true})
	if err == nil || !strings.Contains(err.Error(), `did you mean "minQuiet"`) {
		t.Errorf("unknown path error = %v, want a did-you-mean naming minQuiet", err)
	}
}

func TestTuneSearch(t *testing.T) {
	for _, estimateOnly := range []bool{false, true} {
		fake := &fakeTuneRun{}
		opts := Options{Params: mustParams(t, "minQuiet=50ms,100ms,200ms,500ms", "maxDelay=1s,10s"), Run: fake.run,
			Search: true, EstimateOnly: estimateOnly}
		res, err := Tune(context.Background(), quickstartScenario(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		sr := res.Search
		if sr == nil {
			t.Fatalf("estimateOnly=%v: no search: %s", estimateOnly, res.SearchNote)
		}
		if sr.Point != 8 || len(res.Points) != 9 || !strings.HasPrefix(res.Points[8].Label, "search: ") {
			t.Fatalf("search point %d of %d points", sr.Point, len(res.Points))
		}
		if !estimateOnly && len(fake.calls) != 9 {
			t.Errorf("runs = %d, want 8 grid points + the searched one", len(fake.calls))
		}
		// The search starts from the best grid point, so it is at least as good: no more
		// predicted pushes than any grid point inside the budget, and inside the budget.
		budget := *res.Budget
		if got := float64(sr.Predicted.DebounceDelayP99) + float64(sr.Overhead); got > budget {
			t.Errorf("searched point predicts p99 %vs, over the %vs budget", got, budget)
		}
		for _, p := range res.Points[:8] {
			if float64(p.Estimate.DebounceDelayP99)+float64(sr.Overhead) <= budget && p.Estimate.PushCycles < sr.Predicted.PushCycles {
				t.Errorf("grid point %s predicts %d pushes within budget, the search %d", p.Label, p.Estimate.PushCycles, sr.Predicted.PushCycles)
			}
		}
		var buf bytes.Buffer
		if err := WriteText(&buf, res); err != nil || !strings.Contains(buf.String(), "search (gonum/optimize") {
			t.Errorf("report lacks the search line (%v):\n%s", err, buf.String())
		}
	}
	// Without a p(99) budget there is nothing to search against: a note, not an error.
	sc := quickstartScenario(t)
	sc.Thresholds = nil
	res, err := Tune(context.Background(), sc, Options{Params: mustParams(t, "minQuiet=50ms,500ms"), EstimateOnly: true, Search: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Search != nil || !strings.Contains(res.SearchNote, "no p(99) push latency threshold") {
		t.Errorf("search without budget: %+v, note %q", res.Search, res.SearchNote)
	}
}

// bucketTuneRun adds what a control plane's pilot_debounce_time gives (istiod's buckets) to
// fakeTuneRun: 18 pushes, in (10ms, 100ms] at minQuiet below 100ms and in (100ms, 1s] above,
// where each really takes about 100.7 ms.
type bucketTuneRun struct{ fakeTuneRun }

func (f *bucketTuneRun) run(ctx context.Context, sc *scenarios.Scenario, info RunInfo) (*summary.Summary, error) {
	s, err := f.fakeTuneRun.run(ctx, sc, info)
	if err != nil {
		return nil, err
	}
	b := summary.Buckets{Source: "pilot_debounce_time", Count: 18, Sum: 18 * 0.1007, LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30},
		Cumulative: []uint64{0, 0, 18, 18, 18, 18, 18, 18}}
	if sc.ControlPlane.Debounce.MinQuiet.D() < 100*time.Millisecond {
		b.Sum, b.Cumulative = 18*0.06, []uint64{0, 18, 18, 18, 18, 18, 18, 18}
	}
	m, err := summary.NewBucketTrend(collect.MetricDebounceDelay, summary.Time, b, nil)
	if err != nil {
		return nil, err
	}
	s.Results.Metrics = append(s.Results.Metrics, m)
	return s, nil
}

// TestTuneBucketThresholds: a threshold on a quantile the control plane's buckets only bound
// is met only when the bound proves it. Interpolated, the (100ms, 1s] bucket's p(99) was
// 991ms, which "met" p(99)<995ms and made minQuiet=200ms the recommendation; nobody measured
// that figure, so only minQuiet=50ms (p(99) ≤ 100ms, proven) meets it now.
func TestTuneBucketThresholds(t *testing.T) {
	sc := quickstartScenario(t)
	if err := sc.Set("thresholds.xdslab_debounce_delay_seconds", "['p(99)<995ms']"); err != nil {
		t.Fatal(err)
	}
	fake := &bucketTuneRun{}
	res, err := Tune(context.Background(), sc, Options{
		Params:  mustParams(t, "minQuiet=50ms,100ms,200ms", "maxDelay=10s"),
		Repeats: 3,
		Run:     fake.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		fast := p.Settings[0].Value == "50ms"
		if p.MeetsThresholds != fast {
			t.Errorf("point %s meets thresholds = %v, want %v (%v)", p.Label, p.MeetsThresholds, fast, p.FailedThresholds)
		}
		if !fast && !strings.Contains(strings.Join(p.FailedThresholds, "; "), "median p(99) in (100ms, 1s], bucket bound: inconclusive, counted as not met") {
			t.Errorf("point %s: the failure does not say the bound was inconclusive: %v", p.Label, p.FailedThresholds)
		}
		b := p.Measured.DebounceDelayP99
		if b == nil {
			t.Fatalf("point %s: no p99 debounce delay bound", p.Label)
		}
		if want := map[bool]string{true: "in (10ms, 100ms]", false: "in (100ms, 1s]"}[fast]; summary.FormatBound(summary.Time, *b) != want {
			t.Errorf("point %s: p99 debounce delay %s, want %s", p.Label, summary.FormatBound(summary.Time, *b), want)
		}
		if d, want := float64(p.Measured.DebounceDelayMean), map[bool]float64{true: 0.06, false: 0.1007}[fast]; math.Abs(d-want) > 1e-12 {
			t.Errorf("point %s: mean debounce delay %v, want the exact mean", p.Label, d)
		}
	}
	if rec := res.Points[res.Recommended]; res.Recommended < 0 || rec.Settings[0].Value != "50ms" {
		t.Errorf("recommended %d (%s), want minQuiet=50ms: the only point whose bound proves the threshold; why: %s", res.Recommended, rec.Label, res.Why)
	}
}

func TestTuneBound(t *testing.T) {
	run := func(cum []uint64) *summary.Summary {
		m, err := summary.NewBucketTrend("d", summary.Time, summary.Buckets{Count: 10, Sum: 1, LE: []float64{0.1, 0.5, 1}, Cumulative: cum}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &summary.Summary{Results: summary.Results{Metrics: []summary.Metric{m}}}
	}
	low, mid, high := run([]uint64{10, 10, 10}), run([]uint64{0, 10, 10}), run([]uint64{0, 0, 9})
	for _, tc := range []struct {
		name string
		runs []*summary.Summary
		want string
	}{
		{"one run", []*summary.Summary{mid}, "in (100ms, 500ms]"},
		{"median of three: the middle bucket", []*summary.Summary{high, low, mid}, "in (100ms, 500ms]"},
		// The median of a first-bucket run and a +Inf-bucket run is known to lie nowhere.
		{"median of two: the far ends", []*summary.Summary{low, high}, "unbounded"},
		{"+Inf bucket in two of three", []*summary.Summary{high, high, mid}, "> 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := bound(tc.runs, "d", nil, "p(99)")
			if !ok {
				t.Fatal("not bounded")
			}
			if got := summary.FormatBound(summary.Time, b); got != tc.want {
				t.Errorf("bound %s, want %s", got, tc.want)
			}
		})
	}
	if _, ok := bound([]*summary.Summary{{}}, "d", nil, "p(99)"); ok {
		t.Error("no run bounds it: not bounded")
	}
}

// TestTuneProgressNumbersPoints: progress numbers points as the table and the point-N
// directories do (from 0) and gives an ETA once a run has finished (issue 30).
func TestTuneProgressNumbersPoints(t *testing.T) {
	fake := &fakeTuneRun{}
	var progress strings.Builder
	res, err := Tune(context.Background(), quickstartScenario(t), Options{
		Params: mustParams(t, "minQuiet=50ms,100ms,200ms"), Repeats: 2, Run: fake.run, Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("progress lines = %d, want 3 points × 2 runs:\n%s", len(lines), progress.String())
	}
	for i, pt := range res.Points {
		for k := 0; k < 2; k++ {
			l := lines[2*i+k]
			if want := fmt.Sprintf("tune: point %d (of 0..2) %s, run %d/2, ", pt.Index, pt.Label, k+1); !strings.HasPrefix(l, want) {
				t.Errorf("line %q, want it to start %q", l, want)
			}
			if first := i == 0 && k == 0; first != strings.HasSuffix(l, "ETA after the first run") || !first && !strings.Contains(l, ", ETA ") {
				t.Errorf("line %q: the first run has no ETA yet, every later one has", l)
			}
		}
	}
}

// TestTuneMergeLabels: labels of points drawn on top of each other become one label, so they
// do not overprint; distant points keep theirs.
func TestTuneMergeLabels(t *testing.T) {
	xys := plotter.XYs{{X: 100, Y: 50}, {X: 101, Y: 51}, {X: 10, Y: 1000}, {X: 100, Y: 1000}}
	names := []string{"0: 50ms", "1: 60ms", "2: 1s", "3: 2s"}
	got, gotNames := mergeLabels(xys, names)
	if len(got) != 3 || gotNames[0] != "0: 50ms\n1: 60ms" || gotNames[1] != "2: 1s" || gotNames[2] != "3: 2s" {
		t.Errorf("merged = %v %q", got, gotNames)
	}
}

// TestTuneInterrupted: a tune cancelled in its fourth run returns the runs that finished,
// marked interrupted, with the context's error: sequentially, point 0 complete, point 1 with
// one of its two runs, point 2 never run; interleaved, every point's first run (point 0's
// second was the one interrupted). The text table says so first.
func TestTuneInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		interleave bool
		runs       []int // finished runs per point
	}{
		{"sequential", false, []int{2, 1, 0}},
		{"interleaved", true, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fake := &fakeTuneRun{}
			run := func(ctx context.Context, sc *scenarios.Scenario, info RunInfo) (*summary.Summary, error) {
				if len(fake.calls) == 3 {
					cancel() // Ctrl-C during the fourth run: it ends with the context's error
					fake.calls = append(fake.calls, info)
					return nil, ctx.Err()
				}
				return fake.run(ctx, sc, info)
			}
			res, err := Tune(ctx, quickstartScenario(t), Options{
				Params: mustParams(t, "minQuiet=50ms,100ms,200ms"), Repeats: 2, Run: run, Interleave: tc.interleave,
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if res == nil || res.Interrupted == "" {
				t.Fatalf("result %+v: want the finished runs, marked interrupted", res)
			}
			if len(res.Points) != 3 {
				t.Fatalf("%d points, want the whole grid (3)", len(res.Points))
			}
			for i, pt := range res.Points {
				if pt.Runs != tc.runs[i] {
					t.Errorf("point %d: %d runs, want %d", i, pt.Runs, tc.runs[i])
				}
				if (tc.runs[i] == 0) != (pt.Error == notRun) || (tc.runs[i] > 0) != (pt.Measured != nil) {
					t.Errorf("point %d: error %q measured %v; want figures exactly when a run finished", i, pt.Error, pt.Measured != nil)
				}
			}
			if res.Recommended < 0 || res.Points[res.Recommended].Runs == 0 {
				t.Errorf("recommended %d: want one of the measured points", res.Recommended)
			}
			var text strings.Builder
			if err := WriteText(&text, res); err != nil {
				t.Fatal(err)
			}
			if lines := strings.SplitN(text.String(), "\n", 3); !strings.HasPrefix(lines[1], "INTERRUPTED: "+res.Interrupted) {
				t.Errorf("the table's second line is %q, want the interruption", lines[1])
			}
		})
	}
}

// TestTuneBadParams: an unknown parameter or a value it cannot take fails the sweep before
// anything runs, naming the parameter and the value.
func TestTuneBadParams(t *testing.T) {
	for _, tc := range []struct{ param, want string }{
		{"topology.foo=1,2", `--param topology.foo=1: --set: topology.foo: unknown field "foo"`},
		{"minQuiet=50ms,abc", `--param minQuiet=abc:`},
		{"policy=fixed,bogus", `unknown debounce policy "bogus"`},
		// The fixed policy ignores the adaptive parameters: the grid would be one point
		// with an empty label.
		{"costFactor=2,4", "--param costFactor applies only to the adaptive debounce policy"},
		{"maxQuiet=200ms,1s", "add --param policy=adaptive"},
	} {
		fake := &fakeTuneRun{}
		_, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, tc.param), Run: fake.run})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.param, err, tc.want)
		}
		if len(fake.calls) != 0 {
			t.Errorf("%s: %d runs, want none", tc.param, len(fake.calls))
		}
	}
}

// TestWriteFilesNothingToPlot: a sweep with no point to plot (every run failed) writes its
// table and report, no plot (an earlier sweep's is removed), and says why.
func TestWriteFilesNothingToPlot(t *testing.T) {
	fake := &fakeTuneRun{fail: "minQuiet=100ms"}
	res, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, "minQuiet=100ms"), Run: fake.run})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PNGFile), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, res); !errors.Is(err, ErrNothingToPlot) {
		t.Fatalf("WriteFiles: %v, want ErrNothingToPlot", err)
	}
	for name, want := range map[string]bool{CSVFile: true, JSONFile: true, TextFile: true, PNGFile: false, SVGFile: false} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}

// TestPlotFlatLatency: a sweep whose points all sit at one latency under 1 ms (one point, or
// an estimate predicting no delay) plots on the log axis instead of panicking.
func TestPlotFlatLatency(t *testing.T) {
	for _, params := range [][]string{
		{"minQuiet=0s"},
		{"minQuiet=0s", "maxDelay=1s,10s"},
		{"minQuiet=100ms"},
	} {
		res, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, params...), EstimateOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"svg", "png"} {
			var buf bytes.Buffer
			if err := Plot(&buf, res, format); err != nil || buf.Len() == 0 {
				t.Errorf("%v %s: %d bytes, %v", params, format, buf.Len(), err)
			}
		}
	}
}

// TestTuneSearchOnGrid: a search that lands on a grid point (the search is clamped to the
// grid's range, so a corner is common) names that point instead of running the same settings
// again as one more point.
func TestTuneSearchOnGrid(t *testing.T) {
	for _, tc := range []struct {
		params []string
		point  int
	}{
		{[]string{"minQuiet=10ms,20ms", "maxDelay=1s,10s"}, 2},
		{[]string{"minQuiet=10ms,20ms"}, 1},
	} {
		grid := tc.point + 1
		if len(tc.params) == 2 {
			grid = 4
		}
		for _, estimateOnly := range []bool{false, true} {
			fake := &fakeTuneRun{}
			res, err := Tune(context.Background(), quickstartScenario(t), Options{Params: mustParams(t, tc.params...), Run: fake.run,
				Search: true, EstimateOnly: estimateOnly})
			if err != nil {
				t.Fatal(err)
			}
			sr := res.Search
			if sr == nil {
				t.Fatalf("%v: no search: %s", tc.params, res.SearchNote)
			}
			if len(res.Points) != grid || sr.Point != tc.point || !sr.OnGrid {
				t.Errorf("%v estimateOnly=%v: %d points, search point %d (on grid %v), want grid point %d of %d", tc.params, estimateOnly, len(res.Points), sr.Point, sr.OnGrid, tc.point, grid)
			}
			if want := map[bool]int{false: grid, true: 0}[estimateOnly]; len(fake.calls) != want {
				t.Errorf("%v estimateOnly=%v: %d runs, want %d", tc.params, estimateOnly, len(fake.calls), want)
			}
			var buf bytes.Buffer
			if err := WriteText(&buf, res); err != nil || !strings.Contains(buf.String(), "a grid point: not run again") {
				t.Errorf("report does not say the search found a grid point (%v):\n%s", err, buf.String())
			}
		}
	}
}

// FuzzParseParam: any --param value parses or gives an error naming it; a parsed one has a
// name and distinct, non-empty values, which joined with commas parse back to the same values.
func FuzzParseParam(f *testing.F) {
	for _, s := range []string{"minQuiet=50ms,100ms,200ms", "minQuite=1s", "foo=1,2", "=1s", "minQuiet", "minQuiet=1s,,2s", "minQuiet=1s,1s",
		"topology.endpointsPerService={dist: exp, mean: 4},8", "thresholds.xdslab_push_latency_seconds=['p(99)<1s', 'avg<1s']",
		"description='a, b',c", "clients[0].count=1,2", "x.y={a, [b, c]},'d,e\",f", "churn[0].delta.max=5,6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseParam(s)
		if err != nil {
			if !strings.Contains(err.Error(), "--param") {
				t.Fatalf("ParseParam(%q): %v does not name the flag", s, err)
			}
			return
		}
		if p.Name == "" || p.Path == "" || len(p.Values) == 0 {
			t.Fatalf("ParseParam(%q) = %+v", s, p)
		}
		for i, v := range p.Values {
			if v == "" || slices.Contains(p.Values[:i], v) {
				t.Fatalf("ParseParam(%q) = %+v: an empty or repeated value", s, p)
			}
		}
		back, err := ParseParam(p.Name + "=" + strings.Join(p.Values, ","))
		if err != nil || !slices.Equal(back.Values, p.Values) {
			t.Fatalf("ParseParam(%q) = %q, which joined parses to %q, %v", s, p.Values, back.Values, err)
		}
	})
}
