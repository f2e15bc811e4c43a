package compare

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/internal/summary"
)

// TestCompareRefusesWhatSelectsNothing: a --gate, --metric-threshold or --worse that names
// nothing base measured would be ignored, and the comparison pass on the defaults (a gate
// typo shows every row "not gated" and says "no significant regression"): each is an error
// naming the problem and the fix. So is a base that measured nothing.
func TestCompareRefusesWhatSelectsNothing(t *testing.T) {
	base := synthSummary(t, baseSynth(1))
	slow := baseSynth(2)
	slow.medianMs *= 10
	nw := synthSummary(t, slow)
	mt := func(s string) []MetricThreshold {
		m, err := ParseMetricThreshold(s)
		if err != nil {
			t.Fatal(err)
		}
		return []MetricThreshold{m}
	}
	empty := synthSummary(t, baseSynth(3))
	empty.Results.Metrics = nil
	neutralOnly := synthSummary(t, baseSynth(4))
	neutralOnly.Results.Metrics = []summary.Metric{summary.NewCounter("xdslab_sim_events_total", summary.Default, 400, 0, nil)}
	for _, tc := range []struct {
		name    string
		base    *summary.Summary
		opts    Options
		wantErr []string // "" wants no error
	}{
		{name: "gate typo", opts: Options{Gate: regexp.MustCompile(`^xdslab_push_latncy_seconds$`)},
			wantErr: []string{`--gate "^xdslab_push_latncy_seconds$" selects no metric of base`, "did you mean xdslab_push_latency_seconds?",
				"the metrics that can gate: xdslab_cache_hit_ratio, xdslab_cp_push_cycles_total, xdslab_push_latency_seconds"}},
		{name: "one alternative of the gate a typo", opts: Options{Gate: regexp.MustCompile(`^xdslab_push_latency_seconds$|^xdslab_cp_push_cylces_total$`)},
			wantErr: []string{`its alternative "^xdslab_cp_push_cylces_total$" selects no metric`, "did you mean xdslab_cp_push_cycles_total?"}},
		{name: "gate on neutral metrics only", opts: Options{Gate: regexp.MustCompile(`sim_events`)},
			wantErr: []string{"selects only metrics that never gate (xdslab_sim_events_total", "the metrics that can gate:"}},
		{name: "gate with flags over its alternatives", opts: Options{Gate: regexp.MustCompile(`(?i)^XDSLAB_PUSH_LATENCY_SECONDS$|^XDSLAB_CP_PUSH_CYCLES_TOTAL$`)}},
		{name: "gate that selects", opts: Options{Gate: regexp.MustCompile(`^xdslab_(push_latency_seconds|cp_push_cycles_total)$|hit_ratio`)}},
		{name: "threshold on an unknown metric", opts: Options{MetricThresholds: mt("xdslab_push_latncy_seconds=10%")},
			wantErr: []string{"--metric-threshold xdslab_push_latncy_seconds=10%: base (base) has no metric xdslab_push_latncy_seconds", "did you mean xdslab_push_latency_seconds?"}},
		{name: "threshold on a tag the metric lacks", opts: Options{MetricThresholds: mt("xdslab_push_latency_seconds{type:CDS}=10%")},
			wantErr: []string{"has no entry xdslab_push_latency_seconds{type:CDS}", "its entries: (untagged)"}},
		{name: "threshold on a tag in the wrong case", opts: Options{MetricThresholds: mt("xdslab_cache_hit_ratio{type:eds}=2%")},
			wantErr: []string{"has no entry xdslab_cache_hit_ratio{type:eds}", "did you mean {type:EDS}?"}},
		{name: "p(95) of a trend", opts: Options{MetricThresholds: mt("xdslab_push_latency_seconds:p(95)=10%")},
			wantErr: []string{"compare never computes p(95) of xdslab_push_latency_seconds (a trend): it compares avg, p(50), p(90), p(99), p(99.9)"}},
		{name: "max of a trend", opts: Options{MetricThresholds: mt("xdslab_push_latency_seconds:max=10%")}, wantErr: []string{"never computes max"}},
		{name: "count of a trend", opts: Options{MetricThresholds: mt("xdslab_push_latency_seconds:count=10%")}, wantErr: []string{"never computes count"}},
		{name: "value of a counter", opts: Options{MetricThresholds: mt("xdslab_cp_push_cycles_total:value=10%")}, wantErr: []string{"it compares count"}},
		{name: "thresholds that apply", opts: Options{MetricThresholds: append(append(
			mt("xdslab_push_latency_seconds:med=10%"), mt("xdslab_cache_hit_ratio{type:EDS}:value=2%")...),
			mt("xdslab_cp_push_cycles_total:count=15%")...)}},
		{name: "direction of an unknown metric", opts: Options{Directions: []DirectionOverride{{Name: "nosuch", Dir: HigherIsWorse}}},
			wantErr: []string{"--worse nosuch=up: base (base) has no metric nosuch"}},
		{name: "direction of a known metric", opts: Options{Directions: []DirectionOverride{{Name: "xdslab_sim_events_total", Dir: HigherIsWorse}}}},
		{name: "base measured nothing", base: empty, wantErr: []string{"base base#1 holds no metrics", "nothing measured is not zero"}},
		{name: "base has only neutral metrics", base: neutralOnly, wantErr: []string{"holds no metric that can regress (only xdslab_sim_events_total"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			if tc.base != nil {
				b = tc.base
			}
			opts := DefaultOptions()
			opts.Gate, opts.MetricThresholds, opts.Directions = tc.opts.Gate, tc.opts.MetricThresholds, tc.opts.Directions
			rep, err := Compare(NewSide("base", b), NewSide("new", nw), opts)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !rep.Regressed() {
					t.Errorf("a 10x latency regression passed:\n%s", reportText(t, rep))
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; the comparison ran:\n%s", reportText(t, rep))
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestParsePercentBareNumber: a bare number above 1 is almost certainly a percentage without
// its %: read as a fraction, --threshold 5 would let a 4x regression pass. It is refused with
// the fix; fractions and percentages still parse.
func TestParsePercentBareNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{in: "5%", want: 0.05},
		{in: "0.05", want: 0.05},
		{in: "1", want: 1},
		{in: "500%", want: 5},
		{in: "0", want: 0},
		{in: "5", err: "write 5% or 0.05 for 5%"},
		{in: "12.5", err: "(12.5 would mean 1250%)"},
	} {
		got, err := ParsePercent(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePercent(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseMetricThreshold("xdslab_push_latency_seconds=5"); err == nil || !strings.Contains(err.Error(), "write 5% or 0.05") {
		t.Errorf("--metric-threshold NAME=5: %v, want the fix", err)
	}
}

// TestCompareScenarioNotes: runs of different scenarios, pooled in one side or on the two
// sides, get a note in every format.
func TestCompareScenarioNotes(t *testing.T) {
	named := func(draw uint64, name string) *summary.Summary {
		s := synthSummary(t, baseSynth(draw))
		s.Config = []byte(`{"name":"` + name + `","seed":1}`)
		return s
	}
	for _, tc := range []struct {
		name      string
		base, nw  []*summary.Summary
		wantNotes []string
	}{
		{"one scenario", []*summary.Summary{named(1, "tiny")}, []*summary.Summary{named(2, "tiny")}, nil},
		{"across sides", []*summary.Summary{named(1, "tiny")}, []*summary.Summary{named(2, "other")},
			[]string{`the sides ran different scenarios (base "tiny", new "other")`}},
		{"mixed within base, new matches its first run", []*summary.Summary{named(1, "tiny"), named(2, "other")}, []*summary.Summary{named(3, "tiny")},
			[]string{`base pools runs of different scenarios: "tiny" (base#1), "other" (base#2)`, `the sides ran different scenarios (base "tiny", "other", new "tiny")`}},
		{"mixed within new", []*summary.Summary{named(1, "tiny")}, []*summary.Summary{named(2, "tiny"), named(3, "other")},
			[]string{`new pools runs of different scenarios: "tiny" (new#1), "other" (new#2)`}},
		{"both mixed alike", []*summary.Summary{named(1, "tiny"), named(2, "other")}, []*summary.Summary{named(3, "tiny"), named(4, "other")},
			[]string{"base pools runs of different scenarios", "new pools runs of different scenarios"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.AllowInconclusive = true
			rep, err := Compare(NewSide("base", tc.base...), NewSide("new", tc.nw...), opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range Formats {
				var buf bytes.Buffer
				if err := WriteReport(&buf, rep, format); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				if format == "json" || format == "junit" || format == "html" {
					out = strings.NewReplacer(`\"`, `"`, "&#34;", `"`, "&quot;", `"`, "&#39;", "'").Replace(out)
				}
				for _, w := range tc.wantNotes {
					if !strings.Contains(out, w) {
						t.Errorf("%s output does not say %q:\n%s", format, w, out)
					}
				}
				if tc.wantNotes == nil && strings.Contains(out, "scenarios") {
					t.Errorf("%s output speaks of scenarios for runs of one:\n%s", format, out)
				}
			}
		})
	}
}

func TestTopAlternatives(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`^a$`, nil},
		{`^(a|b)$`, nil},
		{`a\|b`, nil},
		{`[|]a`, nil},
		{`^a$|^(b|c)$`, []string{`^a$`, `^(b|c)$`}},
		{`[]|]x|y`, []string{`[]|]x`, `y`}},
		{`(?i)a|b`, []string{`(?i)a`, `(?i)b`}},
	} {
		var got []string
		for _, re := range topAlternatives(tc.in) {
			got = append(got, re.String())
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("topAlternatives(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCompareNoDataIsNotZero: a trend that observed nothing (its histogram counts no value) is
// not a measurement of 0s. A new side that measured no push latency is MISSING (it failed to
// measure), never "improved by 100%", with one run or five, --allow-inconclusive or not; a
// base that measured none of what a gate or a threshold names is refused.
func TestCompareNoDataIsNotZero(t *testing.T) {
	nothing := func(draw uint64) *summary.Summary {
		s := synthSummary(t, baseSynth(draw))
		m, err := summary.NewTrend("xdslab_push_latency_seconds", summary.Time, hdr.New(1, 3_600_000_000, 3), 1e-6, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Results.Metrics[0] = m
		return s
	}
	for _, n := range []int{1, 5} {
		var b, nw []*summary.Summary
		for i := range n {
			b = append(b, synthSummary(t, baseSynth(uint64(i+1))))
			nw = append(nw, nothing(uint64(i+10)))
		}
		opts := DefaultOptions()
		opts.AllowInconclusive = true
		rep, err := Compare(NewSide("base", b...), NewSide("new", nw...), opts)
		if err != nil {
			t.Fatal(err)
		}
		text := reportText(t, rep)
		if !rep.Failed() || !slices.Contains(rep.Missing, "xdslab_push_latency_seconds") || strings.Contains(text, "improved") || strings.Contains(text, "no significant regression") {
			t.Errorf("%d run(s) a side, new measured no push latency: failed %v missing %v\n%s", n, rep.Failed(), rep.Missing, text)
		}
	}
	base := nothing(1)
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Gate: regexp.MustCompile(`^xdslab_push_latency_seconds$`)}, "base has xdslab_push_latency_seconds, but observed nothing in it"},
		{Options{MetricThresholds: []MetricThreshold{{Name: "xdslab_push_latency_seconds", Fraction: 0.1}}}, "observed nothing in it"},
	} {
		opts := DefaultOptions()
		opts.Gate, opts.MetricThresholds = tc.opts.Gate, tc.opts.MetricThresholds
		if _, err := Compare(NewSide("base", base), NewSide("new", synthSummary(t, baseSynth(2))), opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one saying %q", err, tc.want)
		}
	}
}

// TestCompareNotesEmptyNewRun: a new run that measured nothing, pooled with others, is said;
// the side's figures rest on its other runs.
func TestCompareNotesEmptyNewRun(t *testing.T) {
	empty := synthSummary(t, baseSynth(9))
	empty.Results.Metrics = nil
	opts := DefaultOptions()
	opts.AllowInconclusive = true
	rep, err := Compare(NewSide("base", synthSummary(t, baseSynth(1))), NewSide("new", synthSummary(t, baseSynth(2)), empty), opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "new new#2 holds no metrics (that run measured nothing)"; !strings.Contains(reportText(t, rep), want) {
		t.Errorf("the report does not say %q:\n%s", want, reportText(t, rep))
	}
}
