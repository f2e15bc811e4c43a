package run

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/simulator"
)

// stopAfterEvents is a progress writer that closes stop once a measure-phase line reports at
// least n events applied.
type stopAfterEvents struct {
	n    int
	stop chan struct{}
	once sync.Once
}

var progressEvents = regexp.MustCompile(`measure: .* events (\d+)`)

func (w *stopAfterEvents) Write(p []byte) (int, error) {
	if m := progressEvents.FindSubmatch(p); m != nil {
		if n, _ := strconv.Atoi(string(m[1])); n >= w.n {
			w.once.Do(func() { close(w.stop) })
		}
	}
	return len(p), nil
}

// TestRunStopWritesResults: a run stopped in its measure phase (the CLI's Ctrl-C) still
// collects, evaluates and writes what it measured, marked interrupted in summary.json and
// junit.xml, and returns ErrInterrupted with that summary (issue 30: Ctrl-C lost the run).
func TestRunStopWritesResults(t *testing.T) {
	sc := loadScenario(t, strings.Replace(smallScenario, "duration: 3s", "duration: 5m", 1))
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := &stopAfterEvents{n: 3, stop: make(chan struct{})}
	s, err := Run(ctx, sc, Options{Out: out, Stop: w.stop, Progress: w, ProgressInterval: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrInterrupted)
	require.NotNil(t, s)
	require.Contains(t, Interrupted(s), "interrupted in the measure phase")

	back, err := summary.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.Equal(t, Interrupted(s), Interrupted(back))
	require.NotEmpty(t, back.Results.Thresholds, "thresholds are evaluated on what was measured")
	require.GreaterOrEqual(t, find(t, back, collect.MetricSimEvents, nil).Values["count"], 3.0)
	measure := find(t, back, collect.MetricPhaseDuration, map[string]string{"phase": "measure"}).Values["value"]
	require.Less(t, measure, sc.Duration.D().Seconds(), "the measure phase ended at the stop, not at the scenario's end")
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	require.Contains(t, string(junit), `type="interrupted"`)
	_, err = os.Stat(filepath.Join(out, "report.html"))
	require.NoError(t, err)
}

// TestRunStopDuringConnect: a stop before any churn still writes the connect figures.
func TestRunStopDuringConnect(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	out := t.TempDir()
	stop := make(chan struct{})
	close(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{Out: out, Stop: stop})
	require.ErrorIs(t, err, ErrInterrupted)
	require.Contains(t, Interrupted(s), "no churn was applied")
	_, err = summary.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
}

// failingSink fails the events whose ids are in fail, and applies the others through sink.
type failingSink struct {
	simulator.Sink
	fail map[uint64]bool
}

func (s failingSink) Apply(ctx context.Context, ev simulator.Event) error {
	if s.fail[ev.ID] {
		return errors.New("open .ns-0.svc-1.yaml.tmp-42: no such file or directory")
	}
	return s.Sink.Apply(ctx, ev)
}

// TestRunSinkFailureGoesOn: events the sink fails to apply are counted failed and named in the
// summary; the run goes on, the events after them are measured, none is counted missed, and
// the outputs are written (issue 31: a vanished sink directory aborted the run with nothing
// written).
func TestRunSinkFailureGoesOn(t *testing.T) {
	// delayedSink serves ServiceEntries only: endpoint churn.
	sc := loadScenario(t, strings.Replace(smallScenario, "  - {kind: config-change, every: 1s}\n", "", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cache, target, stopSrv := serveSnapshotCache(t, ctx)
	defer stopSrv()
	sink := failingSink{Sink: &delayedSink{cache: cache, drop: func(simulator.Event) bool { return false }}, fail: map[uint64]bool{2: true, 3: true}}
	out := t.TempDir()
	var progress syncbuf.Buffer
	s, err := Run(ctx, sc, Options{Out: out, Target: target, Sink: sink, Progress: &progress,
		Logger: slog.New(slog.NewTextHandler(&progress, nil))})
	require.NoError(t, err)
	// One line for the burst of two failures, one when the sink works again; no raw log record.
	require.Equal(t, 1, strings.Count(progress.String(), "the sink failed to apply event 2"), progress.String())
	require.NotContains(t, progress.String(), "event 3 (")
	require.Contains(t, progress.String(), "the sink applies events again, after 2 failed")
	require.NotContains(t, progress.String(), "level=WARN")
	back, err := summary.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.Equal(t, 2.0, find(t, back, collect.MetricSimFailed, nil).Values["count"])
	require.Greater(t, find(t, back, collect.MetricSimEvents, nil).Values["count"], 2.0, "the events after the failures were applied")
	require.Equal(t, find(t, back, collect.MetricSimEvents, nil).Values["count"], find(t, back, "xdslab_probe_events_total", nil).Values["count"],
		"the failed events are left out of the probes")
	require.Equal(t, 0.0, find(t, back, collect.MetricEventsMissed, nil).Values["count"], "a failed event is not a missed one")
	require.Contains(t, s.Metadata.Labels["note.sink"], "failed to apply 2 of")
	require.Contains(t, s.Metadata.Labels["note.sink"], "no such file or directory")
}

// TestRunRefusesUnwritableOut: --out is checked before anything runs.
func TestRunRefusesUnwritableOut(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	started := time.Now()
	_, err := Run(context.Background(), sc, Options{Out: "/dev/null/sub"})
	require.ErrorContains(t, err, "--out")
	require.ErrorContains(t, err, "/dev/null/sub")
	t.Logf("refused in %s", time.Since(started))
}
