package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/probe/stream"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// ShardOptions configure RunShard: one fleet shard of a distributed run (docs/distributed.md).
type ShardOptions struct {
	// Target is the ADS server (host:port).
	Target string
	// Segment is this shard (Count 0 or 1: the whole fleet).
	Segment fleet.Segment
	// StartAt is the shared start on the simulator's clock (zero: at once); the shard's
	// clients start ramping then.
	StartAt time.Time
	// TargetMetrics is the control plane's Prometheus endpoint (HOST:PORT or URL; empty:
	// none). The shard reads its process_cpu_seconds_total at its start and end, so that a
	// merge can compare the harness's CPU with the control plane's on the machine they share.
	TargetMetrics string
	// MetricsWait bounds how long the shard waits for TargetMetrics to answer before it starts
	// (default 30s): the control plane may still be coming up.
	MetricsWait time.Duration
	// Probes is the simulator's publisher (http://host:port); empty runs without probes for
	// the scenario's duration. With it the shard measures its clock offset, subscribes before
	// starting, reports ready after the connect phase and measures until the simulator's end.
	Probes string
	// HTTP is the client for Probes (nil: a default one).
	HTTP *http.Client
	// ClockSamples is the number of round trips of the clock measurement (default 8).
	ClockSamples int
	// Retry is the pause between attempts to reach the simulator (default 500ms).
	Retry time.Duration
	// ProbesWait bounds how long the shard waits for the simulator at Probes to answer
	// (default 5m; shards may start before it), and so does StartAt: a start that passes
	// first ends the wait. Something answering that is not the simulator ends it at once.
	ProbesWait  time.Duration
	Logger      *slog.Logger
	ToolVersion string
	// Progress receives one line per phase (nil: none).
	Progress io.Writer
	// Stop, when closed, ends the shard early (the CLI closes it on the first SIGINT or
	// SIGTERM), as Options.Stop ends a run: once its clients connect, what was measured is
	// collected into the summary, marked interrupted (note.interrupted), and RunShard returns
	// it with an error wrapping ErrInterrupted. Before that, it returns ErrInterrupted alone.
	// Canceling ctx instead abandons the shard.
	Stop <-chan struct{}
	// OnFleet, if set, is called with the shard's fleet once it is built, before anything
	// connects (the CLI serves its live metrics); an error ends the shard.
	OnFleet func(*fleet.Fleet) error
}

// RunShard runs the scenario's clients of one segment against the target, as one shard of a
// distributed run, and returns its summary for Merge: the fleet's metrics, the per-event
// records, its phases, segment, start time and clock offset. It evaluates no threshold: a
// shard sees part of the fleet, so the scenario is gated once, on the merged summary.
func RunShard(ctx context.Context, sc *scenarios.Scenario, opts ShardOptions) (*summary.Summary, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("shard: scenario %s: %w", sc.Name, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Retry <= 0 {
		opts.Retry = 500 * time.Millisecond
	}
	if opts.MetricsWait <= 0 {
		opts.MetricsWait = 30 * time.Second
	}
	if opts.ProbesWait <= 0 {
		opts.ProbesWait = 5 * time.Minute
	}
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "fleet %s: "+format+"\n", append([]any{segName(opts.Segment)}, args...)...)
		}
	}
	sim, err := simulator.New(SimConfig(sc))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	fcfg, err := FleetConfig(sc, opts.Target)
	if err != nil {
		return nil, err
	}
	fcfg.Segment = opts.Segment
	FillGRPCTargets(&fcfg, sim.Initial())
	fl, err := fleet.New(fcfg)
	if err != nil {
		return nil, err
	}
	defer fl.Stop()
	if opts.OnFleet != nil {
		if err := opts.OnFleet(fl); err != nil {
			return nil, err
		}
	}

	// The control plane's CPU over the shard's run, when its metrics are given: they must
	// answer before the shard starts (the control plane may still be coming up).
	var cpMetrics func(context.Context) ([]*dto.MetricFamily, error)
	if opts.TargetMetrics != "" {
		url := MetricsURL(opts.TargetMetrics)
		for deadline, first := time.Now().Add(opts.MetricsWait), true; ; first = false {
			err := ProbeMetrics(ctx, url, ProbeTimeout)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("fleet: %w (waited %v)", err, opts.MetricsWait)
			}
			if first {
				say("waiting up to %v for the control plane's metrics at %s", opts.MetricsWait, url)
			}
			log.Info("waiting for the control plane's metrics", "url", url, "err", err)
			if err := sleepCtx(ctx, opts.Retry); err != nil {
				return nil, err
			}
		}
		client := &http.Client{Timeout: 5 * time.Second}
		cpMetrics = func(ctx context.Context) ([]*dto.MetricFamily, error) { return scrape(ctx, client, url) }
	}
	readCP := func() collect.CPSample {
		if cpMetrics == nil {
			return collect.CPSample{}
		}
		fams, err := cpMetrics(ctx)
		if err != nil {
			log.Warn("scrape the control plane's metrics", "err", err)
			return collect.CPSample{}
		}
		return collect.ReadCP(fams)
	}
	host, _, _ := net.SplitHostPort(opts.Target)
	local, localErr := hostIsLocal(ctx, host)
	localP := &local
	if localErr != nil {
		localP = nil
	}

	// sctx ends with ctx, or early when Stop is closed: the waits and phases watch it; what
	// must finish (the drain's short wait, collecting) runs on ctx.
	var cur atomic.Value // the phase in progress, for the stop
	cur.Store("setup")
	setPhase := func(name string) { cur.Store(name) }
	sw := watchStop(ctx, opts.Stop, func() string { return cur.Load().(string) })
	defer sw.cancel()
	sctx, stopped := sw.ctx, sw.stopped
	// early is the error of an interruption before the clients connect: nothing measured.
	early := func(err error) error {
		if p, ok := sw.stoppedIn(); ok && ctx.Err() == nil {
			return fmt.Errorf("%w while %s, before any client connected: nothing was measured", ErrInterrupted, p)
		}
		return err
	}

	began := time.Now()
	usage0 := collect.ReadUsage()
	cp0 := readCP()
	var phases []summary.Phase
	phase := func(name string, start time.Time) {
		phases = append(phases, summary.Phase{Name: name, Start: start, End: time.Now()})
	}

	// Reach the simulator: clock offset, then the subscription.
	var (
		clock *summary.Clock
		off   stream.Offset
		st    *stream.Stream
		scfg  stream.SubscriberConfig
	)
	if opts.Probes != "" {
		base, err := stream.ParseBase(opts.Probes)
		if err != nil {
			return nil, fmt.Errorf("--probes %w", err)
		}
		t := time.Now()
		setPhase("reaching the simulator")
		deadline := t.Add(opts.ProbesWait)
		if !opts.StartAt.IsZero() && opts.StartAt.Before(deadline) {
			deadline = opts.StartAt // on the simulator's clock, which is not known yet: near enough
		}
		lastSaid := time.Time{}
		for {
			off, err = stream.MeasureClock(sctx, opts.HTTP, base, max(opts.ClockSamples, 8), nil)
			if err == nil {
				break
			}
			var se *stream.StatusError
			if errors.As(err, &se) && !se.Retryable() {
				return nil, fmt.Errorf("--probes %s: %w", base, err)
			}
			if sctx.Err() == nil && time.Now().After(deadline) {
				return nil, fmt.Errorf("--probes %s: the simulator did not answer within %v (or before the start): %w; start xdslab sim --publish there, or fix the address",
					base, time.Since(t).Round(time.Second), err)
			}
			if time.Since(lastSaid) >= 30*time.Second {
				say("waiting for the simulator at %s: %v", base, err)
				lastSaid = time.Now()
			}
			log.Info("waiting for the simulator", "url", base, "err", err)
			if err := sleepCtx(sctx, opts.Retry); err != nil {
				return nil, early(err)
			}
		}
		clock = &summary.Clock{Reference: base + "/time", OffsetSeconds: off.Offset.Seconds(), UncertaintySeconds: off.Uncertainty.Seconds(), Samples: off.Samples}
		say("clock offset from the simulator %v ± %v", off.Offset, off.Uncertainty)
		scfg = stream.SubscriberConfig{Base: base, Shard: max(opts.Segment.Index, 0), Client: opts.HTTP, Clock: off, Scenario: sc.Name,
			Shards: max(opts.Segment.Count, 1)}
		for {
			st, err = stream.Dial(sctx, scfg)
			if err == nil {
				break
			}
			var se *stream.StatusError
			if errors.As(err, &se) && !se.Retryable() {
				return nil, fmt.Errorf("subscribe to %s: %w", base, err)
			}
			log.Info("waiting for the simulator's probe stream", "err", err)
			if err := sleepCtx(sctx, opts.Retry); err != nil {
				return nil, early(err)
			}
		}
		defer st.Close()
		phase("subscribe", t)
		say("subscribed to %s", base)
	}

	// The shared start.
	if !opts.StartAt.IsZero() {
		t := time.Now()
		local := off.ToLocal(opts.StartAt)
		if d := time.Until(local); d > 0 {
			setPhase("waiting for the start")
			say("waiting %v for the start at %s", d.Round(time.Millisecond), opts.StartAt.Format(time.RFC3339Nano))
			if err := sleepCtx(sctx, d); err != nil {
				return nil, early(err)
			}
		} else {
			log.Warn("the start time has passed: starting at once", "startAt", opts.StartAt, "late", -d)
		}
		phase("wait", t)
	}

	// Connect. The fleet runs on ctx: a Stop ends the phases, not the clients.
	if sctx.Err() != nil {
		return nil, early(sctx.Err())
	}
	setPhase("connect")
	t := time.Now()
	if err := fl.Start(ctx); err != nil {
		return nil, err
	}
	timeout := phaseTimeout(sc.Phases.Connect.Timeout, time.Minute)
	notes := map[string]string{}
	err = waitFull(sctx, fl, timeout)
	connectFull := fl.Observer().FullConfigByGroup()
	if err != nil && !stopped() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		notes["connect"] = err.Error()
	}
	phase("connect", t)
	say("%d/%d clients hold a full config", fl.Progress().FullConfig, fl.Size())

	// Measure: until the simulator's end, or for the scenario's duration.
	h := &shardHandler{fleet: fl, log: log, handles: map[uint64]*measure.Expected{}}
	t = time.Now()
	if !stopped() {
		setPhase("measure")
		if st != nil {
			if err := stream.Ready(sctx, scfg); err != nil && !stopped() {
				return nil, fmt.Errorf("report ready to %s: %w", scfg.Base, err)
			}
			if err := st.Run(sctx, h); err != nil && !stopped() {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				notes["probes"] = err.Error()
				log.Warn("probe stream", "err", err)
			}
			if m := h.measureAt(); !m.IsZero() {
				t = m
			}
		} else if err := sleepCtx(sctx, sc.Duration.D()); err != nil && !stopped() {
			return nil, err
		}
		phase("measure", t)
	}

	// Drain; briefly when the shard was stopped.
	t = time.Now()
	drainFor := phaseTimeout(sc.Phases.Drain.Timeout, 10*time.Second)
	if stopped() {
		drainFor = min(drainFor, 2*time.Second)
	} else {
		setPhase("drain")
	}
	dctx, cancel := context.WithTimeout(ctx, drainFor)
	stopDrain := context.AfterFunc(sctx, func() { time.AfterFunc(2*time.Second, cancel) })
	left, _ := fl.Matcher().Drain(dctx, 10*time.Millisecond)
	stopDrain()
	cancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if left > 0 {
		notes["drain"] = fmt.Sprintf("%d observations still outstanding after the drain timeout", left)
	}
	phase("drain", t)
	var interrupted error
	if p, ok := sw.stoppedIn(); ok {
		notes["interrupted"] = fmt.Sprintf("the shard was stopped (SIGINT or SIGTERM) during %s; the figures cover what it measured until then", p)
		interrupted = fmt.Errorf("%w: %s", ErrInterrupted, notes["interrupted"])
	}
	fl.Stop()
	ended := time.Now()
	usage1, cp1 := collect.ReadUsage(), readCP()
	if note := collect.ConnectFailureNote(fl.Observer().Stats()); note != "" {
		say("connect failures: %s", note)
		notes["connect failures"] = note
	}

	sum, err := collect.Shard(collect.ShardInput{Scenario: sc, ToolVersion: opts.ToolVersion, Target: opts.Target,
		Segment: opts.Segment, StartAt: opts.StartAt, Clock: clock, Probes: scfg.Base,
		Began: began, Ended: ended, Fleet: fl, ConnectFull: connectFull,
		UsageStart: usage0, UsageEnd: usage1, CPStart: cp0, CPEnd: cp1, TargetLocal: localP, TargetLocalErr: localErr,
		Phases: phases, Notes: notes})
	if err != nil {
		return nil, err
	}
	return sum, interrupted
}

func segName(s fleet.Segment) string {
	if s.Count <= 1 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// shardHandler registers the simulator's events with the shard's fleet.
type shardHandler struct {
	fleet   *fleet.Fleet
	log     *slog.Logger
	mu      sync.Mutex
	handles map[uint64]*measure.Expected
	measure time.Time
}

func (h *shardHandler) Expect(e probe.Expectation) error {
	x, err := h.fleet.Expect(e)
	if err != nil {
		h.log.Warn("event not measurable", "event", e.EventID, "err", err)
		return err
	}
	h.mu.Lock()
	h.handles[e.EventID] = x
	h.mu.Unlock()
	return nil
}

func (h *shardHandler) T0(id uint64, t0 time.Time) {
	h.mu.Lock()
	x := h.handles[id]
	delete(h.handles, id)
	h.mu.Unlock()
	if x == nil {
		return
	}
	if err := x.SetT0(t0); err != nil {
		h.log.Warn("set t0", "event", id, "err", err)
	}
}

func (h *shardHandler) Measure(at time.Time) {
	h.mu.Lock()
	h.measure = at
	h.mu.Unlock()
}

func (h *shardHandler) measureAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.measure
}

// PublishOptions configure RunPublished: the simulator of a distributed run.
type PublishOptions struct {
	// Sink is where the mesh and its churn are written (the control plane's source).
	Sink simulator.Sink
	// Publisher serves the probe stream; RunPublished opens it after the initial topology.
	Publisher *stream.Publisher
	// StartAt is the shared start (zero: at once): churn begins no earlier, and only once
	// every shard is ready (or ShardWait passed).
	StartAt time.Time
	// ShardWait bounds the wait for every shard to subscribe and be ready (default 10m).
	ShardWait   time.Duration
	Recorders   []simulator.Sink
	Metrics     *simulator.Metrics
	Logger      *slog.Logger
	Progress    io.Writer
	ToolVersion string
}

// RunPublished runs the scenario's simulator for a distributed run: it writes the initial
// topology, opens the probe stream, waits for the shards and the shared start, applies the
// churn with every event held until every shard registered it, ends the stream and returns
// the simulator's summary (its events with t0 and ack counts, its stats and phases).
func RunPublished(ctx context.Context, sc *scenarios.Scenario, opts PublishOptions) (*summary.Summary, error) {
	if opts.Sink == nil || opts.Publisher == nil {
		return nil, errors.New("publish: a sink and a publisher are required")
	}
	if opts.ShardWait <= 0 {
		opts.ShardWait = 10 * time.Minute
	}
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "sim: "+format+"\n", args...)
		}
	}
	sim, err := simulator.New(SimConfig(sc))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	p := opts.Publisher
	var events []summary.Event
	var evMu sync.Mutex
	runner, err := simulator.NewRunner(sim, simulator.RunnerOptions{
		Sink: opts.Sink, Recorders: opts.Recorders, Metrics: opts.Metrics,
		OnEvent: func(ev simulator.Event) {
			acked := p.Expect(ctx, ev.Expectation)
			evMu.Lock()
			events = append(events, summary.Event{ID: ev.ID, Kind: string(ev.Kind), Acked: acked})
			evMu.Unlock()
		},
		OnApplied: func(ev simulator.Event) {
			p.Applied(ev.ID, ev.T0)
			evMu.Lock()
			events[len(events)-1].T0 = ev.T0.UTC()
			evMu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	began := time.Now()
	var phases []summary.Phase
	phase := func(name string, start time.Time) {
		phases = append(phases, summary.Phase{Name: name, Start: start, End: time.Now()})
	}
	if err := runner.Init(ctx); err != nil {
		return nil, fmt.Errorf("write the initial topology: %w", err)
	}
	phase("setup", began)
	p.Open()
	t := time.Now()
	wctx, cancel := context.WithTimeout(ctx, opts.ShardWait)
	defer cancel()
	notes := map[string]string{}
	if err := p.WaitSubscribed(wctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if p.Subscribed() == 0 {
			// Churn for nobody measures nothing, and the topology written stays as it is.
			return nil, fmt.Errorf("no shard subscribed within --shard-wait %s: start the shards (xdslab fleet --scenario %s --probes URL --segment I/N) against this simulator's --publish address, or wait longer", opts.ShardWait, sc.Name)
		}
		notes["shards"] = fmt.Sprintf("%d shard(s) subscribed within %s; running without the others (their events count as missing at merge)", p.Subscribed(), opts.ShardWait)
	}
	say("%d shard(s) subscribed", p.Subscribed())
	if d := time.Until(opts.StartAt); !opts.StartAt.IsZero() && d > 0 {
		if err := sleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
	ready := p.WaitReady(wctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	phase("connect", t)
	say("%d shard(s) ready: churn starts", ready)
	t = time.Now()
	p.Measure(t)
	stats, runErr := runner.Run(ctx)
	phase("measure", t)
	ectx, cancelEnd := context.WithTimeout(context.Background(), 10*time.Second)
	p.End(ectx)
	cancelEnd()
	if runErr != nil {
		return nil, fmt.Errorf("measure: %w", runErr)
	}
	return collect.Sim(collect.SimInput{Scenario: sc, ToolVersion: opts.ToolVersion, Began: began, Ended: time.Now(),
		Stats: stats, BarrierTimeouts: p.BarrierTimeouts(), Events: events, StartAt: opts.StartAt,
		Phases: phases, Notes: notes})
}

// groupShortfall lists the groups some of whose clients hold no full config, as
// " (sidecars 3 of 500, routers 1 of 20)", or "" when there are none.
func groupShortfall(sizes map[string]int, full map[string]uint64) string {
	names := make([]string, 0, len(sizes))
	for g := range sizes {
		names = append(names, g)
	}
	sort.Strings(names)
	var parts []string
	for _, g := range names {
		if n := sizes[g]; uint64(n) > full[g] {
			parts = append(parts, fmt.Sprintf("%s %d of %d", g, uint64(n)-full[g], n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// waitFull waits until every client of the fleet holds its first full config; after timeout
// it returns an error counting those that do not, by group.
func waitFull(ctx context.Context, fleet *fleet.Fleet, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	n := uint64(fleet.Size())
	for fleet.Progress().FullConfigEver < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			got := fleet.Progress().FullConfigEver
			return fmt.Errorf("%d of %d clients had no full config after the connect timeout (%s)%s; measuring anyway",
				n-min(got, n), n, timeout, groupShortfall(fleet.GroupSizes(), fleet.Observer().FullConfigByGroup()))
		case <-tick.C:
		}
	}
	return nil
}
