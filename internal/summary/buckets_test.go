package summary

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
)

// bnd builds a bound; NaN stands for "no such end".
func bnd(gt, le float64) Bound {
	var b Bound
	if !math.IsNaN(gt) {
		b.Gt = &gt
	}
	if !math.IsNaN(le) {
		b.Le = &le
	}
	return b
}

var none = math.NaN()

// istiodDebounce is istiod's pilot_debounce_time bucket layout.
var istiodDebounce = []float64{.01, .1, 1, 3, 5, 10, 20, 30}

func TestBucketsQuantile(t *testing.T) {
	tests := []struct {
		name string
		b    Buckets
		q    float64
		want Bound
		ok   bool
	}{
		{"empty: no data, not 0", Buckets{LE: istiodDebounce, Cumulative: make([]uint64, 8)}, 0.5, Bound{}, false},
		{"empty without buckets", Buckets{}, 0.99, Bound{}, false},
		// 18 pushes of 100.7 ms: all in (0.1, 1]; every quantile is that bucket.
		{"one bucket: min", oneBucket(18), 0, bnd(0.1, 1), true},
		{"one bucket: med", oneBucket(18), 0.5, bnd(0.1, 1), true},
		{"one bucket: p99", oneBucket(18), 0.99, bnd(0.1, 1), true},
		{"one bucket: max", oneBucket(18), 1, bnd(0.1, 1), true},
		{"first bucket has no lower bound", Buckets{Count: 4, LE: []float64{0.1, 0.5}, Cumulative: []uint64{4, 4}}, 0.99, bnd(none, 0.1), true},
		{"+Inf bucket: above the last finite bound", Buckets{Count: 10, LE: []float64{0.1, 0.5}, Cumulative: []uint64{5, 8}}, 0.9, bnd(0.5, none), true},
		{"+Inf bucket holds the max", Buckets{Count: 10, LE: []float64{0.1, 0.5}, Cumulative: []uint64{5, 9}}, 1, bnd(0.5, none), true},
		{"only the +Inf bucket", Buckets{Count: 3}, 0.5, Bound{}, true},
		// 10 observations: 4 ≤ 0.1, 4 in (0.1, 0.2], 2 in (0.2, 1].
		{"spread: rank 4 is the last of the first bucket", spread(), 0.4, bnd(none, 0.1), true},
		{"spread: rank 5 opens the second", spread(), 0.45, bnd(0.1, 0.2), true},
		{"spread: p90 is rank 9", spread(), 0.9, bnd(0.2, 1), true},
		{"spread: min skips empty buckets", Buckets{Count: 2, LE: []float64{0.1, 0.2, 1}, Cumulative: []uint64{0, 0, 2}}, 0, bnd(0.2, 1), true},
		// 0.99 × 100 is 99.00000000000001 in floating point: still rank 99, not 100.
		{"p99 of 100 is rank 99", Buckets{Count: 100, LE: []float64{1, 2}, Cumulative: []uint64{99, 100}}, 0.99, bnd(none, 1), true},
		{"p99.9 of 1000 is rank 999", Buckets{Count: 1000, LE: []float64{1, 2}, Cumulative: []uint64{999, 1000}}, 0.999, bnd(none, 1), true},
		{"p99 of 101 is rank 100", Buckets{Count: 101, LE: []float64{1, 2}, Cumulative: []uint64{99, 101}}, 0.99, bnd(1, 2), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.b.Quantile(tc.q)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("Quantile(%g) = %s, %v; want %s, %v", tc.q, FormatBound(Default, got), ok, FormatBound(Default, tc.want), tc.ok)
			}
		})
	}
}

func oneBucket(n uint64) Buckets {
	cum := []uint64{0, 0, n, n, n, n, n, n}
	return Buckets{Source: "pilot_debounce_time", Count: n, Sum: float64(n) * 0.1007, LE: istiodDebounce, Cumulative: cum}
}

func spread() Buckets {
	return Buckets{Count: 10, Sum: 2, LE: []float64{0.1, 0.2, 1}, Cumulative: []uint64{4, 8, 10}}
}

// TestNewBucketTrend: values hold only the exact mean; every other figure is a bound, and an
// empty histogram has no figures at all. What went wrong before: 18 pushes of about 100.7 ms in
// istiod's (0.1, 1] bucket were printed as med=550ms p(99)=991ms (interpolated).
func TestNewBucketTrend(t *testing.T) {
	m, err := NewBucketTrend("xdslab_debounce_delay_seconds", Time, oneBucket(18), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"avg": 0.1007}, m.Values, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	for _, k := range []string{"min", "med", "p(50)", "p(90)", "p(99)", "p(99.9)", "max"} {
		if b, ok := m.Bounded(k); !ok || !b.Equal(bnd(0.1, 1)) {
			t.Errorf("bounds[%s] = %s, %v; want (0.1, 1]", k, FormatBound(Time, b), ok)
		}
	}
	if m.Histogram != nil || m.Buckets == nil || m.Buckets.Count != 18 {
		t.Errorf("a bucket trend carries its buckets and no HDR histogram: %+v %+v", m.Histogram, m.Buckets)
	}
	line := formatValues(m)
	want := "count=18 avg=100.7ms min,med,p(90),p(99),p(99.9),max in (100ms, 1s] (pilot_debounce_time buckets)"
	if line != want {
		t.Errorf("text = %q\nwant   %q", line, want)
	}
	for _, invented := range []string{"med=", "p(99)=", "550ms", "991ms"} {
		if strings.Contains(line, invented) {
			t.Errorf("text %q shows %q: a point the buckets do not give", line, invented)
		}
	}

	empty, err := NewBucketTrend("e", Time, Buckets{Source: "pilot_debounce_time", LE: istiodDebounce, Cumulative: make([]uint64, 8)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Values) != 0 || len(empty.Bounds) != 0 {
		t.Errorf("an empty histogram has no figures, got values %v bounds %v", empty.Values, empty.Bounds)
	}
	if got := formatValues(empty); got != "count=0 no data (pilot_debounce_time buckets)" {
		t.Errorf("empty text = %q", got)
	}

	split := Buckets{Count: 10, Sum: 2, LE: []float64{0.1, 0.2, 1}, Cumulative: []uint64{4, 8, 9}}
	sm, err := NewBucketTrend("s", Time, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatValues(sm), "count=10 avg=200ms min ≤ 100ms med in (100ms, 200ms] p(90) in (200ms, 1s] p(99),p(99.9),max > 1s (buckets)"; got != want {
		t.Errorf("text = %q\nwant   %q", got, want)
	}

	s := Summary{Version: Version, Results: Results{Metrics: []Metric{m, empty, sm}}}
	if err := s.Validate(); err != nil {
		t.Errorf("bucket trends, empty or not, are valid: %v", err)
	}
	if _, err := NewBucketTrend("bad", Time, Buckets{Count: 1, LE: []float64{1, 0.5}, Cumulative: []uint64{0, 1}}, nil); err == nil {
		t.Error("decreasing bounds are an error")
	}
}

func TestBucketTrendValidate(t *testing.T) {
	good := func() Metric {
		m, err := NewBucketTrend("d", Time, spread(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name   string
		change func(*Metric)
		want   string
	}{
		{"a bound stated as a point", func(m *Metric) { m.Values["p(99)"] = 0.9; delete(m.Bounds, "p(99)") }, `values["p(99)"] is a point, but buckets only bound it`},
		{"a bound narrower than its bucket", func(m *Metric) { m.Bounds["p(90)"] = bnd(0.5, 1) }, `bounds["p(90)"] is in (500ms, 1s], but its buckets put it in (200ms, 1s]`},
		{"a bound left out", func(m *Metric) { delete(m.Bounds, "max") }, "lacks bounds[max]"},
		{"a mean its buckets do not give", func(m *Metric) { m.Values["avg"] = 0.3 }, `values["avg"] = 0.3, but its buckets give 0.2`},
		{"bounds without buckets", func(m *Metric) { m.Buckets = nil }, "bounds need the buckets"},
		{"buckets and an HDR histogram", func(m *Metric) { m.Histogram = &Histogram{Scale: 1, HDR: "x"} }, "carries no HDR histogram"},
		{"cumulative counts going down", func(m *Metric) { m.Buckets.Cumulative = []uint64{4, 3, 10} }, "cumulative[1] = 3 is below"},
		{"more in the buckets than counted", func(m *Metric) { m.Buckets.Count = 9 }, "exceeds count 9"},
		{"a gauge with buckets", func(m *Metric) { m.Type = Gauge }, "a gauge metric cannot carry buckets"},
		{"an empty bound", func(m *Metric) { m.Bounds["p(90)"] = bnd(1, 0.2) }, "is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.change(&m)
			err := m.validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBeforeBoundsStillReads: a summary written before bounds existed (every value a point)
// still decodes, and says the same.
func TestBeforeBoundsStillReads(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "before-bounds.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode("before-bounds.json", old)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := s.Results.Find("xdslab_fleet_time_to_first_config_seconds", nil)
	if !ok || m.Buckets != nil || m.Bounds != nil || len(m.Values) != 8 {
		t.Errorf("an old trend reads as points: %+v", m)
	}
	if _, ok := m.Bounded("p(99)"); ok {
		t.Error("an old trend's p(99) is a point")
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "p(99)=250.11ms") {
		t.Errorf("old trend text:\n%s", buf.String())
	}
}

func TestFormatBound(t *testing.T) {
	for _, tc := range []struct {
		b    Bound
		want string
	}{
		{bnd(0.1, 1), "in (100ms, 1s]"},
		{bnd(none, 0.01), "≤ 10ms"},
		{bnd(30, none), "> 30s"},
		{Bound{}, "unbounded"},
	} {
		if got := FormatBound(Time, tc.b); got != tc.want {
			t.Errorf("FormatBound(%s) = %q, want %q", fmt.Sprint(tc.b.Lower(), tc.b.Upper()), got, tc.want)
		}
	}
}

// TestWithPercentiles: a percentile a threshold names is added to a trend as k6 computes it —
// from the HDR histogram as a point, from Prometheus buckets as the bucket that holds it — the
// result validates (a percentile bound its buckets do not give does not), and the text shows it.
func TestWithPercentiles(t *testing.T) {
	h := hdr.New(1, 3600e6, 3)
	for v := int64(1); v <= 100; v++ {
		if err := h.RecordValue(v * 1000); err != nil {
			t.Fatal(err)
		}
	}
	ht, err := NewTrend("l", Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ht.WithPercentiles([]float64{95, 75, 0, 100, 99.99, 99})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"p(95)": 0.095, "p(75)": 0.075, "p(0)": 0.001, "p(100)": 0.1, "p(99.99)": 0.1} {
		if v, ok := got.Values[k]; !ok || math.Abs(v-want) > want*1e-3 {
			t.Errorf("values[%s] = %g, %v; want %g", k, v, ok, want)
		}
	}
	if _, ok := ht.Values["p(95)"]; ok {
		t.Error("WithPercentiles changed its receiver's values")
	}
	if err := got.validate(); err != nil {
		t.Fatal(err)
	}
	if s := formatValues(got); !strings.Contains(s, " p(0)=1ms p(75)=75.01ms p(95)=95.04ms p(99.99)=100.03ms p(100)=100.03ms") {
		t.Errorf("text = %q, want the added percentiles in order", s)
	}
	if _, err := ht.WithPercentiles([]float64{101}); err == nil {
		t.Error("p(101) accepted")
	}

	bt, err := NewBucketTrend("d", Time, spread(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gotB, err := bt.WithPercentiles([]float64{95, 40, 99})
	if err != nil {
		t.Fatal(err)
	}
	if b := gotB.Bounds["p(95)"]; !b.Equal(bnd(0.2, 1)) {
		t.Errorf("bounds[p(95)] = %s, want in (200ms, 1s]", FormatBound(Time, b))
	}
	if b := gotB.Bounds["p(40)"]; !b.Equal(bnd(none, 0.1)) {
		t.Errorf("bounds[p(40)] = %s, want ≤ 100ms", FormatBound(Time, b))
	}
	if _, ok := gotB.Values["p(95)"]; ok {
		t.Error("a bucket percentile became a point")
	}
	if err := gotB.validate(); err != nil {
		t.Fatal(err)
	}
	if s := formatBucketTrend(gotB); !strings.Contains(s, "p(40) ≤ 100ms p(95) in (200ms, 1s]") {
		t.Errorf("text = %q, want the added percentiles", s)
	}
	gotB.Bounds["p(95)"] = bnd(0.5, 1)
	if err := gotB.validate(); err == nil || !strings.Contains(err.Error(), `bounds["p(95)"] is in (500ms, 1s], but its buckets put it in (200ms, 1s]`) {
		t.Errorf("validate = %v, want the narrowed p(95) refused", err)
	}
	gotB.Bounds["p(95)"] = bnd(0.2, 1)
	gotB.Values["p(95)"] = 0.3
	if err := gotB.validate(); err == nil || !strings.Contains(err.Error(), "is a point, but buckets only bound it") {
		t.Errorf("validate = %v, want a bucket percentile as a point refused", err)
	}
	empty, err := NewBucketTrend("e", Time, Buckets{LE: istiodDebounce, Cumulative: make([]uint64, 8)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := empty.WithPercentiles([]float64{95}); len(e.Bounds) != 0 || len(e.Values) != 0 {
		t.Errorf("an empty bucket trend got %v %v: no data bounds nothing", e.Values, e.Bounds)
	}
	bad := ht
	bad.Values = map[string]float64{}
	for k, v := range ht.Values {
		bad.Values[k] = v
	}
	bad.Values["p95"] = 1
	if err := bad.validate(); err == nil {
		t.Error("a trend value p95 accepted")
	}
}
