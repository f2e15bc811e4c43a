package compare

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/internal/summary"
)

// debounceRun is a run whose only metric is the debounce delay read from istiod's buckets:
// n pushes with the given cumulative counts over .01, .1, 1, 3, 5, 10, 20, 30 s.
func debounceRun(t *testing.T, cum []uint64, n uint64, mean float64) *summary.Summary {
	t.Helper()
	m, err := summary.NewBucketTrend(collect.MetricDebounceDelay, summary.Time, summary.Buckets{Source: "pilot_debounce_time", Count: n,
		Sum: mean * float64(n), LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: cum}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{m}}}
}

// oldDebounceRun is a summary written before bounds: the interpolated points of 18 pushes in
// (0.1, 1].
func oldDebounceRun() *summary.Summary {
	return &summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{{
		Name: collect.MetricDebounceDelay, Type: summary.Trend, Contains: summary.Time,
		Values: map[string]float64{"avg": 0.1007, "min": 0.1, "med": 0.55, "p(50)": 0.55, "p(90)": 0.91, "p(99)": 0.991, "p(99.9)": 0.9991, "max": 1},
	}}}}
}

// TestCompareBounds: compare never subtracts bucket bounds as if they were points: the
// sides differ only when their buckets do not overlap, and only by as much as that proves.
func TestCompareBounds(t *testing.T) {
	in := []uint64{0, 0, 18, 18, 18, 18, 18, 18}    // all in (0.1, 1]
	fast := []uint64{0, 18, 18, 18, 18, 18, 18, 18} // all in (0.01, 0.1]
	slow := []uint64{0, 0, 0, 0, 18, 18, 18, 18}    // all in (3, 5]
	spread := []uint64{0, 0, 17, 18, 18, 18, 18, 18}
	for _, tc := range []struct {
		name      string
		base, new []*summary.Summary
		stat      string
		sig, reg  bool
		imp       bool
		delta     string
		base0     string
		new0      string
	}{
		{"same bucket: no change, whatever the interpolation said", []*summary.Summary{debounceRun(t, in, 18, 0.1007)},
			[]*summary.Summary{debounceRun(t, in, 18, 0.9)}, "p(99)", false, false, false, "~", "(100ms, 1s]", "(100ms, 1s]"},
		{"overlapping buckets over runs: no change", []*summary.Summary{debounceRun(t, in, 18, 0.5), debounceRun(t, spread, 18, 0.5)},
			[]*summary.Summary{debounceRun(t, spread, 18, 0.5)}, "p(99)", false, false, false, "~", "(100ms, 3s]", "(1s, 3s]"},
		{"adjacent buckets: worse, by an unknown amount below the 5% threshold", []*summary.Summary{debounceRun(t, fast, 18, 0.05)},
			[]*summary.Summary{debounceRun(t, in, 18, 0.1007)}, "p(50)", true, false, false, "> +0.00%", "(10ms, 100ms]", "(100ms, 1s]"},
		{"18 pushes cannot place a p(99): buckets differ, intervals overlap", []*summary.Summary{debounceRun(t, fast, 18, 0.05)},
			[]*summary.Summary{debounceRun(t, in, 18, 0.1007)}, "p(99)", false, false, false, "~", "(10ms, 100ms]", "(100ms, 1s]"},
		{"1000 pushes can: p(99) at least 3s / 1s", []*summary.Summary{debounceRun(t, []uint64{0, 0, 1000, 1000, 1000, 1000, 1000, 1000}, 1000, 0.5)},
			[]*summary.Summary{debounceRun(t, []uint64{0, 0, 900, 900, 1000, 1000, 1000, 1000}, 1000, 1)}, "p(99)", true, true, false, "> +200.00%", "(100ms, 1s]", "(3s, 5s]"},
		{"disjoint buckets: at least 3s / 1s = +200%", []*summary.Summary{debounceRun(t, in, 18, 0.1007)},
			[]*summary.Summary{debounceRun(t, slow, 18, 4)}, "p(50)", true, true, false, "> +200.00%", "(100ms, 1s]", "(3s, 5s]"},
		{"improvement: at most 1s / 3s", []*summary.Summary{debounceRun(t, slow, 18, 4)},
			[]*summary.Summary{debounceRun(t, in, 18, 0.1007)}, "p(50)", true, false, true, "< -66.67%", "(3s, 5s]", "(100ms, 1s]"},
		{"an old summary's interpolated point inside the new bucket: no change", []*summary.Summary{oldDebounceRun()},
			[]*summary.Summary{debounceRun(t, in, 18, 0.1007)}, "p(99)", false, false, false, "~", "991ms", "(100ms, 1s]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Compare(NewSide("base", tc.base...), NewSide("new", tc.new...), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			row := findRow(t, rep, collect.MetricDebounceDelay, tc.stat)
			var buf bytes.Buffer
			if err := WriteReport(&buf, rep, "text"); err != nil {
				t.Fatal(err)
			}
			if row.Method != MethodBounds || row.Significant != tc.sig || row.Regression != tc.reg || row.Improvement != tc.imp {
				t.Errorf("row %s: method %s significant %v regression %v improvement %v; want bounds %v %v %v\n%s",
					row.Name(), row.Method, row.Significant, row.Regression, row.Improvement, tc.sig, tc.reg, tc.imp, buf.String())
			}
			if got := row.FormatDelta(); got != tc.delta {
				t.Errorf("delta %s, want %s", got, tc.delta)
			}
			if b, n := estimateText(row.Base, row.Contains, row.Method), estimateText(row.New, row.Contains, row.Method); b != tc.base0 || n != tc.new0 {
				t.Errorf("estimates %s → %s, want %s → %s", b, n, tc.base0, tc.new0)
			}
			if !math.IsNaN(float64(row.Base.Center)) && row.Base.Bounded {
				t.Errorf("a bounded estimate has no centre, got %v", row.Base.Center)
			}
			if tc.stat == "p(99)" && !tc.sig && tc.base0 == "(10ms, 100ms]" && !strings.Contains(buf.String(), "CIs overlap") {
				t.Errorf("the text does not say the intervals overlap:\n%s", buf.String())
			}
			if !strings.Contains(buf.String(), "(bucket bounds, n=") || !strings.Contains(buf.String(), "known only as the bucket that holds them") {
				t.Errorf("the text does not say the row rests on bucket bounds:\n%s", buf.String())
			}
			// The exact mean stays a point row.
			if avg := findRow(t, rep, collect.MetricDebounceDelay, "avg"); avg.Method == MethodBounds {
				t.Error("avg is exact: not a bounds row")
			}
			var js bytes.Buffer
			if err := WriteReport(&js, rep, "json"); err != nil {
				t.Fatalf("json: %v", err)
			}
		})
	}
}

// TestCompareBoundsNoData: a bucket trend that observed nothing on a side is not a row: only
// in new when base observed nothing, MISSING when new did (nothing measured is not zero).
func TestCompareBoundsNoData(t *testing.T) {
	slow := []uint64{0, 0, 0, 0, 18, 18, 18, 18}
	with := func(draw uint64, debounce *summary.Summary) *summary.Summary {
		s := synthSummary(t, baseSynth(draw))
		s.Results.Metrics = append(s.Results.Metrics, debounce.Results.Metrics...)
		return s
	}
	none := func() *summary.Summary { return debounceRun(t, make([]uint64, 8), 0, 0) }
	opts := DefaultOptions()
	opts.AllowInconclusive = true
	rep, err := Compare(NewSide("base", with(1, none())), NewSide("new", with(2, debounceRun(t, slow, 18, 4))), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		if row.Metric == collect.MetricDebounceDelay {
			t.Errorf("a row for what base did not observe: %s", row.Name())
		}
	}
	if !slices.Contains(rep.OnlyNew, collect.MetricDebounceDelay) {
		t.Errorf("only in new %v, want the debounce delay", rep.OnlyNew)
	}
	rep, err = Compare(NewSide("base", with(1, debounceRun(t, slow, 18, 4))), NewSide("new", with(2, none())), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Missing, collect.MetricDebounceDelay) || !rep.Failed() {
		t.Errorf("missing %v failed %v, want the debounce delay missing from new", rep.Missing, rep.Failed())
	}
	// A base whose only metric observed nothing measured nothing.
	if _, err := Compare(NewSide("base", none()), NewSide("new", debounceRun(t, slow, 18, 4)), opts); err == nil || !strings.Contains(err.Error(), "observed nothing") {
		t.Errorf("a base that observed nothing: err %v", err)
	}
}
