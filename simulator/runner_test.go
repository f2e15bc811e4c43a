package simulator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

// lateSink takes cost of virtual time per Apply.
type lateSink struct {
	clk  *simulator.VirtualClock
	cost time.Duration
}

func (s lateSink) Init(context.Context, []istioconfig.Config) error { return nil }
func (s lateSink) Apply(context.Context, simulator.Event) error     { s.clk.Advance(s.cost); return nil }
func (s lateSink) Close() error                                     { return nil }

func TestLateEventsCountedNotShifted(t *testing.T) {
	cfg := simulator.Config{Seed: 1, Duration: 10 * time.Second, Topology: simtest.SmallTopology(),
		Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Every: time.Second}}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	clk := simulator.NewVirtualClock(simtest.Epoch)
	reg := prometheus.NewPedanticRegistry()
	m, err := simulator.NewMetrics(reg)
	require.NoError(t, err)
	var seen []simulator.Event
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: clk, Sink: lateSink{clk, 1500 * time.Millisecond}, Metrics: m,
		OnEvent: func(ev simulator.Event) {
			require.True(t, ev.T0.IsZero())
			require.Equal(t, simtest.Epoch.Add(ev.Scheduled), ev.Expectation.Scheduled)
		},
		OnApplied: func(ev simulator.Event) { seen = append(seen, ev) }})
	require.NoError(t, err)
	require.NoError(t, r.Init(context.Background()))
	stats, err := r.Run(context.Background())
	require.NoError(t, err)
	// Arrivals at 1s … 9s; each apply takes 1.5s, so event k (k >= 2) fires 0.5s*(k-1) late.
	require.Len(t, seen, 9)
	for i, ev := range seen {
		k := i + 1
		require.Equal(t, time.Duration(k)*time.Second, ev.Scheduled, "never shifted")
		require.Equal(t, simtest.Epoch.Add(ev.Scheduled), ev.Expectation.Scheduled)
		wantLate := time.Duration(k-1) * 500 * time.Millisecond
		require.Equal(t, k > 1, ev.Late, "event %d", k)
		require.Equal(t, wantLate, ev.Lateness, "event %d", k)
		require.Equal(t, ev.Fired.Add(1500*time.Millisecond), ev.T0)
		require.Equal(t, ev.T0, ev.Expectation.T0)
	}
	require.Equal(t, 9, stats.Events)
	require.Equal(t, 8, stats.Late)
	require.Equal(t, 4*time.Second, stats.MaxLateness)
	require.Equal(t, 18*time.Second, stats.TotalLateness)
	require.Equal(t, simulator.KindStats{Events: 9, Late: 8}, stats.ByKind[simulator.ConfigChange])
	require.Equal(t, 9.0, testutil.ToFloat64(m.Events.WithLabelValues("config-change")))
	require.Equal(t, 8.0, testutil.ToFloat64(m.Late.WithLabelValues("config-change")))
	n, err := testutil.GatherAndCount(reg, "xdslab_sim_apply_duration_seconds", "xdslab_sim_event_lateness_seconds")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	// The run lasts its duration: the clock ends at start + 10s at least.
	require.False(t, clk.Now().Before(simtest.Epoch.Add(10*time.Second)))
}

func TestRunnerStopsOnCancel(t *testing.T) {
	cfg := simulator.Config{Seed: 1, Duration: time.Hour, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{{Kind: simulator.EndpointFlap, Rate: 1}}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	applied := 0
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: &simulator.WallClock{}, Sink: simulator.SinkFuncs{}, OnApplied: func(simulator.Event) { applied++ }})
	require.NoError(t, err)
	require.NoError(t, r.Init(ctx))
	cancel()
	_, err = r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, applied)
}

// TestRunnerStopsWhenBehind: a runner whose events are all late (none waits for its time)
// still stops at its context's end, at the next event: before, it applied every late event of
// the timeline, deaf to the context (a SIGTERM'd run with a dense churn went on).
func TestRunnerStopsWhenBehind(t *testing.T) {
	cfg := simulator.Config{Seed: 1, Duration: time.Hour, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{{Kind: simulator.EndpointFlap, Rate: 100}}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := simulator.NewVirtualClock(simtest.Epoch)
	applied := 0
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: clk, Sink: simulator.SinkFuncs{ApplyFunc: func(context.Context, simulator.Event) error {
		clk.Advance(2 * time.Hour) // every later event is late
		cancel()
		return nil
	}}, OnApplied: func(simulator.Event) { applied++ }})
	require.NoError(t, err)
	require.NoError(t, r.Init(ctx))
	_, err = r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, applied)
}

// TestRunnerSinkError: an event the sink fails to apply is counted failed, reported with its
// error, and the run goes on to the events after it (issue 31: a write error is not the end).
func TestRunnerSinkError(t *testing.T) {
	sim, err := simulator.New(simtest.MixedConfig(1))
	require.NoError(t, err)
	boom := fmt.Errorf("disk full")
	calls := 0
	var failed []uint64
	var failErrs []error
	applied := 0
	reg := prometheus.NewPedanticRegistry()
	m, err := simulator.NewMetrics(reg)
	require.NoError(t, err)
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Metrics: m,
		Sink: simulator.SinkFuncs{ApplyFunc: func(context.Context, simulator.Event) error {
			calls++
			if calls >= 2 && calls <= 4 {
				return boom
			}
			return nil
		}},
		OnFailed:  func(ev simulator.Event, err error) { failed = append(failed, ev.ID); failErrs = append(failErrs, err) },
		OnApplied: func(simulator.Event) { applied++ },
	})
	require.NoError(t, err)
	stats, err := r.Run(context.Background())
	require.NoError(t, err, "a failed event does not end the run")
	require.Greater(t, calls, 5)
	require.Len(t, failed, 3)
	for _, e := range failErrs {
		require.ErrorIs(t, e, boom)
	}
	require.Equal(t, 3, stats.Failed)
	require.Equal(t, calls-3, stats.Events)
	require.Equal(t, calls-3, applied)
	require.ErrorIs(t, stats.FirstFailure, boom)
	byKind := 0
	for k, ks := range stats.ByKind {
		byKind += ks.Failed
		require.Equal(t, float64(ks.Failed), testutil.ToFloat64(m.Failed.WithLabelValues(string(k))))
	}
	require.Equal(t, 3, byKind)

	// A canceled context still ends the run at once, even when the sink reports it as an error.
	sim2, err := simulator.New(simtest.MixedConfig(1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r2, err := simulator.NewRunner(sim2, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: simulator.SinkFuncs{ApplyFunc: func(ctx context.Context, _ simulator.Event) error {
		cancel()
		return ctx.Err()
	}}, OnFailed: func(simulator.Event, error) { t.Error("a canceled apply is not a failed event") }})
	require.NoError(t, err)
	_, err = r2.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

// oversleepClock wakes every wait late, as timers do on a loaded machine.
type oversleepClock struct {
	*simulator.VirtualClock
	by time.Duration
}

func (c oversleepClock) WaitUntil(ctx context.Context, t time.Time) error {
	return c.VirtualClock.WaitUntil(ctx, t.Add(c.by))
}

// A wait that oversleeps makes its event late: the offered load fell behind the schedule as
// surely as when the runner was behind before the wait. Jitter within LateAfter is not late.
func TestOversleptEventsAreLate(t *testing.T) {
	for _, tc := range []struct {
		by   time.Duration
		late bool
	}{{40 * time.Millisecond, true}, {simulator.LateAfter, false}} {
		t.Run(tc.by.String(), func(t *testing.T) {
			cfg := simulator.Config{Seed: 1, Duration: 10 * time.Second, Topology: simtest.SmallTopology(),
				Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Every: time.Second}}}
			sim, err := simulator.New(cfg)
			require.NoError(t, err)
			clk := oversleepClock{simulator.NewVirtualClock(simtest.Epoch), tc.by}
			r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: clk, Sink: simulator.SinkFuncs{}})
			require.NoError(t, err)
			require.NoError(t, r.Init(context.Background()))
			stats, err := r.Run(context.Background())
			require.NoError(t, err)
			require.Equal(t, 9, stats.Events)
			if !tc.late {
				require.Zero(t, stats.Late)
				return
			}
			require.Equal(t, 9, stats.Late)
			require.Equal(t, tc.by, stats.MaxLateness)
		})
	}
}
