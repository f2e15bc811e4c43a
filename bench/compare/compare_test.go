package compare

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/internal/summary"
)

// findRow returns the row of metric (untagged) and stat.
func findRow(t *testing.T, r *Report, metric, stat string) Row {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric == metric && row.Stat == stat && len(row.Tags) == 0 {
			return row
		}
	}
	t.Fatalf("no row %s %s in report", metric, stat)
	return Row{}
}

func runsOf(t *testing.T, n int, mk func(i int) synth) []*summary.Summary {
	var out []*summary.Summary
	for i := 0; i < n; i++ {
		out = append(out, synthSummary(t, mk(i)))
	}
	return out
}

func TestCompareVerdicts(t *testing.T) {
	shifted := func(draw uint64) synth { s := baseSynth(draw); s.medianMs *= 1.5; return s }
	tests := []struct {
		name       string
		base, new  []*summary.Summary
		opts       Options
		regressed  bool
		checkRow   [2]string // metric, stat
		wantMethod string
		wantSig    bool
		wantReg    bool
		wantImp    bool
	}{
		{
			name:     "same config, one run each: no regression",
			base:     runsOf(t, 1, func(int) synth { return baseSynth(1) }),
			new:      runsOf(t, 1, func(int) synth { return baseSynth(2) }),
			checkRow: [2]string{"xdslab_push_latency_seconds", "p(99)"}, wantMethod: MethodHistogram,
		},
		{
			name:      "planted latency regression, one run each",
			base:      runsOf(t, 1, func(int) synth { return baseSynth(1) }),
			new:       runsOf(t, 1, func(int) synth { return shifted(2) }),
			regressed: true,
			checkRow:  [2]string{"xdslab_push_latency_seconds", "p(50)"}, wantMethod: MethodHistogram,
			wantSig: true, wantReg: true,
		},
		{
			name:     "same config, repeated runs: no regression",
			base:     runsOf(t, 5, func(i int) synth { return baseSynth(uint64(10 + i)) }),
			new:      runsOf(t, 5, func(i int) synth { return baseSynth(uint64(20 + i)) }),
			checkRow: [2]string{"xdslab_push_latency_seconds", "p(99)"}, wantMethod: MethodRuns,
		},
		{
			name:      "planted latency regression, repeated runs",
			base:      runsOf(t, 5, func(i int) synth { return baseSynth(uint64(10 + i)) }),
			new:       runsOf(t, 5, func(i int) synth { return shifted(uint64(20 + i)) }),
			regressed: true,
			checkRow:  [2]string{"xdslab_push_latency_seconds", "p(90)"}, wantMethod: MethodRuns,
			wantSig: true, wantReg: true,
		},
		{
			name:     "latency improvement is not a regression",
			base:     runsOf(t, 1, func(int) synth { return shifted(1) }),
			new:      runsOf(t, 1, func(int) synth { return baseSynth(2) }),
			checkRow: [2]string{"xdslab_push_latency_seconds", "p(50)"}, wantMethod: MethodHistogram,
			wantSig: true, wantImp: true,
		},
		{
			name:      "more push cycles over repeated runs: a regression",
			base:      runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(10 + i)); s.pushCycles = 118 + float64(i); return s }),
			new:       runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(20 + i)); s.pushCycles = 148 + float64(i); return s }),
			regressed: true,
			checkRow:  [2]string{"xdslab_cp_push_cycles_total", "count"}, wantMethod: MethodRuns,
			wantSig: true, wantReg: true,
		},
		{
			name:     "a small push-cycle change within the threshold",
			base:     runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(10 + i)); s.pushCycles = 118 + float64(i); return s }),
			new:      runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(20 + i)); s.pushCycles = 123 + float64(i); return s }),
			checkRow: [2]string{"xdslab_cp_push_cycles_total", "count"}, wantMethod: MethodRuns,
			wantSig: true,
		},
		{
			name:     "per-metric threshold lets a 25% push-cycle rise pass",
			base:     runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(10 + i)); s.pushCycles = 118 + float64(i); return s }),
			new:      runsOf(t, 5, func(i int) synth { s := baseSynth(uint64(20 + i)); s.pushCycles = 148 + float64(i); return s }),
			opts:     Options{MetricThresholds: []MetricThreshold{{Name: "xdslab_cp_push_cycles_total", Fraction: 0.30}}},
			checkRow: [2]string{"xdslab_cp_push_cycles_total", "count"}, wantMethod: MethodRuns,
			wantSig: true,
		},
		{
			// Identical runs differ in push cycles (the wall clock against the debounce
			// timers): one run a side shows them, never gates on them.
			name:     "same seed, one run a side: push cycles are not exact",
			base:     runsOf(t, 1, func(int) synth { return baseSynth(1) }),
			new:      runsOf(t, 1, func(int) synth { s := baseSynth(1); s.pushCycles = 150; return s }),
			checkRow: [2]string{"xdslab_cp_push_cycles_total", "count"}, wantMethod: MethodNone,
		},
		{
			name:     "different seeds: push cycles cannot be tested from one run",
			base:     runsOf(t, 1, func(int) synth { return baseSynth(1) }),
			new:      runsOf(t, 1, func(int) synth { s := baseSynth(1); s.seed = 2; s.pushCycles = 150; return s }),
			checkRow: [2]string{"xdslab_cp_push_cycles_total", "count"}, wantMethod: MethodNone,
		},
		{
			name:     "no histograms and one run: shown, not tested",
			base:     runsOf(t, 1, func(int) synth { s := baseSynth(1); s.noHist = true; return s }),
			new:      runsOf(t, 1, func(int) synth { s := shifted(2); s.noHist = true; return s }),
			checkRow: [2]string{"xdslab_push_latency_seconds", "p(99)"}, wantMethod: MethodNone,
		},
		{
			name:      "direction override turns latency into lower-is-worse",
			base:      runsOf(t, 1, func(int) synth { return shifted(1) }),
			new:       runsOf(t, 1, func(int) synth { return baseSynth(2) }),
			opts:      Options{Directions: []DirectionOverride{{Name: "xdslab_push_latency_seconds", Dir: LowerIsWorse}}},
			regressed: true,
			checkRow:  [2]string{"xdslab_push_latency_seconds", "p(50)"}, wantMethod: MethodHistogram,
			wantSig: true, wantReg: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.MetricThresholds, opts.Directions = tc.opts.MetricThresholds, tc.opts.Directions
			rep, err := Compare(NewSide("base", tc.base...), NewSide("new", tc.new...), opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Regressed() != tc.regressed {
				var buf bytes.Buffer
				_ = WriteReport(&buf, rep, "text")
				t.Errorf("Regressed() = %v, want %v\n%s", rep.Regressed(), tc.regressed, buf.String())
			}
			row := findRow(t, rep, tc.checkRow[0], tc.checkRow[1])
			if row.Method != tc.wantMethod || row.Significant != tc.wantSig || row.Regression != tc.wantReg || row.Improvement != tc.wantImp {
				t.Errorf("row %s: method %s significant %v regression %v improvement %v; want %s %v %v %v (p=%g delta=%g)",
					row.Name(), row.Method, row.Significant, row.Regression, row.Improvement,
					tc.wantMethod, tc.wantSig, tc.wantReg, tc.wantImp, float64(row.P), float64(row.Delta))
			}
		})
	}
}

func TestCompareLowerIsWorse(t *testing.T) {
	tests := []struct {
		from, to float64
		reg, imp bool
	}{
		{0.9, 0.7, true, false},
		{0.9, 0.95, false, true},
		{0.9, 0.89, false, false}, // -1.1%: within 5%
	}
	for _, tc := range tests {
		b := baseSynth(1)
		b.hitRatio = tc.from
		n := baseSynth(1)
		n.hitRatio = tc.to
		rep, err := Compare(NewSide("b", synthSummary(t, b)), NewSide("n", synthSummary(t, n)), DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		var row Row
		for _, r := range rep.Rows {
			if r.Metric == "xdslab_cache_hit_ratio" {
				row = r
			}
		}
		if row.Direction != LowerIsWorse || row.Method != MethodExact && row.Method != MethodNone {
			t.Fatalf("hit ratio row: direction %v method %s", row.Direction, row.Method)
		}
		// A gauge is not deterministic: with one run per side it is shown, never tested.
		if row.Regression || row.Improvement {
			t.Errorf("%v→%v: one-run gauge must not gate, got regression=%v improvement=%v", tc.from, tc.to, row.Regression, row.Improvement)
		}
		// With repeated runs it is tested.
		var bs, ns []*summary.Summary
		for i := 0; i < 5; i++ {
			bb, nn := b, n
			bb.hitRatio += float64(i) * 0.001
			nn.hitRatio += float64(i) * 0.001
			bs, ns = append(bs, synthSummary(t, bb)), append(ns, synthSummary(t, nn))
		}
		rep, err = Compare(NewSide("b", bs...), NewSide("n", ns...), DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rows {
			if r.Metric == "xdslab_cache_hit_ratio" {
				row = r
			}
		}
		if row.Regression != tc.reg || row.Improvement != tc.imp {
			t.Errorf("%v→%v over 5 runs: regression=%v improvement=%v, want %v %v (delta %g p %g)",
				tc.from, tc.to, row.Regression, row.Improvement, tc.reg, tc.imp, float64(row.Delta), float64(row.P))
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		typ      summary.MetricType
		contains summary.ValueType
		dir      Direction
		exact    bool
	}{
		{"xdslab_push_latency_seconds", summary.Trend, summary.Time, HigherIsWorse, false},
		{"xdslab_convergence_seconds", summary.Trend, summary.Time, HigherIsWorse, false},
		{"xdslab_cache_hit_ratio", summary.Gauge, summary.Default, LowerIsWorse, false},
		{"xdslab_cp_push_cycles_total", summary.Counter, summary.Default, HigherIsWorse, false},
		{"xdslab_debounce_events_per_push", summary.Gauge, summary.Default, LowerIsWorse, false},
		{"xdslab_fleet_nacks_total", summary.Counter, summary.Default, HigherIsWorse, false},
		{"xdslab_fleet_bytes_received_total", summary.Counter, summary.Data, HigherIsWorse, false},
		{"xdslab_sim_events_total", summary.Counter, summary.Default, Neutral, true},
		{"xdslab_events_missed_total", summary.Counter, summary.Default, HigherIsWorse, false},
		{"xdslab_cp_cpu_seconds_total", summary.Counter, summary.Time, HigherIsWorse, false},
		{"xdslab_fleet_connected", summary.Gauge, summary.Default, Neutral, false},
		{"xdslab_probe_observed_rate", summary.Rate, summary.Default, LowerIsWorse, false},
		{"xdslab_fleet_ack_delay_seconds", summary.Trend, summary.Time, Neutral, false},
		{"xdslab_peak_rss_bytes", summary.Gauge, summary.Data, HigherIsWorse, false},
		{"something_else", summary.Counter, summary.Default, Neutral, false},
		{"something_else_duration", summary.Trend, summary.Time, HigherIsWorse, false},
	}
	for _, tc := range tests {
		dir, exact := classify(summary.Metric{Name: tc.name, Type: tc.typ, Contains: tc.contains})
		if dir != tc.dir || exact != tc.exact {
			t.Errorf("classify(%s) = %v, %v; want %v, %v", tc.name, dir, exact, tc.dir, tc.exact)
		}
	}
}

func TestParseMetricThreshold(t *testing.T) {
	tests := []struct {
		in      string
		want    MetricThreshold
		wantErr string
	}{
		{in: "xdslab_push_latency_seconds:p(99)=10%", want: MetricThreshold{Name: "xdslab_push_latency_seconds", Stat: "p(99)", Fraction: 0.10}},
		{in: "xdslab_push_latency_seconds=0.2", want: MetricThreshold{Name: "xdslab_push_latency_seconds", Fraction: 0.2}},
		{in: "xdslab_cache_hit_ratio{type:EDS}=2%", want: MetricThreshold{Name: "xdslab_cache_hit_ratio", Tags: map[string]string{"type": "EDS"}, Fraction: 0.02}},
		{in: "m{type:EDS, group:a}:count=1%", want: MetricThreshold{Name: "m", Tags: map[string]string{"type": "EDS", "group": "a"}, Stat: "count", Fraction: 0.01}},
		{in: "xdslab_push_latency_seconds:p(99)", wantErr: "no '='"},
		{in: "xdslab_push_latency_seconds:p(99)=ten", wantErr: "bad percentage"},
		{in: "xdslab_push_latency_seconds:p(99)=-5%", wantErr: "bad percentage"},
		{in: "xdslab_push_latency_seconds:p99=5%", wantErr: "unknown stat"},
		{in: "9lives=5%", wantErr: "invalid metric name"},
		{in: "m{type=EDS}=5%", wantErr: "bad tag"},
		{in: "m{type:EDS=5%", wantErr: "not closed"},
	}
	for _, tc := range tests {
		got, err := ParseMetricThreshold(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "NAME[{tag:value}][:STAT]=PCT") {
				t.Errorf("ParseMetricThreshold(%q) error = %v, want one containing %q and the fix", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMetricThreshold(%q): %v", tc.in, err)
			continue
		}
		if got.Name != tc.want.Name || got.Stat != tc.want.Stat || got.Fraction != tc.want.Fraction ||
			summary.TagString(got.Tags) != summary.TagString(tc.want.Tags) {
			t.Errorf("ParseMetricThreshold(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func writeSummary(t *testing.T, path string, s *summary.Summary) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := summary.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSide(t *testing.T) {
	dir := t.TempDir()
	for _, i := range []int{1, 2, 10} {
		s := synthSummary(t, baseSynth(uint64(i)))
		s.Results.Metrics[1].Values["count"] = float64(i) // marks the run
		writeSummary(t, filepath.Join(dir, "runs", "run-"+strconv.Itoa(i), "summary.json"), s)
	}
	side, err := LoadSide(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	var order []float64
	for _, r := range side.Runs {
		m, _ := r.Results.Find("xdslab_cp_push_cycles_total", nil)
		order = append(order, m.Values["count"])
	}
	if len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 10 {
		t.Errorf("runs read in order %v, want [1 2 10] (natural order)", order)
	}

	// Errors name the file and line, and say what to do.
	tuneOut := filepath.Join(dir, "tune")
	writeSummary(t, filepath.Join(tuneOut, "point-0", "run-1", "summary.json"), synthSummary(t, baseSynth(1)))
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"version\": \"1\",\n  \"results\": {\"metrics\": [}\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want []string
	}{
		{bad, []string{"bad.json:3:"}},
		{filepath.Join(dir, "missing.json"), []string{"give a summary.json or a directory of runs"}},
		{t.TempDir(), []string{"holds no summary.json", "xdslab run --repeat K"}},
		// A tune's --out (point-N/run-K) names its point directories.
		{tuneOut, []string{"holds runs two levels down", "compare two of its directories, e.g. " + filepath.Join(tuneOut, "point-0") + " " + filepath.Join(tuneOut, "point-1")}},
	}
	for _, tc := range tests {
		_, err := LoadSide(tc.path)
		if err == nil {
			t.Errorf("LoadSide(%s) succeeded, want an error", tc.path)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("LoadSide(%s) error %q lacks %q", tc.path, err, w)
			}
		}
	}
}

// TestCompareGolden pins every output format on a report with a regression, an
// improvement, an exact change and untested rows.
func TestCompareGolden(t *testing.T) {
	b := baseSynth(1)
	b.n = 600
	n := b
	n.draw = 2
	n.medianMs *= 1.3
	n.pushCycles = 100
	base := synthSummary(t, b)
	nw := synthSummary(t, n)
	nw.Results.Metrics = append(nw.Results.Metrics, summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 3, 0, nil))
	rep, err := Compare(NewSide("base.json", base), NewSide("new.json", nw), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Regressed() {
		t.Fatal("golden report should hold a regression")
	}
	for _, f := range Formats {
		if f == "html" {
			continue // SVG plots: TestCompareHTMLOverlay checks what the page says
		}
		var buf bytes.Buffer
		if err := WriteReport(&buf, rep, f); err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{"text": "txt", "markdown": "md", "json": "json", "junit": "xml"}[f]
		golden.Check(t, filepath.Join("testdata", "report.golden."+ext), buf.Bytes())
	}
	if err := WriteReport(&bytes.Buffer{}, rep, "pdf"); err == nil || !strings.Contains(err.Error(), "text, markdown, json, junit, html") {
		t.Errorf("unknown format error = %v, want one listing the formats", err)
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		c    summary.ValueType
		want string
	}{
		{0.25, summary.Time, "250ms"},
		{1.5, summary.Time, "1.5s"},
		{42e-6, summary.Time, "42µs"},
		{3 << 20, summary.Data, "3MiB"},
		{1234567, summary.Default, "1.235e+06"},
		{120, summary.Default, "120"},
	}
	for _, tc := range tests {
		if got := FormatValue(tc.v, tc.c); got != tc.want {
			t.Errorf("FormatValue(%v, %s) = %q, want %q", tc.v, tc.c, got, tc.want)
		}
	}
}

// TestCompareFewRuns: sides with fewer runs than the U test over runs needs at alpha (2+2 can
// reach no p below 0.33) must neither pass a 6.5x regression nor print "no significant
// regression": trends fall back to the merged HDR histograms, the rest is inconclusive.
func TestCompareFewRuns(t *testing.T) {
	slow := func(draw uint64) synth { s := baseSynth(draw); s.medianMs *= 6.5; return s }
	tests := []struct {
		name           string
		nb, nn         int
		newCfg         func(uint64) synth
		allow          bool
		wantReg        bool
		wantInconc     bool
		wantFailed     bool
		wantP99Method  string
		wantNoRegrText bool
	}{
		{name: "2+2 runs, 6.5x slower", nb: 2, nn: 2, newCfg: slow, wantReg: true, wantInconc: true, wantFailed: true, wantP99Method: MethodHistogram},
		{name: "1+1 run, 6.5x slower", nb: 1, nn: 1, newCfg: slow, wantReg: true, wantInconc: true, wantFailed: true, wantP99Method: MethodHistogram},
		{name: "3+3 runs, same config", nb: 3, nn: 3, newCfg: baseSynth, wantInconc: true, wantFailed: true, wantP99Method: MethodHistogram},
		{name: "3+3 runs, same config, inconclusive allowed", nb: 3, nn: 3, newCfg: baseSynth, allow: true, wantInconc: true, wantP99Method: MethodHistogram},
		{name: "5+5 runs, same config", nb: 5, nn: 5, newCfg: baseSynth, wantP99Method: MethodRuns, wantNoRegrText: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs := runsOf(t, tc.nb, func(i int) synth { return baseSynth(uint64(100 + i)) })
			ns := runsOf(t, tc.nn, func(i int) synth { return tc.newCfg(uint64(200 + i)) })
			opts := DefaultOptions()
			opts.AllowInconclusive = tc.allow
			rep, err := Compare(NewSide("base", bs...), NewSide("new", ns...), opts)
			if err != nil {
				t.Fatal(err)
			}
			text := reportText(t, rep)
			if rep.Regressed() != tc.wantReg || (rep.Inconclusive > 0) != tc.wantInconc || rep.Failed() != tc.wantFailed {
				t.Errorf("regressed %v inconclusive %d failed %v, want %v %v %v\n%s",
					rep.Regressed(), rep.Inconclusive, rep.Failed(), tc.wantReg, tc.wantInconc, tc.wantFailed, text)
			}
			p99 := findRow(t, rep, "xdslab_push_latency_seconds", "p(99)")
			if p99.Method != tc.wantP99Method {
				t.Errorf("p(99) method %s, want %s", p99.Method, tc.wantP99Method)
			}
			if tc.wantReg && !p99.Regression {
				t.Errorf("p(99) %v -> %v not a regression:\n%s", p99.Base.Center, p99.New.Center, text)
			}
			if got := strings.Contains(text, "no significant regression beyond threshold"); got != tc.wantNoRegrText {
				t.Errorf("text says 'no significant regression': %v, want %v\n%s", got, tc.wantNoRegrText, text)
			}
			if tc.wantInconc && !strings.Contains(text, "INCONCLUSIVE") {
				t.Errorf("inconclusive report does not say so:\n%s", text)
			}
		})
	}
}

func TestCmpRunsCanReject(t *testing.T) {
	for _, tc := range []struct {
		n1, n2 int
		alpha  float64
		want   bool
	}{{1, 5, 0.05, false}, {2, 2, 0.05, false}, {3, 3, 0.05, false}, {3, 4, 0.05, false}, {4, 4, 0.05, true}, {3, 3, 0.2, true}, {5, 5, 0.01, true}} {
		if got := RunsCanReject(tc.n1, tc.n2, tc.alpha); got != tc.want {
			t.Errorf("RunsCanReject(%d, %d, %g) = %v, want %v", tc.n1, tc.n2, tc.alpha, got, tc.want)
		}
	}
	if got := MinRuns(0.05); got != 4 {
		t.Errorf("MinRuns(0.05) = %d, want 4", got)
	}
}

// TestCompareHTMLOverlay: the html format draws both sides' distributions on one nines axis
// (each side merged over its runs), says the verdict first, and keeps the whole table.
func TestCompareHTMLOverlay(t *testing.T) {
	slow := func(draw uint64) synth { s := baseSynth(draw); s.medianMs *= 6.5; return s }
	bs := runsOf(t, 2, func(i int) synth { return baseSynth(uint64(100 + i)) })
	ns := runsOf(t, 2, func(i int) synth { return slow(uint64(200 + i)) })
	rep, err := Compare(NewSide("base", bs...), NewSide("new", ns...), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, rep, "html"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	var want int64
	for _, s := range append(slices.Clone(bs), ns...) {
		for _, m := range s.Results.Metrics {
			if m.Name == "xdslab_push_latency_seconds" && len(m.Tags) == 0 {
				h, err := m.Histogram.Decode()
				if err != nil {
					t.Fatal(err)
				}
				want += h.TotalCount()
			}
		}
	}
	half := want / 2
	for _, s := range []string{
		fmt.Sprintf("%d regression(s)", rep.Regressions),
		"push latency, base vs new", "convergence, base vs new",
		fmt.Sprintf("base (%d observations)", half), fmt.Sprintf("new (%d observations)", want-half),
		"p99.99", "xdslab_push_latency_seconds p(99)",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("html report lacks %q", s)
		}
	}
	if strings.Index(page, "regression(s)") > strings.Index(page, "<svg") {
		t.Error("the verdict must come before the plots")
	}
	if err := WriteReport(io.Discard, &Report{}, "html"); err == nil {
		t.Error("a report without sides must refuse the html format")
	}
}

// TestCompareMissing: what base measured and new did not fails the comparison (a NEW run that
// crashed or observed nothing must not pass the gate), unless the metric is neutral or not
// gated; two scenarios' summaries get a note.
func TestCompareMissing(t *testing.T) {
	base := &Side{Path: "base", Runs: []*summary.Summary{synthSummary(t, baseSynth(1))}}
	empty := synthSummary(t, baseSynth(2))
	empty.Results.Metrics = nil
	noLatency := synthSummary(t, baseSynth(3))
	noLatency.Results.Metrics = noLatency.Results.Metrics[1:]
	other := synthSummary(t, baseSynth(4))
	other.Config = []byte(`{"name":"another","seed":1}`)
	for _, tc := range []struct {
		name        string
		nw          *summary.Summary
		gate        string
		missing     []string
		failed      bool
		text, notes string
	}{
		{"no metrics at all", empty, "", []string{`xdslab_cache_hit_ratio{type="EDS"}`, "xdslab_cp_push_cycles_total", "xdslab_push_latency_seconds"}, true,
			"MISSING: 3 gated metric(s) measured in base were not measured in new", ""},
		{"the latency trend gone", noLatency, "", []string{"xdslab_push_latency_seconds"}, true, "MISSING: 1 gated metric(s)", ""},
		{"gone, but not gated", noLatency, "push_cycles", nil, false, "no significant regression", ""},
		{"gone and gated", noLatency, "push_latency", []string{"xdslab_push_latency_seconds"}, true, "MISSING", ""},
		{"another scenario", other, "", nil, false, "", `the sides ran different scenarios (base "synthetic", new "another")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{AllowInconclusive: true} // one run a side: only what is missing fails
			if tc.gate != "" {
				opts.Gate = regexp.MustCompile(tc.gate)
			}
			rep, err := Compare(base, &Side{Path: "new", Runs: []*summary.Summary{tc.nw}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Missing, tc.missing) || rep.Failed() != tc.failed {
				t.Fatalf("missing %v failed %v, want %v %v", rep.Missing, rep.Failed(), tc.missing, tc.failed)
			}
			if txt := reportText(t, rep); !strings.Contains(txt, tc.text) || (tc.missing != nil && strings.Contains(txt, "no significant regression")) {
				t.Errorf("text does not say %q (or says no regression):\n%s", tc.text, txt)
			}
			if tc.notes != "" && !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, tc.notes) }) {
				t.Errorf("notes %q, want %q", rep.Notes, tc.notes)
			}
		})
	}
}

// TestCompareRefusesMixedKinds: a shard, a simulator's summary or a standalone fleet's does not
// compare with a whole run (or a merged distributed run); runs and merges compare.
func TestCompareRefusesMixedKinds(t *testing.T) {
	mk := func(cmd string, seg *summary.Segment, shards int) *summary.Summary {
		s := &summary.Summary{Version: summary.Version, Metadata: summary.Metadata{Tool: "xdslab", Command: cmd, Segment: seg},
			Results: summary.Results{Metrics: []summary.Metric{summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 1, time.Second, nil)}}}
		for range shards {
			s.Metadata.Shards = append(s.Metadata.Shards, summary.Shard{Source: "shard.json"})
		}
		return s
	}
	run, merged := mk("run", nil, 0), mk("merge", nil, 2)
	shard, sim, fleet := mk("fleet", &summary.Segment{Index: 0, Count: 2}, 0), mk("sim", nil, 0), mk("fleet", nil, 0)
	side := func(s ...*summary.Summary) *Side { return &Side{Path: "x", Runs: s} }
	for _, tc := range []struct {
		name      string
		base, new *Side
		want      string // "" compares
	}{
		{"run and merged run", side(run), side(merged), ""},
		{"shard against merged", side(shard), side(merged), "is one shard of a distributed run"},
		{"simulator against merged", side(merged), side(sim), "is a distributed run's simulator summary"},
		{"standalone fleet against run", side(run), side(fleet), "is a standalone fleet's summary"},
		{"a side mixing kinds", side(run, shard), side(run), "is one shard"},
	} {
		_, err := Compare(tc.base, tc.new, Options{})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
