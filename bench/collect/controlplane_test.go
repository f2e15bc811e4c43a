package collect

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/internal/summary"
)

// cpSample reads a control plane's /metrics given as the text format.
func cpSample(t *testing.T, text string) CPSample {
	t.Helper()
	return ReadCP(parseExposition(t, text))
}

// runCP runs collectCP on hand-made samples and returns its figures and notes.
func runCP(first, start, end CPSample, events int) (summary.Results, map[string]string) {
	var ms []summary.Metric
	notes := map[string]string{}
	in := RunInput{Target: Target{Kind: "in-process"}, CPFirst: first, CPStart: start, CPEnd: end}
	collectCP(in, notes, func(m ...summary.Metric) { ms = append(ms, m...) }, time.Minute, events)
	return summary.Results{Metrics: ms}, notes
}

func cpCounters(cycles, hit, miss, pushes, rejects float64) string {
	return "# TYPE xdslab_cp_push_cycles_total counter\nxdslab_cp_push_cycles_total " + ftoa(cycles) + "\n" +
		"# TYPE pilot_inbound_updates counter\npilot_inbound_updates{type=\"eds\"} " + ftoa(cycles*2) + "\n" +
		"# TYPE xds_cache_reads counter\n" +
		"xds_cache_reads{type=\"cds\",result=\"hit\"} " + ftoa(hit) + "\n" +
		"xds_cache_reads{type=\"cds\",result=\"miss\"} " + ftoa(miss) + "\n" +
		"# TYPE pilot_xds_pushes counter\npilot_xds_pushes{type=\"cds\"} " + ftoa(pushes) + "\n" +
		"# TYPE pilot_total_xds_rejects counter\npilot_total_xds_rejects{type=\"cds\"} " + ftoa(rejects) + "\n"
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Responses and rejects are counts of the run: the end sample less the first one.
func TestCollectCPResponsesAreOfTheRun(t *testing.T) {
	first := cpSample(t, cpCounters(10, 100, 10, 400, 7))
	start := cpSample(t, cpCounters(20, 150, 20, 420, 7))
	end := cpSample(t, cpCounters(30, 200, 30, 450, 8))
	res, notes := runCP(first, start, end, 10)
	for _, tags := range []map[string]string{nil, {"type": "cds"}} {
		m, ok := res.Find(MetricCPResponses, tags)
		require.True(t, ok, "%v", tags)
		require.Equal(t, 50.0, m.Values["count"], "%v", tags)
		m, ok = res.Find(MetricCPRejects, tags)
		require.True(t, ok, "%v", tags)
		require.Equal(t, 1.0, m.Values["count"], "%v", tags)
	}
	require.Contains(t, notes["responses"], "connect, measure and drain")

	// Without a first sample, there is no count of the run.
	res, notes = runCP(CPSample{}, start, end, 10)
	_, ok := res.Find(MetricCPResponses, nil)
	require.False(t, ok)
	_, ok = res.Find(MetricCPRejects, nil)
	require.False(t, ok)
	require.Contains(t, notes["responses"], "left out")
}

// A counter that went down between two scrapes: the target restarted, and no difference of its
// counters is a count of the run.
func TestCollectCPRestart(t *testing.T) {
	first := cpSample(t, cpCounters(10, 100, 10, 400, 7))
	start := cpSample(t, cpCounters(50, 900, 100, 420, 7))
	end := cpSample(t, cpCounters(5, 10, 40, 30, 1))
	res, notes := runCP(first, start, end, 10)
	for _, name := range []string{MetricPushCycles, MetricCPInbound, MetricEventsPerPush, MetricCacheHitRatio, MetricCPResponses, MetricCPRejects} {
		_, ok := res.Find(name, nil)
		require.False(t, ok, "%s reported across a restart", name)
	}
	for _, k := range []string{"debounce", "cache", "responses"} {
		require.Contains(t, notes[k], "restarted", k)
	}

	// A restart between the first sample and the start: the measure phase's figures stand, the
	// whole run's do not.
	restarted := cpSample(t, cpCounters(2, 5, 5, 10, 0))
	end = cpSample(t, cpCounters(6, 25, 15, 60, 1))
	res, notes = runCP(first, restarted, end, 8)
	m, ok := res.Find(MetricPushCycles, nil)
	require.True(t, ok)
	require.Equal(t, 4.0, m.Values["count"])
	m, ok = res.Find(MetricEventsPerPush, nil)
	require.True(t, ok)
	require.Equal(t, 2.0, m.Values["value"])
	_, ok = res.Find(MetricCacheHitRatio, nil)
	require.False(t, ok, "cache reads since the first sample span the restart")
	require.Contains(t, notes["cache"], "restarted")
}

// The cache hit ratio needs the first sample: without it, it would be a lifetime figure.
func TestCollectCPCacheNeedsFirstSample(t *testing.T) {
	start := cpSample(t, cpCounters(20, 150, 20, 420, 7))
	end := cpSample(t, cpCounters(30, 200, 30, 450, 8))
	res, notes := runCP(CPSample{}, start, end, 10)
	_, ok := res.Find(MetricCacheHitRatio, nil)
	require.False(t, ok)
	require.Contains(t, notes["cache"], "left out")
	require.NotContains(t, notes["cache"], "over connect")

	first := cpSample(t, cpCounters(10, 100, 10, 400, 7))
	res, _ = runCP(first, start, end, 10)
	m, ok := res.Find(MetricCacheHitRatio, nil)
	require.True(t, ok)
	require.Equal(t, 100.0, m.Values["passes"])
	require.Equal(t, 20.0, m.Values["fails"])
}

// No push cycles: events per push is not 0 but unknown.
func TestCollectCPNoPushCycles(t *testing.T) {
	start := cpSample(t, cpCounters(20, 150, 20, 420, 7))
	res, notes := runCP(start, start, start, 10)
	m, ok := res.Find(MetricPushCycles, nil)
	require.True(t, ok)
	require.Equal(t, 0.0, m.Values["count"], "zero push cycles is a count")
	_, ok = res.Find(MetricEventsPerPush, nil)
	require.False(t, ok, "events per push of no push cycles")
	require.Contains(t, notes["debounce"], "no push cycles")
	_, ok = res.Find(MetricCacheHitRatio, nil)
	require.False(t, ok, "a hit ratio of no reads")
}

// A target without pilot_inbound_updates has no inbound count, not 0.
func TestCollectCPInboundNotExported(t *testing.T) {
	s := cpSample(t, "# TYPE xdslab_cp_push_cycles_total counter\nxdslab_cp_push_cycles_total 3\n")
	e := cpSample(t, "# TYPE xdslab_cp_push_cycles_total counter\nxdslab_cp_push_cycles_total 5\n")
	res, _ := runCP(s, s, e, 4)
	_, ok := res.Find(MetricCPInbound, nil)
	require.False(t, ok)
	m, ok := res.Find(MetricPushCycles, nil)
	require.True(t, ok)
	require.Equal(t, 2.0, m.Values["count"])
}

// istiod's xds_cache_reads: type is hit or miss, no result label and no per-xDS-type split
// (pilot/pkg/model/typed_xds_cache.go: xdsCacheReads.With(typeTag.Value("hit"))).
const istiodCacheReads = "# TYPE xds_cache_reads counter\nxds_cache_reads{type=\"hit\"} %d\nxds_cache_reads{type=\"miss\"} %d\n"

func TestCollectCPIstiodCacheReads(t *testing.T) {
	first := cpSample(t, fmtf(istiodCacheReads, 100, 50))
	end := cpSample(t, fmtf(istiodCacheReads, 190, 60))
	res, notes := runCP(first, first, end, 0)
	m, ok := res.Find(MetricCacheHitRatio, nil)
	require.True(t, ok)
	require.Equal(t, 90.0, m.Values["passes"])
	require.Equal(t, 10.0, m.Values["fails"])
	require.InDelta(t, 0.9, m.Values["rate"], 1e-12)
	for _, typ := range []string{"hit", "miss", ""} {
		_, ok := res.Find(MetricCacheHitRatio, map[string]string{"type": typ})
		require.False(t, ok, "no per-type row %q", typ)
	}
	require.Contains(t, notes["cache"], "no per-type split")
}

func fmtf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// An external control plane's CPU is the difference of process_cpu_seconds_total: across a
// restart it is no figure, and without the first sample it is not known.
func TestUsageBetweenTargetRestart(t *testing.T) {
	cpu := func(v float64) CPSample {
		return cpSample(t, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "+ftoa(v)+"\n")
	}
	u := usageBetween(ProcessUsage{}, ProcessUsage{}, nil, cpu(30), cpu(42), "external", cpu(35))
	require.True(t, u.hasTargetCPU)
	require.Equal(t, 12.0, u.targetCPU)

	u = usageBetween(ProcessUsage{}, ProcessUsage{}, nil, cpu(30), cpu(4), "external", cpu(35))
	require.False(t, u.hasTargetCPU, "CPU across a restart")
	require.Contains(t, u.note, "restarted")
	require.Equal(t, "process_cpu_seconds_total", resetBetween(cpu(30), cpu(4)), "what a fleet shard checks")

	// Back above its first value by the end, the restart shows against the sample between.
	u = usageBetween(ProcessUsage{}, ProcessUsage{}, nil, cpu(30), cpu(40), "external", cpu(2))
	require.False(t, u.hasTargetCPU)
	require.Contains(t, u.note, "restarted")

	u = usageBetween(ProcessUsage{}, ProcessUsage{}, nil, CPSample{}, cpu(40), "external")
	require.False(t, u.hasTargetCPU)
	require.Contains(t, u.note, "could not be read when the run started")
}

// Push cycles and inbound updates count the measure and drain phases: their rates are over
// those phases, not over the whole run.
func TestCollectCPRatesOverMeasureAndDrain(t *testing.T) {
	start := cpSample(t, cpCounters(20, 150, 20, 420, 7))
	end := cpSample(t, cpCounters(150, 200, 30, 450, 8))
	t0 := time.Unix(1000, 0)
	var ms []summary.Metric
	in := RunInput{Target: Target{Kind: "in-process"}, CPFirst: start, CPStart: start, CPEnd: end,
		Phases: []summary.Phase{{Name: "connect", Start: t0, End: t0.Add(30 * time.Second)},
			{Name: "measure", Start: t0.Add(30 * time.Second), End: t0.Add(90 * time.Second)},
			{Name: "drain", Start: t0.Add(90 * time.Second), End: t0.Add(95 * time.Second)}}}
	collectCP(in, map[string]string{}, func(m ...summary.Metric) { ms = append(ms, m...) }, 100*time.Second, 10)
	res := summary.Results{Metrics: ms}
	m, ok := res.Find(MetricPushCycles, nil)
	require.True(t, ok)
	require.Equal(t, 130.0, m.Values["count"])
	require.InDelta(t, 2.0, m.Values["rate"], 1e-12, "130 cycles in 65 s of measure and drain")
	m, ok = res.Find(MetricCPInbound, nil)
	require.True(t, ok)
	require.InDelta(t, 4.0, m.Values["rate"], 1e-12)
	m, ok = res.Find(MetricCPResponses, nil)
	require.True(t, ok)
	require.InDelta(t, 0.3, m.Values["rate"], 1e-12, "responses over the whole run")
}
