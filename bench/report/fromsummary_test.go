package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
)

// TestFromSummary: a run known only by its summary (a merged distributed run) gets the run's
// report: the push latency plot from the summary's histograms (overall and per kind), the
// convergence-over-time and events-over-time plots from its event records (in order of t0,
// from the measure phase), and, without a scenario, the config the summary embeds.
func TestFromSummary(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	h := measure.NewLatencyHistogram()
	for _, v := range []int64{1000, 2000, 40_000} {
		require.NoError(t, h.RecordValue(v))
	}
	all, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, nil)
	require.NoError(t, err)
	flap, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, map[string]string{"kind": "endpoint-flap"})
	require.NoError(t, err)
	group, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, map[string]string{"group": "sidecars"})
	require.NoError(t, err)
	conv, err := summary.NewTrend(fleet.MetricConvergence, summary.Time, h, 1e-6, nil)
	require.NoError(t, err)
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "merge", Started: at, Ended: at.Add(10 * time.Second), DurationSeconds: 10,
			Labels: map[string]string{"scenario": "sharded", "shards": "2"},
			Phases: []summary.Phase{{Name: "measure", Start: at.Add(time.Second), End: at.Add(8 * time.Second)}}},
		Config: []byte(`{"name":"sharded","seed":7}`),
		Results: summary.Results{Passed: true, Metrics: []summary.Metric{all, flap, group, conv},
			Events: []summary.Event{
				{ID: 1, Kind: "endpoint-flap", T0: at.Add(3 * time.Second), Reached: 2, Observed: 2, PushLatencies: 2, ConvergenceSeconds: 0.04},
				{ID: 2, Kind: "endpoint-flap", T0: at.Add(2 * time.Second), Reached: 2, Observed: 2, PushLatencies: 2, ConvergenceSeconds: 0.002},
				{ID: 3, Kind: "endpoint-flap"}, // never applied: no t0
			}}}
	r, err := FromSummary(s, nil, "target:15010 (2 fleet shard(s), merged)")
	require.NoError(t, err)
	require.EqualValues(t, 3, r.Matches.PushLatencyAll.TotalCount())
	require.EqualValues(t, 3, r.Matches.Convergence.TotalCount())
	require.Equal(t, []string{"endpoint-flap"}, r.Matches.Kinds(), "per-kind push latency only (not per group)")
	require.Len(t, r.Matches.Events, 2)
	require.Equal(t, 40*time.Millisecond, r.Matches.Events[0].Convergence)
	require.Equal(t, at.Add(time.Second), r.MeasureStart)
	require.Equal(t, []Point{{At: time.Second, Events: 1}, {At: 2 * time.Second, Events: 2}}, r.Timeline)

	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, r))
	html := buf.String()
	for _, want := range []string{"<title>xdslab run sharded</title>", "target:15010 (2 fleet shard(s), merged)", `&#34;seed&#34;: 7`, "convergence (max over clients)"} {
		require.Contains(t, html, want)
	}
	require.NotContains(t, html, "mean push latency", "a summary holds no per-event mean latency: no series of zeros")
	require.NotContains(t, html, "no observations", "every latency plot drawn")
	require.NotContains(t, html, "no samples", "events over time drawn from the events' t0")
}
