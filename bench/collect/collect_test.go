package collect

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

func TestHistSnapBuckets(t *testing.T) {
	// 10 observations: 4 in (0, 0.1], 4 in (0.1, 0.2], 2 in (0.2, 1]; cumulative with +Inf.
	h := histSnap{count: 10, sum: 2, bounds: []float64{0.1, 0.2, 1, math.Inf(1)}, cum: []float64{4, 8, 10, 10}}
	b, err := h.buckets("src")
	require.NoError(t, err)
	require.Equal(t, summary.Buckets{Source: "src", Count: 10, Sum: 2, LE: []float64{0.1, 0.2, 1}, Cumulative: []uint64{4, 8, 10}}, b)

	prev := histSnap{count: 4, sum: 0.2, bounds: h.bounds, cum: []float64{4, 4, 4, 4}}
	d := h.sub(prev)
	require.Equal(t, 6.0, d.count)
	require.Equal(t, []float64{0, 4, 6, 6}, d.cum)
	b, err = d.buckets("src")
	require.NoError(t, err)
	q, ok := b.Quantile(1.0 / 3)
	require.True(t, ok)
	require.Equal(t, "in (100ms, 200ms]", summary.FormatBound(summary.Time, q))

	// A target that restarted between the scrapes: its counts went down.
	_, err = prev.sub(h).buckets("pilot_debounce_time")
	require.ErrorContains(t, err, "restart")
	_, err = histSnap{count: 1.5}.buckets("x")
	require.ErrorContains(t, err, "not a whole number")
}

// debounceExposition is istiod's pilot_debounce_time (its buckets .01, .1, 1, 3, 5, 10, 20, 30)
// after n pushes of 100.7 ms each.
func debounceExposition(n int, les []string) string {
	var b strings.Builder
	b.WriteString("# TYPE pilot_debounce_time histogram\n")
	for _, le := range les {
		c := n
		if v, _ := strconv.ParseFloat(le, 64); v < 0.1007 {
			c = 0
		}
		fmt.Fprintf(&b, "pilot_debounce_time_bucket{le=%q} %d\n", le, c)
	}
	fmt.Fprintf(&b, "pilot_debounce_time_bucket{le=\"+Inf\"} %d\npilot_debounce_time_sum %g\npilot_debounce_time_count %d\n", n, float64(n)*0.1007, n)
	return b.String()
}

// TestBucketTrendEighteenPushes: 18 pushes that each took about 100.7 ms, scraped from
// istiod's coarse buckets, were printed as "avg=101ms med=550ms p(99)=991ms" (interpolated
// inside (0.1, 1]). Now: the exact count and mean, and every quantile as the bucket that
// holds it.
func TestBucketTrendEighteenPushes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		les    []string
		bucket string
	}{
		{"istiod pilot_debounce_time", []string{"0.01", "0.1", "1", "3", "5", "10", "20", "30"}, "in (100ms, 1s]"},
		{"istiod pilot_proxy_convergence_time", []string{"0.1", "0.5", "1", "3", "5", "10", "20", "30"}, "in (100ms, 500ms]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ReadCP(parseExposition(t, debounceExposition(0, tc.les)))
			after := ReadCP(parseExposition(t, debounceExposition(18, tc.les)))
			require.True(t, after.hasDebounce)
			m, err := bucketTrend(MetricDebounceDelay, summary.Time, cpDebounceTime, after.debounce.sub(before.debounce))
			require.NoError(t, err)
			s := &summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{m}}}
			require.NoError(t, s.Validate())
			var buf bytes.Buffer
			require.NoError(t, summary.WriteText(&buf, s))
			out := buf.String()
			require.Contains(t, out, "count=18 avg=100.7ms min,med,p(90),p(99),p(99.9),max "+tc.bucket+" (pilot_debounce_time buckets)")
			for _, invented := range []string{"med=", "p(99)=", "550ms", "991ms", "300ms"} {
				require.NotContains(t, out, invented, "a point the buckets do not give")
			}
			require.Equal(t, map[string]float64{"avg": m.Values["avg"]}, m.Values, "only the mean is a value")
			require.InDelta(t, 0.1007, m.Values["avg"], 1e-12)
			_, hasP99 := m.Values["p(99)"]
			require.False(t, hasP99)
		})
	}
}

func TestBucketTrendEmpty(t *testing.T) {
	m, err := bucketTrend("d", summary.Time, cpDebounceTime, histSnap{bounds: []float64{0.1, math.Inf(1)}, cum: []float64{0, 0}})
	require.NoError(t, err)
	require.Empty(t, m.Values, "no data, not 0")
	require.Empty(t, m.Bounds)
	require.Nil(t, m.Histogram)
	require.EqualValues(t, 0, m.Buckets.Count)
	s := summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{m}}}
	require.NoError(t, s.Validate(), "an empty bucket trend is valid")
}

// exposition is the text format of an Istio-like control plane's /metrics, with istiod's own
// xds_cache_reads: type is hit or miss, no result label and no per-xDS-type split (istio
// pilot/pkg/model/typed_xds_cache.go: xdsCacheReads.With(typeTag.Value("hit"))).
const exposition = `# TYPE pilot_debounce_time histogram
pilot_debounce_time_bucket{le="0.1"} 3
pilot_debounce_time_bucket{le="0.5"} 5
pilot_debounce_time_bucket{le="+Inf"} 6
pilot_debounce_time_sum 1.5
pilot_debounce_time_count 6
# TYPE pilot_inbound_updates counter
pilot_inbound_updates{type="eds"} 20
pilot_inbound_updates{type="config"} 4
# TYPE xds_cache_reads counter
xds_cache_reads{type="hit"} 90
xds_cache_reads{type="miss"} 10
# TYPE pilot_services gauge
pilot_services 12
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.5
`

func parseExposition(t *testing.T, text string) []*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			break
		}
		out = append(out, mf)
	}
	require.NotEmpty(t, out)
	return out
}

func TestReadCPIstioNames(t *testing.T) {
	s := ReadCP(parseExposition(t, exposition))
	require.True(t, s.ok)
	// Istio has no push-cycle counter: pilot_debounce_time counts one observation per cycle.
	require.Equal(t, 6.0, s.pushCycles)
	require.Contains(t, s.cyclesFrom, "pilot_debounce_time")
	require.Equal(t, 24.0, s.inbound)
	// istiod's cache reads have no xDS type: no fake types "hit" and "miss".
	require.Equal(t, map[string]map[string]float64{"": {"hit": 90, "miss": 10}}, s.cacheReads)
	require.Equal(t, 12.0, s.services)
	require.True(t, s.hasCPU)
	require.Equal(t, 3.5, s.cpu)
	require.False(t, s.hasRSS)
	require.Equal(t, []float64{0.1, 0.5, math.Inf(1)}, s.debounce.bounds)
	require.Equal(t, []float64{3, 5, 6}, s.debounce.cum)

	v, ok := familyValue(parseExposition(t, exposition), "pilot_inbound_updates", map[string]string{"type": "eds"})
	require.True(t, ok)
	require.Equal(t, 20.0, v)

	// xdslab's own counter wins over the Istio fallback.
	s = ReadCP(parseExposition(t, exposition+"# TYPE xdslab_cp_push_cycles_total counter\nxdslab_cp_push_cycles_total 4\n"))
	require.Equal(t, 4.0, s.pushCycles)
	require.Equal(t, cpPushCycles, s.cyclesFrom)

	require.False(t, ReadCP(nil).ok, "no families: not available")

	// xdslab's own control plane splits them by xDS type, with result hit, miss or bypass.
	s = ReadCP(parseExposition(t, `# TYPE xds_cache_reads counter
xds_cache_reads{result="hit",type="cds"} 90
xds_cache_reads{result="miss",type="cds"} 10
xds_cache_reads{result="bypass",type="eds"} 5
`))
	require.Equal(t, map[string]map[string]float64{"cds": {"hit": 90, "miss": 10}, "eds": {"bypass": 5}}, s.cacheReads)
}

func TestEvaluateThresholds(t *testing.T) {
	res := summary.Results{Metrics: []summary.Metric{
		summary.NewCounter("xdslab_events_missed_total", summary.Default, 0, time.Second, nil),
		summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 3, time.Second, map[string]string{"type": "CDS"}),
		summary.NewRate("xdslab_cache_hit_ratio", 9, 1, nil),
		mustTrend(t, "xdslab_push_latency_seconds", nil),
		mustTrend(t, "xdslab_push_latency_seconds", map[string]string{"kind": "scale"}, 2500),
		summary.NewCounter("xdslab_fleet_connect_failures_total", summary.Default, 2, time.Second, nil),
		summary.NewCounter("xdslab_fleet_connect_failures_total", summary.Default, 2, time.Second, map[string]string{"code": "Unavailable"}),
	}}
	for _, tc := range []struct {
		name   string
		key    string
		exprs  []string
		passed []bool
		value  []bool // a value was read
	}{
		{"counter passes", "xdslab_events_missed_total", []string{"count==0", "rate<1"}, []bool{true, true}, []bool{true, true}},
		{"tagged fails", "xdslab_fleet_nacks_total{type:CDS}", []string{"count==0"}, []bool{false}, []bool{true}},
		{"rate", "xdslab_cache_hit_ratio", []string{"rate>0.8", "rate>95%"}, []bool{true, false}, []bool{true, true}},
		{"unknown metric fails", "xdslab_nothing_total", []string{"count==0"}, []bool{false}, []bool{false}},
		{"unknown tags fail", "xdslab_fleet_nacks_total{type:LDS}", []string{"count==0"}, []bool{false}, []bool{false}},
		{"aggregation it lacks fails", "xdslab_events_missed_total", []string{"p(99)<1"}, []bool{false}, []bool{false}},
		// A trend that observed nothing (a dead control plane) is no data, not 0: every
		// threshold on it fails.
		{"empty trend fails", "xdslab_push_latency_seconds", []string{"p(99)<500ms", "max<1s"}, []bool{false, false}, []bool{false, false}},
		{"measured trend passes", "xdslab_push_latency_seconds{kind:scale}", []string{"p(99)<500ms"}, []bool{true}, []bool{true}},
		// Any percentile a threshold names is computed, as k6 does, not only the ones every
		// trend carries.
		{"any percentile", "xdslab_push_latency_seconds{kind:scale}", []string{"p(95)<1s", "p(75)<1s", "p(0)>=0", "p(100)<10s", "p(99.99)<10s", "p(95)>1s"},
			[]bool{true, true, true, true, true, false}, []bool{true, true, true, true, true, true}},
		// The fleet writes a code (or type) series only for the values it saw: with the total
		// measured, a value it never saw was counted 0 times.
		{"code seen", "xdslab_fleet_connect_failures_total{code:Unavailable}", []string{"count==2"}, []bool{true}, []bool{true}},
		{"code never seen is 0", "xdslab_fleet_connect_failures_total{code:Internal}", []string{"count==0", "count>0", "rate==0"}, []bool{true, false, true}, []bool{true, true, true}},
		{"any percentile of no data fails", "xdslab_push_latency_seconds", []string{"p(95)<1s"}, []bool{false}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarios.Defaults()
			sc.Name = "t"
			sc.Clients[0].RequireFullConfig = false // the implicit threshold: TestEvaluateImplicitThresholds
			for _, e := range tc.exprs {
				sc.Thresholds[tc.key] = append(sc.Thresholds[tc.key], threshold.Threshold{Source: e})
			}
			sc.Complete()
			got, all := EvaluateThresholds(sc, res)
			require.Len(t, got, len(tc.exprs))
			want := true
			for i := range got {
				require.Equalf(t, tc.passed[i], got[i].Passed, "%s", got[i].Expression)
				require.Equal(t, tc.value[i], got[i].Value != nil)
				want = want && tc.passed[i]
			}
			require.Equal(t, want, all)
		})
	}
}

// TestEvaluateThresholdsStoresPercentiles: the percentiles thresholds name end up in the
// metrics the summary writes (every series of the metric), as points from HDR histograms and as
// bucket bounds from Prometheus buckets, and the summary stays valid.
func TestEvaluateThresholdsStoresPercentiles(t *testing.T) {
	bt, err := summary.NewBucketTrend(MetricDebounceDelay, summary.Time, summary.Buckets{Source: cpDebounceTime,
		Count: 18, Sum: 0.1007 * 18, LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: []uint64{0, 0, 18, 18, 18, 18, 18, 18}}, nil)
	require.NoError(t, err)
	res := summary.Results{Metrics: []summary.Metric{
		mustTrend(t, "xdslab_push_latency_seconds", nil, 1000, 2000, 3000, 4000),
		mustTrend(t, "xdslab_push_latency_seconds", map[string]string{"kind": "scale"}, 2500),
		bt,
	}}
	sc := scenarios.Defaults()
	sc.Name = "t"
	sc.Clients[0].RequireFullConfig = false
	sc.Churn = []scenarios.Churn{{Kind: scenarios.KindScale, Rate: 1}}
	sc.Thresholds["xdslab_push_latency_seconds{kind:scale}"] = []threshold.Threshold{{Source: "p(95)<1s"}}
	sc.Thresholds["xdslab_push_latency_seconds"] = []threshold.Threshold{{Source: "p(75)<3.1ms"}}
	sc.Thresholds[MetricDebounceDelay] = []threshold.Threshold{{Source: "p(95)<=1s"}}
	sc.Complete()
	got, passed := EvaluateThresholds(sc, res)
	require.True(t, passed, "%+v", got)
	for _, m := range res.Metrics[:2] {
		require.Contains(t, m.Values, "p(95)", m.Key())
		require.Contains(t, m.Values, "p(75)", m.Key())
	}
	require.InDelta(t, 3e-3, res.Metrics[0].Values["p(75)"], 1e-5)
	b, ok := res.Metrics[2].Bounded("p(95)")
	require.True(t, ok)
	require.Equal(t, 0.1, b.Lower())
	require.Equal(t, 1.0, b.Upper())
	require.NotContains(t, res.Metrics[2].Values, "p(95)", "a bucket quantile is a bound, not a value")
	s := summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: res.Metrics, Thresholds: got}}
	require.NoError(t, s.Validate())
}

// mustTrend is a latency trend of the values (µs) given, none for an empty one.
func mustTrend(t *testing.T, name string, tags map[string]string, us ...int64) summary.Metric {
	t.Helper()
	h := measure.NewLatencyHistogram()
	for _, v := range us {
		require.NoError(t, h.RecordValue(v))
	}
	m, err := summary.NewTrend(name, summary.Time, h, 1e-6, tags)
	require.NoError(t, err)
	return m
}

// TestEvaluateThresholdsBounded: a threshold on a quantile known only as a bucket passes when
// the bucket proves it, fails when it proves the opposite, and is otherwise inconclusive —
// which fails, with the reason in the verdict.
func TestEvaluateThresholdsBounded(t *testing.T) {
	mk := func(cum []uint64, n uint64) summary.Metric {
		m, err := summary.NewBucketTrend(MetricDebounceDelay, summary.Time, summary.Buckets{Source: cpDebounceTime,
			Count: n, Sum: 0.1007 * float64(n), LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: cum}, nil)
		require.NoError(t, err)
		return m
	}
	in := mk([]uint64{0, 0, 18, 18, 18, 18, 18, 18}, 18)     // every push in (0.1, 1]
	fast := mk([]uint64{18, 18, 18, 18, 18, 18, 18, 18}, 18) // every push within 10 ms
	slow := mk([]uint64{0, 0, 0, 0, 0, 0, 0, 0}, 18)         // every push above 30 s
	empty := mk(make([]uint64, 8), 0)
	for _, tc := range []struct {
		name         string
		m            summary.Metric
		expr         string
		passed       bool
		inconclusive bool
		reason       string
	}{
		{"the bucket proves it", in, "p(99)<=1s", true, false, "p(99) in (100ms, 1s]: the bucket bound proves it"},
		{"the first bucket proves it", fast, "p(99)<500ms", true, false, "p(99) ≤ 10ms: the bucket bound proves it"},
		{"the bucket disproves it", in, "p(99)<100ms", false, false, "p(99) in (100ms, 1s]: the bucket bound disproves it"},
		{"the +Inf bucket disproves it", slow, "max<30s", false, false, "max > 30s: the bucket bound disproves it"},
		// The interpolated p(99) was 991ms, which "passed"; nobody measured that.
		{"inconclusive fails", in, "p(99)<995ms", false, true, "inconclusive: p(99) in (100ms, 1s] is a bucket bound"},
		{"inconclusive med", in, "med<500ms", false, true, "inconclusive: med in (100ms, 1s]"},
		{"the exact mean is a value", in, "avg<101ms", true, false, ""},
		{"no data fails", empty, "p(99)<1s", false, false, "no data: pilot_debounce_time observed nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarios.Defaults()
			sc.Name = "t"
			sc.Thresholds[MetricDebounceDelay] = []threshold.Threshold{{Source: tc.expr}}
			sc.Clients[0].RequireFullConfig = false // the implicit threshold: TestEvaluateImplicitThresholds
			sc.Complete()
			got, all := EvaluateThresholds(sc, summary.Results{Metrics: []summary.Metric{tc.m}})
			require.Len(t, got, 1)
			th := got[0]
			require.Equal(t, tc.passed, th.Passed, th.Reason)
			require.Equal(t, tc.passed, all)
			require.Equal(t, tc.inconclusive, th.Inconclusive)
			if tc.reason == "" {
				require.Empty(t, th.Reason)
			} else {
				require.Contains(t, th.Reason, tc.reason)
			}
			if _, bounded := tc.m.Bounded(th.Expression[:strings.IndexAny(th.Expression, "<>=!")]); bounded {
				require.NotNil(t, th.Bound)
				require.Nil(t, th.Value, "a bound is not a value")
			}
			s := summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{tc.m}, Thresholds: got}}
			require.NoError(t, s.Validate())
		})
	}
}

// TestEvaluateImplicitThresholds: every client group gets the verdict "all its clients hold
// their full config at the end of the connect phase", unless it says requireFullConfig: false.
func TestEvaluateImplicitThresholds(t *testing.T) {
	incomplete := func(group string, n float64) summary.Metric {
		return summary.NewGauge(MetricConnectIncomplete, summary.Default, n, 0, 10, map[string]string{"group": group})
	}
	type verdict struct {
		group  string
		passed bool
		value  float64 // -1: none
	}
	for _, tc := range []struct {
		name    string
		relax   []string // groups with requireFullConfig: false
		metrics []summary.Metric
		want    []verdict
		all     bool
	}{
		{"every client configured", nil, []summary.Metric{incomplete("a", 0), incomplete("b", 0)},
			[]verdict{{"a", true, 0}, {"b", true, 0}}, true},
		{"none of a group configured", nil, []summary.Metric{incomplete("a", 10), incomplete("b", 0)},
			[]verdict{{"a", false, 10}, {"b", true, 0}}, false},
		{"one client missing", nil, []summary.Metric{incomplete("a", 0), incomplete("b", 1)},
			[]verdict{{"a", true, 0}, {"b", false, 1}}, false},
		{"not measured fails", nil, []summary.Metric{incomplete("a", 0)},
			[]verdict{{"a", true, 0}, {"b", false, -1}}, false},
		{"a relaxed group is not checked", []string{"b"}, []summary.Metric{incomplete("a", 0), incomplete("b", 10)},
			[]verdict{{"a", true, 0}}, true},
		{"every group relaxed", []string{"a", "b"}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarios.Defaults()
			sc.Name = "t"
			a, b := scenarios.DefaultClient(), scenarios.DefaultClient()
			a.Name, b.Name = "a", "b"
			sc.Clients = []scenarios.Client{a, b}
			for i := range sc.Clients {
				if slices.Contains(tc.relax, sc.Clients[i].Name) {
					sc.Clients[i].RequireFullConfig = false
				}
			}
			sc.Complete()
			require.NoError(t, sc.Validate())
			got, all := EvaluateThresholds(sc, summary.Results{Metrics: tc.metrics})
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				th := got[i]
				require.Equal(t, MetricConnectIncomplete, th.Metric)
				require.Equal(t, map[string]string{"group": w.group}, th.Tags)
				require.Equal(t, "value==0", th.Expression)
				require.Equal(t, w.passed, th.Passed)
				require.Contains(t, th.Description, "group "+w.group)
				if w.value < 0 {
					require.Nil(t, th.Value)
				} else {
					require.NotNil(t, th.Value)
					require.Equal(t, w.value, *th.Value)
				}
			}
			require.Equal(t, tc.all, all)
		})
	}
}

// TestConnectIncomplete: the per-group gauges every run and shard write, with their total.
func TestConnectIncomplete(t *testing.T) {
	sc := scenarios.Defaults()
	a, b, c := scenarios.DefaultClient(), scenarios.DefaultClient(), scenarios.DefaultClient()
	a.Name, b.Name, c.Name = "a", "b", "c"
	sc.Clients = []scenarios.Client{a, b, c}
	// A shard holding 3 clients of a (2 configured) and 2 of b (none), and none of c.
	ms := ConnectIncomplete(sc, map[string]int{"a": 3, "b": 2}, map[string]uint64{"a": 2})
	res := summary.Results{Metrics: ms}
	for _, tc := range []struct {
		tags       map[string]string
		value, max float64
	}{
		{map[string]string{"group": "a"}, 1, 3},
		{map[string]string{"group": "b"}, 2, 2},
		{map[string]string{"group": "c"}, 0, 0},
		{nil, 3, 5},
	} {
		m, ok := res.Find(MetricConnectIncomplete, tc.tags)
		require.Truef(t, ok, "%v", tc.tags)
		require.Equalf(t, tc.value, m.Values["value"], "%v", tc.tags)
		require.Equalf(t, tc.max, m.Values["max"], "%v", tc.tags)
	}
}

func FuzzReadCP(f *testing.F) {
	f.Add(exposition)
	f.Fuzz(func(t *testing.T, text string) {
		dec := expfmt.NewDecoder(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
		var fams []*dto.MetricFamily
		for range 1000 {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				break
			}
			fams = append(fams, mf)
		}
		s := ReadCP(fams)
		if s.hasDebounce {
			// Whatever the exposition, a bucket trend is valid or an error, never a panic.
			if m, err := bucketTrend("x", summary.Time, cpDebounceTime, s.debounce); err == nil {
				sum := summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{m}}}
				if err := sum.Validate(); err != nil {
					t.Fatalf("bucket trend does not validate: %v", err)
				}
			}
		}
	})
}
