package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

func TestHistSnapQuantile(t *testing.T) {
	// 10 observations: 4 in (0, 0.1], 4 in (0.1, 0.2], 2 in (0.2, 1]; cumulative with +Inf.
	h := histSnap{count: 10, sum: 2, bounds: []float64{0.1, 0.2, 1, math.Inf(1)}, cum: []float64{4, 8, 10, 10}}
	for _, tc := range []struct{ q, want float64 }{
		{0, 0},
		{0.2, 0.05}, // rank 2 of 4 in the first bucket: halfway to 0.1
		{0.4, 0.1},  // the top of the first bucket
		{0.6, 0.15}, // rank 6: halfway through the second
		{0.9, 0.6},  // rank 9: halfway through (0.2, 1]
		{1, 1},      // the last finite bound
		{0.999, 0.996},
	} {
		require.InDeltaf(t, tc.want, h.quantile(tc.q), 1e-9, "q=%g", tc.q)
	}
	require.Equal(t, 0.0, histSnap{}.quantile(0.5), "empty")

	prev := histSnap{count: 4, sum: 0.2, bounds: h.bounds, cum: []float64{4, 4, 4, 4}}
	d := h.sub(prev)
	require.Equal(t, 6.0, d.count)
	require.Equal(t, []float64{0, 4, 6, 6}, d.cum)
	require.InDelta(t, 0.15, d.quantile(1.0/3), 1e-9)
}

func TestBucketTrend(t *testing.T) {
	h := histSnap{count: 2, sum: 0.3, bounds: []float64{0.1, 0.2, math.Inf(1)}, cum: []float64{0, 2, 2}}
	m := bucketTrend("d", summary.Time, h)
	require.Equal(t, summary.Trend, m.Type)
	require.InDelta(t, 0.15, m.Values["avg"], 1e-9)
	require.InDelta(t, 0.1, m.Values["min"], 1e-9, "the lower bound of the first bucket with observations")
	require.InDelta(t, 0.2, m.Values["max"], 1e-9)
	require.Nil(t, m.Histogram)
	s := summary.Summary{Version: summary.Version, Results: summary.Results{Metrics: []summary.Metric{m, bucketTrend("e", summary.Time, histSnap{})}}}
	require.NoError(t, s.Validate(), "a valid trend, empty or not")
}

// exposition is the text format of an Istio-like control plane's /metrics.
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
xds_cache_reads{type="cds",result="hit"} 90
xds_cache_reads{type="cds",result="miss"} 10
xds_cache_reads{type="eds",result="bypass"} 5
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
	s := readCP(parseExposition(t, exposition))
	require.True(t, s.ok)
	// Istio has no push-cycle counter: pilot_debounce_time counts one observation per cycle.
	require.Equal(t, 6.0, s.pushCycles)
	require.Contains(t, s.cyclesFrom, "pilot_debounce_time")
	require.Equal(t, 24.0, s.inbound)
	require.Equal(t, 90.0, s.cacheReads["cds"]["hit"])
	require.Equal(t, 5.0, s.cacheReads["eds"]["bypass"])
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
	s = readCP(parseExposition(t, exposition+"# TYPE xdslab_cp_push_cycles_total counter\nxdslab_cp_push_cycles_total 4\n"))
	require.Equal(t, 4.0, s.pushCycles)
	require.Equal(t, cpPushCycles, s.cyclesFrom)

	require.False(t, readCP(nil).ok, "no families: not available")
}

func TestEvaluateThresholds(t *testing.T) {
	res := summary.Results{Metrics: []summary.Metric{
		summary.NewCounter("xdslab_events_missed_total", summary.Default, 0, time.Second, nil),
		summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 3, time.Second, map[string]string{"type": "CDS"}),
		summary.NewRate("xdslab_cache_hit_ratio", 9, 1, nil),
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarios.Defaults()
			sc.Name = "t"
			sc.Clients[0].RequireFullConfig = false // the implicit threshold: TestEvaluateImplicitThresholds
			for _, e := range tc.exprs {
				sc.Thresholds[tc.key] = append(sc.Thresholds[tc.key], scenarios.Threshold{Source: e})
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
	require.Equal(t, " (a 1 of 3, b 2 of 2)", groupShortfall(map[string]int{"a": 3, "b": 2}, map[string]uint64{"a": 2}))
	require.Empty(t, groupShortfall(map[string]int{"a": 3}, map[string]uint64{"a": 3}))
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
		s := readCP(fams)
		if s.hasDebounce {
			_ = s.debounce.quantile(0.99)
			_ = bucketTrend("x", summary.Time, s.debounce)
		}
	})
}
