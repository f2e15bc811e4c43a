package threshold

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		src             string
		key, op         string
		value           float64
		unit, errSubstr string
	}{
		{src: "p(99)<500ms", key: "p(99)", op: "<", value: 0.5, unit: "time"},
		{src: " p( 99.9 ) <= 1.5s ", key: "p(99.9)", op: "<=", value: 1.5, unit: "time"},
		{src: "p(99.0)<1", key: "p(99)", op: "<", value: 1},
		{src: "avg<200us", key: "avg", op: "<", value: 200e-6, unit: "time"},
		{src: "avg < 200µs", key: "avg", op: "<", value: 200e-6, unit: "time"},
		{src: "count==0", key: "count", op: "==", value: 0},
		{src: "count===0", key: "count", op: "==", value: 0},
		{src: "rate<0.01", key: "rate", op: "<", value: 0.01},
		{src: "rate<1%", key: "rate", op: "<", value: 0.01, unit: "percent"},
		{src: "max<=2m", key: "max", op: "<=", value: 120, unit: "time"},
		{src: "value>5", key: "value", op: ">", value: 5},
		{src: "min>=-3", key: "min", op: ">=", value: -3},
		{src: "med!=1e3", key: "med", op: "!=", value: 1000},
		{src: "max<10MiB", key: "max", op: "<", value: 10 << 20, unit: "size"},
		{src: "max<2kB", key: "max", op: "<", value: 2000, unit: "size"},
		{src: "p(0)>0", key: "p(0)", op: ">", value: 0},
		{src: "", errSubstr: "empty"},
		{src: "p99<5", errSubstr: "write the percentile as p(99), not p99"},
		{src: "P(99)<5", errSubstr: `unknown aggregation "P"`},
		{src: "p(101)<5", errSubstr: "from 0 to 100"},
		{src: "p(abc)<5", errSubstr: "from 0 to 100"},
		{src: "p(99<5", errSubstr: "not closed"},
		{src: "avrg<5", errSubstr: `did you mean "avg"?`},
		{src: "avg 5", errSubstr: "missing comparison"},
		{src: "avg<", errSubstr: "missing number"},
		{src: "avg<fast", errSubstr: "missing number"},
		{src: "avg===avg", errSubstr: "missing number after ==="},
		{src: "avg!=x", errSubstr: "missing number after !="},
		{src: "avg<5 parsecs", errSubstr: `unknown unit "parsecs"`},
		{src: "avg<5ms extra", errSubstr: "unknown unit"},
		{src: "<5", errSubstr: "missing aggregation"},
		{src: "avg<1e999", errSubstr: "invalid number"},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			th, err := Parse(tc.src)
			if tc.errSubstr != "" {
				var te *Error
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) || !errors.As(err, &te) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error containing %q", tc.src, th, err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if th.Key() != tc.key || th.Op != tc.op || math.Abs(th.Value-tc.value) > 1e-12*math.Max(1, math.Abs(tc.value)) || th.Unit != tc.unit {
				t.Errorf("got key %q op %q value %g unit %q; want %q %q %g %q", th.Key(), th.Op, th.Value, th.Unit, tc.key, tc.op, tc.value, tc.unit)
			}
			if th.String() != tc.src {
				t.Errorf("String() = %q, want the source", th.String())
			}
		})
	}
}

func TestThresholdEval(t *testing.T) {
	trend := map[string]float64{"avg": 0.1, "min": 0.01, "med": 0.09, "max": 0.9, "p(90)": 0.2, "p(99)": 0.45, "p(99.9)": 0.8}
	counter := map[string]float64{"count": 3, "rate": 0.5}
	tests := []struct {
		expr   string
		values map[string]float64
		pass   bool
		errSub string
	}{
		{"p(99)<500ms", trend, true, ""},
		{"p(99)<450ms", trend, false, ""}, // strict: equal does not pass
		{"p(99)<=450ms", trend, true, ""},
		{"p(99.9)<0.5", trend, false, ""},
		{"avg>=100ms", trend, true, ""},
		{"max>1", trend, false, ""},
		{"med!=0.09", trend, false, ""},
		{"count==0", counter, false, ""},
		{"count==3", counter, true, ""},
		{"count===3", counter, true, ""},
		{"rate<1", counter, true, ""},
		{"rate>50%", counter, false, ""},
		{"p(95)<1", trend, false, "does not have (it has avg, max, med, min, p(90), p(99), p(99.9))"},
		{"count==0", trend, false, "reads count"},
		{"avg<1", map[string]float64{"avg": math.NaN()}, false, ""},
		{"avg!=1", map[string]float64{"avg": math.NaN()}, false, ""}, // NaN never passes
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			th, err := Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			pass, err := th.Eval(tc.values)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("Eval = %v, %v; want error containing %q", pass, err, tc.errSub)
				}
				return
			}
			if err != nil || pass != tc.pass {
				t.Errorf("Eval = %v, %v; want %v", pass, err, tc.pass)
			}
		})
	}
}

// TestThresholdEvalBound: a value known only to lie in (gt, le] passes when the bucket proves
// the expression, fails when it proves the opposite, and is inconclusive otherwise.
func TestThresholdEvalBound(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		expr   string
		gt, le float64
		want   Verdict
	}{
		{"p(99)<500ms", 0.1, 0.5, Inconclusive}, // x may be exactly 0.5
		{"p(99)<=500ms", 0.1, 0.5, Pass},
		{"p(99)<500ms", 0.1, 0.25, Pass},
		{"p(99)<500ms", math.Inf(-1), 0.1, Pass}, // the first bucket: at most 100ms
		{"p(99)<500ms", 0.5, 1, Fail},            // above 500ms
		{"p(99)<500ms", 0.1, 1, Inconclusive},    // istiod's (.1, 1]: nothing is known either way
		{"p(99)<500ms", 30, inf, Fail},           // the +Inf bucket: above 30s
		{"p(99)<40s", 30, inf, Inconclusive},
		{"p(99)<=500ms", 0.5, 1, Fail},
		{"max>1", 1, 3, Pass},
		{"max>1", 0.5, 1, Fail},
		{"max>1", 0.5, 3, Inconclusive},
		{"min>=1", 1, 3, Pass},
		{"min>=1", 0.1, 0.5, Fail},
		{"min>=1", 0.1, 1, Inconclusive}, // x may be exactly 1
		{"med==1", 0.5, 1, Inconclusive},
		{"med==1", 1, 3, Fail},
		{"med==0.1", math.Inf(-1), 0.05, Fail},
		{"med!=1", 1, 3, Pass},
		{"med!=1", 0.5, 1, Inconclusive},
		{"p(99)<1", math.NaN(), 1, Inconclusive},
		{"p(99)<1", 1, 1, Inconclusive}, // an empty bound proves nothing
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s in (%g,%g]", tc.expr, tc.gt, tc.le), func(t *testing.T) {
			th, err := Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := th.EvalBound(tc.gt, tc.le)
			if err != nil || got != tc.want {
				t.Errorf("EvalBound = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := (Threshold{Source: "x", Op: "~"}).EvalBound(0, 1); err == nil {
		t.Error("an unknown operator is an error")
	}
}

func TestMetricSelector(t *testing.T) {
	tests := []struct {
		sel  string
		name string
		tags map[string]string
		ok   bool
	}{
		{"xdslab_push_latency_seconds", "xdslab_push_latency_seconds", nil, true},
		{"xdslab_fleet_nacks_total{type:cds}", "xdslab_fleet_nacks_total", map[string]string{"type": "cds"}, true},
		{"m{type: eds, group: a-b}", "m", map[string]string{"type": "eds", "group": "a-b"}, true},
		{"", "", nil, false},
		{"1m", "", nil, false},
		{"m{type}", "", nil, false},
		{"m{type:cds", "", nil, false},
		{"m{:x}", "", nil, false},
		{"bad-name", "", nil, false},
	}
	for _, tc := range tests {
		err := CheckSelector(tc.sel)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSelector(%q) = %v, want ok=%v", tc.sel, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if MetricName(tc.sel) != tc.name {
			t.Errorf("MetricName(%q) = %q", tc.sel, MetricName(tc.sel))
		}
		got := MetricTags(tc.sel)
		if len(got) != len(tc.tags) {
			t.Errorf("MetricTags(%q) = %v, want %v", tc.sel, got, tc.tags)
		}
		for k, v := range tc.tags {
			if got[k] != v {
				t.Errorf("MetricTags(%q)[%s] = %q, want %q", tc.sel, k, got[k], v)
			}
		}
	}
}

// FuzzThreshold: parsing never panics; a parsed threshold's canonical form parses to the same
// threshold, and Eval agrees with a direct comparison.
func FuzzThreshold(f *testing.F) {
	for _, s := range []string{"p(99)<500ms", "count==0", "rate<1%", "avg >= 2.5e-3", "max<10MiB", "p(99.9)!=1h", "value===3", "p(", "avg<-1e3s"} {
		f.Add(s, 0.25)
	}
	f.Fuzz(func(t *testing.T, src string, v float64) {
		th, err := Parse(src)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v is not a threshold error", err)
			}
			return
		}
		again, err := Parse(th.Canonical())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", th.Canonical(), src, err)
		}
		if again.Key() != th.Key() || again.Op != th.Op || again.Value != th.Value {
			t.Fatalf("canonical %q of %q parses to %+v, want %+v", th.Canonical(), src, again, th)
		}
		pass, err := th.Eval(map[string]float64{th.Key(): v})
		if err != nil {
			t.Fatal(err)
		}
		var want bool
		switch th.Op {
		case "<":
			want = v < th.Value
		case "<=":
			want = v <= th.Value
		case ">":
			want = v > th.Value
		case ">=":
			want = v >= th.Value
		case "==":
			want = v == th.Value
		case "!=":
			want = v != th.Value && !math.IsNaN(v)
		}
		if pass != want {
			t.Fatalf("%q.Eval(%g) = %v, want %v", src, v, pass, want)
		}
	})
}
