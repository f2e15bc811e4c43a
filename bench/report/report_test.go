package report

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/internal/summary"
)

func TestWriteJUnit(t *testing.T) {
	v := 0.42
	lo, hi := 0.1, 1.0
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "run", Started: start, Ended: start.Add(12 * time.Second),
			DurationSeconds: 12.5, Labels: map[string]string{"scenario": "quickstart"}},
		Results: summary.Results{Thresholds: []summary.Threshold{
			{Metric: "xdslab_push_latency_seconds", Expression: "p(99)<500ms", Passed: true, Value: &v},
			{Metric: "xdslab_fleet_nacks_total", Tags: map[string]string{"type": "CDS"}, Expression: "count==0", Passed: false, Value: &v},
			{Metric: "xdslab_nothing_total", Expression: "count==0", Passed: false},
			{Metric: collect.MetricDebounceDelay, Expression: "p(99)<500ms", Passed: false, Bound: &summary.Bound{Gt: &lo, Le: &hi}, Inconclusive: true,
				Reason: "inconclusive: p(99) in (100ms, 1s] is a bucket bound that neither proves nor disproves it"},
			{Metric: collect.MetricConnectIncomplete, Tags: map[string]string{"group": "sidecars"}, Expression: "value==0", Passed: false, Value: &v,
				Description: "implicit: every client of group sidecars holds its first full config by the end of the connect phase"},
		}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, s))
	golden.Check(t, filepath.Join("testdata", "junit.golden.xml"), buf.Bytes())
}

// TestHTMLBucketTrend: the HTML report shows a bucket trend's count, exact mean and bounds, and
// a threshold's bound and reason, never an interpolated point.
func TestHTMLBucketTrend(t *testing.T) {
	m, err := summary.NewBucketTrend(collect.MetricDebounceDelay, summary.Time, summary.Buckets{Source: "pilot_debounce_time", Count: 18,
		Sum: 18 * 0.1007, LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: []uint64{0, 0, 18, 18, 18, 18, 18, 18}}, nil)
	require.NoError(t, err)
	got := formatMetricValues(m)
	require.Equal(t, "avg=100.7ms count=18 max in (100ms, 1s] med in (100ms, 1s] min in (100ms, 1s] p(50) in (100ms, 1s] "+
		"p(90) in (100ms, 1s] p(99) in (100ms, 1s] p(99.9) in (100ms, 1s] (pilot_debounce_time buckets)", got)
	lo, hi := 0.1, 1.0
	row := reportThresholdOf(summary.Results{Metrics: []summary.Metric{m}}, summary.Threshold{Metric: collect.MetricDebounceDelay,
		Expression: "p(99)<500ms", Bound: &summary.Bound{Gt: &lo, Le: &hi}, Inconclusive: true, Reason: "inconclusive: …"})
	require.Equal(t, "in (100ms, 1s]", row.Value)
	require.True(t, row.Inconclusive)
	require.Equal(t, "inconclusive: …", row.Reason)
	var buf bytes.Buffer
	require.NoError(t, reportTmpl.Execute(&buf, reportData{Name: "x", Thresholds: []reportThreshold{row}}))
	require.Contains(t, buf.String(), "✗ inconclusive")
}

// TestHTMLGaugeValues: a gauge that only rose to its value shows the value alone (no
// meaningless min=0); one that moved otherwise keeps its min and max.
func TestHTMLGaugeValues(t *testing.T) {
	for _, tc := range []struct {
		m    summary.Metric
		want string
	}{
		{summary.NewGauge("xdslab_cpu_seconds", summary.Time, 4.15, 0, 4.15, nil), "value=4.15s"},
		{summary.NewGauge("xdslab_fleet_connected", summary.Default, 500, 219, 500, nil), "max=500 min=219 value=500"},
	} {
		if got := formatMetricValues(tc.m); got != tc.want {
			t.Errorf("formatMetricValues(%s) = %q, want %q", tc.m.Name, got, tc.want)
		}
	}
}
