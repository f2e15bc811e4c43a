package simulator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Clock is the Runner's time source.
type Clock interface {
	Now() time.Time
	// WaitUntil returns when the clock reaches t (at once if it has), or ctx's error.
	WaitUntil(ctx context.Context, t time.Time) error
}

// WallClock is the real clock. Its zero value is ready; one goroutine uses it.
type WallClock struct {
	timer *time.Timer
}

// Now returns time.Now().
func (c *WallClock) Now() time.Time { return time.Now() }

// WaitUntil sleeps until t on one reused timer.
func (c *WallClock) WaitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return nil
	case <-ctx.Done():
		c.timer.Stop()
		return ctx.Err()
	}
}

// VirtualClock runs as fast as possible: WaitUntil jumps to t. Advance moves time on, as work
// would (a test sink can make events late with it). Safe for concurrent use.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewVirtualClock starts at start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// WaitUntil sets the time to t if t is later.
func (c *VirtualClock) WaitUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
	return ctx.Err()
}

// Advance moves the time on by d.
func (c *VirtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Metrics are the simulator's Prometheus series.
type Metrics struct {
	Events  *prometheus.CounterVec // xdslab_sim_events_total{kind}
	Late    *prometheus.CounterVec // xdslab_sim_events_late_total{kind}
	Skipped *prometheus.CounterVec // xdslab_sim_events_skipped_total{kind}
	// Lateness observes fire time minus scheduled time of late events.
	Lateness prometheus.Histogram // xdslab_sim_event_lateness_seconds
	// Apply observes the primary sink's Apply duration.
	Apply prometheus.Histogram // xdslab_sim_apply_duration_seconds
	// Failed counts events the sink failed to apply (the run goes on).
	Failed *prometheus.CounterVec // xdslab_sim_events_failed_total{kind}
}

// NewMetrics creates the series and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xdslab_sim_events_total", Help: "Simulator events applied to the sink, by churn kind.",
		}, []string{"kind"}),
		Late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xdslab_sim_events_late_total", Help: "Events applied more than 1ms after their scheduled time (the runner was behind, or its timer woke late; fired at once, not shifted), by churn kind.",
		}, []string{"kind"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xdslab_sim_events_skipped_total", Help: "Churn arrivals that found nothing to change (no service left, a restore superseded), by churn kind.",
		}, []string{"kind"}),
		Lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "xdslab_sim_event_lateness_seconds", Help: "How late late events fired (fire time minus scheduled time).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		Apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "xdslab_sim_apply_duration_seconds", Help: "Time the sink took to apply one event.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12),
		}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xdslab_sim_events_failed_total", Help: "Events the sink failed to apply (a write error; the run goes on), by churn kind.",
		}, []string{"kind"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.Events, m.Late, m.Skipped, m.Lateness, m.Apply, m.Failed} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("simulator metrics: %w", err)
			}
		}
	}
	return m, nil
}

// RunnerOptions wires a Runner.
type RunnerOptions struct {
	// Clock defaults to the wall clock.
	Clock Clock
	// Sink is the source the control plane reads; t0 is taken when its Apply returns.
	Sink Sink
	// Recorders (the event log) receive each event after t0, with T0 set.
	Recorders []Sink
	// OnEvent is called before the sink applies the event (Expectation.Scheduled set, T0 not),
	// so a fleet can register the expectation before any client could observe it.
	OnEvent func(Event)
	// OnApplied is called with T0 set, before the recorders.
	OnApplied func(Event)
	// OnFailed is called when the sink failed to apply the event (after OnEvent, instead of
	// OnApplied): the event is counted failed and the run goes on.
	OnFailed func(Event, error)
	// Metrics may be nil.
	Metrics *Metrics
}

// KindStats counts one churn kind's events.
type KindStats struct {
	Events, Late, Skipped, Failed int
}

// Stats summarizes a run.
type Stats struct {
	// Events counts the events applied; Failed those the sink failed to apply (not in Events).
	Events, Late, Skipped, Failed int
	// FirstFailure and LastFailure are the sink's first and last errors (nil: none failed).
	FirstFailure, LastFailure error
	// MaxLateness and TotalLateness cover late events.
	MaxLateness, TotalLateness time.Duration
	// ApplyTotal is the time spent in the sink's Apply.
	ApplyTotal time.Duration
	ByKind     map[ChurnKind]KindStats
}

// Runner applies a Simulator's events to a Sink on a Clock. One goroutine calls Init then Run.
type Runner struct {
	sim   *Simulator
	opts  RunnerOptions
	stats Stats
}

// NewRunner checks the options.
func NewRunner(sim *Simulator, opts RunnerOptions) (*Runner, error) {
	if sim == nil || opts.Sink == nil {
		return nil, errors.New("simulator: runner needs a simulator and a sink")
	}
	if opts.Clock == nil {
		opts.Clock = &WallClock{}
	}
	return &Runner{sim: sim, opts: opts, stats: Stats{ByKind: map[ChurnKind]KindStats{}}}, nil
}

// Init writes the initial topology to the sink and the recorders.
func (r *Runner) Init(ctx context.Context) error {
	initial := r.sim.Initial()
	if err := r.opts.Sink.Init(ctx, initial); err != nil {
		return err
	}
	for _, rec := range r.opts.Recorders {
		if err := rec.Init(ctx, initial); err != nil {
			return err
		}
	}
	return nil
}

// LateAfter is how far past its scheduled time an event may fire and still be on time: a
// timer's usual wake-up delay. Beyond it the event is counted late, with its lateness.
const LateAfter = time.Millisecond

// Run applies churn from now until the configured duration has passed (churn offsets count from
// the call), and returns the stats. An event the primary sink fails to apply (a write error: a
// directory that vanished for a moment) is counted failed, reported to OnFailed, and the run
// goes on. It stops early with ctx's error or a recorder's error, returning the stats so far.
// It does not close the sinks.
func (r *Runner) Run(ctx context.Context) (Stats, error) {
	clk := r.opts.Clock
	start := clk.Now()
	for {
		// Skipped and late events do not wait: without this, a dense timeline of them would
		// keep the runner from its context.
		if err := ctx.Err(); err != nil {
			return r.stats, err
		}
		ev, ok, err := r.sim.Next()
		if err != nil {
			return r.stats, err
		}
		if !ok {
			break
		}
		due := start.Add(ev.Scheduled)
		if ev.Skip != "" {
			r.count(ev, func(k *KindStats) { k.Skipped++ })
			r.stats.Skipped++
			if m := r.opts.Metrics; m != nil {
				m.Skipped.WithLabelValues(string(ev.Kind)).Inc()
			}
			continue
		}
		if clk.Now().Before(due) {
			if err := clk.WaitUntil(ctx, due); err != nil {
				return r.stats, err
			}
		}
		// Late whether the runner was behind before the wait or the wait overslept (a loaded
		// machine wakes timers late): either way the offered load fell behind the schedule.
		if l := clk.Now().Sub(due); l > LateAfter {
			ev.Late, ev.Lateness = true, l
		}
		if err := r.apply(ctx, ev, due); err != nil {
			return r.stats, err
		}
	}
	if err := clk.WaitUntil(ctx, start.Add(r.sim.cfg.Duration)); err != nil {
		return r.stats, err
	}
	return r.stats, nil
}

func (r *Runner) count(ev Event, f func(*KindStats)) {
	k := r.stats.ByKind[ev.Kind]
	f(&k)
	r.stats.ByKind[ev.Kind] = k
}

func (r *Runner) apply(ctx context.Context, ev Event, due time.Time) error {
	clk, m := r.opts.Clock, r.opts.Metrics
	ev.Fired = clk.Now()
	ev.Expectation.Scheduled = due
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
	begin := clk.Now()
	if err := r.opts.Sink.Apply(ctx, ev); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.fail(ev, err)
		return nil
	}
	ev.T0 = clk.Now()
	ev.Expectation.T0 = ev.T0
	took := ev.T0.Sub(begin)
	r.stats.Events++
	r.stats.ApplyTotal += took
	r.count(ev, func(k *KindStats) {
		k.Events++
		if ev.Late {
			k.Late++
		}
	})
	if ev.Late {
		r.stats.Late++
		r.stats.TotalLateness += ev.Lateness
		r.stats.MaxLateness = max(r.stats.MaxLateness, ev.Lateness)
	}
	if m != nil {
		m.Events.WithLabelValues(string(ev.Kind)).Inc()
		m.Apply.Observe(took.Seconds())
		if ev.Late {
			m.Late.WithLabelValues(string(ev.Kind)).Inc()
			m.Lateness.Observe(ev.Lateness.Seconds())
		}
	}
	if r.opts.OnApplied != nil {
		r.opts.OnApplied(ev)
	}
	for _, rec := range r.opts.Recorders {
		if err := rec.Apply(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// fail counts ev as failed with the sink's err.
func (r *Runner) fail(ev Event, err error) {
	r.stats.Failed++
	if r.stats.FirstFailure == nil {
		r.stats.FirstFailure = err
	}
	r.stats.LastFailure = err
	r.count(ev, func(k *KindStats) { k.Failed++ })
	if m := r.opts.Metrics; m != nil {
		m.Failed.WithLabelValues(string(ev.Kind)).Inc()
	}
	if r.opts.OnFailed != nil {
		r.opts.OnFailed(ev, err)
	}
}
