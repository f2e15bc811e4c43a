package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/metricsserver"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// Options configure Run. The zero value runs the scenario once against the in-process
// control plane and writes nothing.
type Options struct {
	// Out is the directory summary.json, report.html and junit.xml are written to (created if
	// missing); empty writes nothing. With Repeat > 1 run i goes to Out/run-i.
	Out string
	// Target is an external ADS server (host:port). Empty starts xdslab's control plane in
	// this process, configured from the scenario's controlPlane section.
	Target string
	// SinkDir is the directory of Istio YAML the control plane at Target watches; the
	// simulator writes the mesh and its churn there. Required with Target unless Sink is set.
	SinkDir string
	// CleanSinkDir removes YAML files already in SinkDir first (otherwise such a directory is
	// refused, since the control plane would load them).
	CleanSinkDir bool
	// TargetMetrics is the target's Prometheus endpoint (host:port or URL); when it exports
	// Istio's pilot_* names (or xdslab's), debounce effectiveness, cache hit rates and the
	// target's CPU and memory are read from it. Empty: those figures are "not available".
	TargetMetrics string
	// Sink, with Target, replaces the directory sink (tests drive non-file control planes).
	Sink simulator.Sink
	// NewSink, with Target, builds the sink of each run instead of Sink (a run closes its sink,
	// so repeated runs need a fresh one): the CLI's Kubernetes sink.
	NewSink func() (simulator.Sink, error)
	// Repeat runs the scenario this many times (default 1), each into Out/run-i.
	Repeat int
	// Progress receives live progress; nil writes none. ProgressTTY rewrites one line (a
	// terminal), otherwise one log line per ProgressInterval (default 1s).
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	// Logger receives the run's logs (and the in-process control plane's); nil discards them.
	Logger *slog.Logger
	// MetricsAddr serves the live metrics (xdslab_* of the fleet and simulator, and the
	// in-process control plane's) on /metrics while the run lasts. Empty serves none.
	MetricsAddr string
	// MetricsListener, if set, is used instead of listening on MetricsAddr (tests pass one bound
	// to 127.0.0.1:0); Run closes it. Repeated runs listen again on its address.
	MetricsListener net.Listener
	// CPUProfile attributes CPU time to the control plane and the harness of an in-process run
	// with a CPU profile whose samples carry pprof labels. Without it (or when another profile
	// is running) CPU is reported for the whole process.
	CPUProfile bool
	// ToolVersion goes into the summary's metadata.
	ToolVersion string
	// Harness says when the run is marked harness-saturated (zero fields: the defaults).
	Harness collect.HarnessLimits
	// OnRun, if set, receives each run's summary as it completes (i from 1; with Repeat <= 1
	// once, with i = 1): repeated runs for statistics without reading run-i back from disk.
	OnRun func(i int, s *summary.Summary)
	// Stop, when closed, ends the run early (the CLI closes it on the first SIGINT or
	// SIGTERM): the simulator stops, in-flight events get a brief drain (StopDrain, at most
	// the scenario's drain timeout), and what was measured is collected, evaluated against the
	// thresholds and written, marked interrupted (note.interrupted). Run then returns that
	// summary with an error wrapping ErrInterrupted, and starts no further repeats. Canceling
	// ctx instead abandons the run and writes nothing.
	Stop <-chan struct{}
	// StopDrain bounds the drain after Stop (default 2s).
	StopDrain time.Duration
}

// ErrInterrupted is returned (wrapped, with the summary of what was measured) by a run that
// Options.Stop ended early.
var ErrInterrupted = errors.New("interrupted")

// ErrEndedEarly is returned (wrapped, with the summary of what was measured, written to Out)
// by a run that an error ended after its clients had started: the error says what.
var ErrEndedEarly = errors.New("the run ended early")

// Run runs a resolved scenario: phases connect, measure and drain against the target, then
// collects the summary, evaluates the thresholds and writes the outputs. A failed threshold is
// not an error: it shows as Results.Passed false (the CLI exits 99). With Repeat > 1 every run
// is written to Out/run-i and the summary returned is the last run's, with Passed false if any
// run failed a threshold.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*summary.Summary, error) {
	if sc == nil {
		return nil, errors.New("run: no scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("run: scenario %s: %w", sc.Name, err)
	}
	if opts.Out != "" {
		// Before anything runs: a run that cannot write its results is refused at once.
		if err := CheckWritableDir(opts.Out); err != nil {
			return nil, fmt.Errorf("run: --out: %w", err)
		}
	}
	if opts.Repeat <= 1 {
		s, err := runOnce(ctx, sc, opts, 0)
		if err == nil && opts.OnRun != nil {
			opts.OnRun(1, s)
		}
		return s, err
	}
	var last *summary.Summary
	passed := true
	for i := 1; i <= opts.Repeat; i++ {
		o := opts
		if i > 1 && opts.MetricsListener != nil {
			o.MetricsListener, o.MetricsAddr = nil, opts.MetricsListener.Addr().String()
		}
		if opts.Out != "" {
			o.Out = filepath.Join(opts.Out, fmt.Sprintf("run-%d", i))
		}
		s, err := runOnce(ctx, sc, o, i)
		if err != nil {
			if s != nil { // ended early with what it measured written: no further repeats
				return s, fmt.Errorf("run %d of %d: %w", i, opts.Repeat, err)
			}
			return nil, fmt.Errorf("run %d of %d: %w", i, opts.Repeat, err)
		}
		if opts.OnRun != nil {
			opts.OnRun(i, s)
		}
		passed = passed && s.Results.Passed
		last = s
	}
	last.Results.Passed = passed
	return last, nil
}

// eventRecord is one applied simulator event, as the report needs it.
type eventRecord struct {
	ID        uint64
	Kind      string
	Phase     string
	Scheduled time.Duration // offset from the start of the measure phase
	T0        time.Time
	Late      bool
	Lateness  time.Duration
	handle    *measure.Expected
	expectErr error
	// failErr is the sink's error when it failed to apply the event (the event is withdrawn).
	failErr error
}

// execution is the state of one run.
type execution struct {
	sc    *scenarios.Scenario
	opts  Options
	log   *slog.Logger
	index int

	tgt   *target
	fleet *fleet.Fleet

	phase     atomic.Value // string
	applied   atomic.Int64
	measureT0 atomic.Int64 // unix ns; 0 before measure
	samplesMu sync.Mutex
	samples   []report.Point
	events    []eventRecord
	began     time.Time
	phases    []summary.Phase
	cpStart   collect.CPSample // at the start of the measure phase
	cpFirst   collect.CPSample // right after the control plane started
	cpEnd     collect.CPSample // after drain
	simStats  simulator.Stats
	drainLeft int
	measured  time.Duration // how long the measure phase ran
	failBurst int           // events the sink failed in a row (the simulator's goroutine)
	// progressMu orders the progress lines of the monitor and the connect phase.
	progressMu sync.Mutex
	// connectFull counts, by client group, the clients holding their first full config when
	// the connect phase ended (the implicit per-group threshold is judged on it).
	connectFull map[string]uint64
	notes       map[string]string
	simMetrics  *simulator.Metrics
	cpMaxRSS    float64 // an external control plane's largest sampled resident memory
}

func runOnce(ctx context.Context, sc *scenarios.Scenario, opts Options, index int) (s *summary.Summary, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	r := &execution{sc: sc, opts: opts, log: log, index: index, notes: map[string]string{}}
	r.phase.Store("setup")
	pprof.Do(ctx, pprof.Labels(collect.SideLabel, collect.SideHarness), func(ctx context.Context) {
		s, err = r.execute(ctx)
	})
	return s, err
}

func (r *execution) execute(ctx context.Context) (*summary.Summary, error) {
	sc, opts := r.sc, r.opts
	r.began = time.Now()
	prof := collect.StartProfile(opts.CPUProfile && opts.Target == "")
	defer prof.Stop() // on every early return; the normal path stops it first, to read it
	usage0 := collect.ReadUsage()

	// The target.
	var err error
	if opts.Target == "" {
		r.tgt, err = startInProcess(ctx, sc, r.log)
	} else {
		sink := opts.Sink
		if opts.NewSink != nil {
			if sink, err = opts.NewSink(); err != nil {
				return nil, err
			}
		}
		plain := false
		for _, c := range sc.Clients {
			plain = plain || !c.Auth.Enabled()
		}
		r.tgt, err = startExternal(ctx, externalOptions{addr: opts.Target, sinkDir: opts.SinkDir, metricsURL: opts.TargetMetrics,
			clean: opts.CleanSinkDir, sink: sink, probe: plain}, r.log)
	}
	if err != nil {
		return nil, err
	}
	defer r.tgt.close()
	defer r.tgt.sink.Close()

	sim, err := simulator.New(SimConfig(sc))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	fcfg, err := FleetConfig(sc, r.tgt.addr)
	if err != nil {
		return nil, err
	}
	if err := applyAuth(&fcfg, sc, r.tgt.secureAddr, r.tgt.caDir); err != nil {
		return nil, err
	}
	FillGRPCTargets(&fcfg, sim.Initial())
	r.fleet, err = fleet.New(fcfg)
	if err != nil {
		return nil, err
	}
	defer r.fleet.Stop()

	reg := prometheus.NewRegistry()
	// The process's runtime and resource figures, once: in-process, the control plane shares
	// this process, and its own registry (merged into /metrics below) carries none.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if r.simMetrics, err = simulator.NewMetrics(reg); err != nil {
		return nil, err
	}
	if err := r.fleet.Register(reg); err != nil {
		return nil, err
	}
	if opts.MetricsAddr != "" || opts.MetricsListener != nil {
		stop, err := r.serveMetrics(opts.MetricsAddr, opts.MetricsListener, reg)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	runner, err := simulator.NewRunner(sim, simulator.RunnerOptions{
		Sink: r.tgt.sink, Metrics: r.simMetrics,
		OnEvent:   r.onEvent,
		OnApplied: r.onApplied,
		OnFailed:  r.onFailed,
	})
	if err != nil {
		return nil, err
	}

	// sctx ends with ctx, or early when Stop is closed: the phases watch it; what must finish
	// (loading the topology, collecting, writing) runs on ctx.
	sw := watchStop(ctx, opts.Stop, func() string { p, _ := r.phase.Load().(string); return p })
	defer sw.cancel()
	sctx, stopped := sw.ctx, sw.stopped

	// Load the initial topology before any client connects.
	setup := r.startPhase("setup")
	if err := runner.Init(ctx); err != nil {
		return nil, fmt.Errorf("load the initial topology: %w", err)
	}
	services := countServices(sim.Initial())
	if r.tgt.loaded != nil {
		lctx, cancel := context.WithTimeout(sctx, phaseTimeout(sc.Phases.Connect.Timeout, time.Minute))
		err := r.tgt.loaded(lctx, services)
		cancel()
		switch {
		case errors.Is(err, errNoServicesGauge):
			r.notes["setup"] = fmt.Sprintf("the target's load of the initial topology could not be checked: %v", err)
		case err != nil && !stopped():
			return nil, fmt.Errorf("the control plane did not load the initial topology (%d services): %w", services, err)
		}
	} else {
		r.notes["setup"] = "the target's load of the initial topology could not be checked (no --target-metrics)"
	}
	r.cpFirst = r.readCP(ctx)
	r.endPhase(setup)
	r.log.Info("initial topology loaded", "services", services, "objects", len(sim.Initial()), "target", r.tgt.addr, "kind", r.tgt.kind)

	monCtx, stopMon := context.WithCancel(ctx)
	var monWG sync.WaitGroup
	monWG.Go(func() { r.monitor(monCtx) })
	defer func() {
		stopMon()
		monWG.Wait()
	}()

	// ended is the error that ended the run before its time (nil: it ran its course, or was
	// stopped); the results are written either way.
	var ended error

	// Connect: ramp the clients, wait for each one's first full config.
	if !stopped() {
		ended = r.connect(ctx, sctx)
	}

	// Measure: churn for the scenario's duration.
	if ended == nil && !stopped() {
		measure := r.startPhase("measure")
		r.cpStart = r.readCP(ctx)
		r.measureT0.Store(time.Now().UnixNano())
		r.simStats, err = runner.Run(sctx)
		r.endPhase(measure)
		r.measured = time.Since(r.phases[measure].Start)
		if err != nil && !stopped() {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("measure: %w", err)
			}
			ended = fmt.Errorf("measure: %w", err)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// Drain: wait for in-flight events to converge; briefly when the run was stopped (a Stop
	// during the drain cuts it to StopDrain from then).
	stopDrain := cmp.Or(opts.StopDrain, 2*time.Second)
	drain := r.startPhase("drain")
	dctx, cancel := context.WithTimeout(ctx, phaseTimeout(sc.Phases.Drain.Timeout, 10*time.Second))
	stopDrainTimer := context.AfterFunc(sctx, func() { time.AfterFunc(stopDrain, cancel) })
	r.drainLeft, _ = r.fleet.Matcher().Drain(dctx, 10*time.Millisecond)
	stopDrainTimer()
	cancel()
	r.endPhase(drain)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if p, ok := sw.stoppedIn(); ok && (p != "drain" || r.drainLeft > 0) {
		r.notes["interrupted"] = r.interruptedNote(p, stopDrain)
	}
	if ended != nil {
		r.notes["ended"] = fmt.Sprintf("the run ended early: %v; the figures cover what ran before", ended)
	}
	if st := r.simStats; st.Failed > 0 {
		r.notes["sink"] = fmt.Sprintf("the sink failed to apply %d of %d events (they are counted in %s and left out of the latencies); first error: %v",
			st.Failed, st.Failed+st.Events, collect.MetricSimFailed, st.FirstFailure)
		if st.LastFailure != nil && st.LastFailure.Error() != st.FirstFailure.Error() {
			r.notes["sink"] += fmt.Sprintf("; last: %v", st.LastFailure)
		}
	}
	r.cpEnd = r.readCP(ctx)
	stopMon()
	monWG.Wait()
	r.sample(time.Now()) // the last point of the timeline

	r.fleet.Stop()
	endedAt := time.Now()
	usageEnd := collect.ReadUsage()
	bySide := prof.Stop()
	unmeasured := 0
	for _, e := range r.events {
		if e.expectErr != nil {
			unmeasured++
		}
	}
	s, err := collect.Run(collect.RunInput{Scenario: sc, Index: r.index, ToolVersion: opts.ToolVersion,
		Began: r.began, Ended: endedAt, Target: r.tgt.summary(sc), Fleet: r.fleet, ConnectFull: r.connectFull,
		Sim: r.simStats, Unmeasured: unmeasured, CPFirst: r.cpFirst, CPStart: r.cpStart, CPEnd: r.cpEnd,
		CPPeakRSS: r.cpMaxRSS, UsageStart: usage0, UsageEnd: usageEnd, CPUBySide: bySide,
		Harness: opts.Harness, Phases: r.phases, Notes: r.notes})
	if err != nil {
		return nil, err
	}

	if opts.Out != "" {
		if err := report.Write(opts.Out, r.forReport(s, prof.Data())); err != nil {
			return s, err
		}
	}
	switch {
	case ended != nil:
		return s, fmt.Errorf("%w: %w", ErrEndedEarly, ended)
	case r.notes["interrupted"] != "":
		return s, fmt.Errorf("%w: %s", ErrInterrupted, r.notes["interrupted"])
	}
	return s, nil
}

// interruptedNote says where Stop ended the run and what the figures then cover.
func (r *execution) interruptedNote(phase string, stopDrain time.Duration) string {
	note := fmt.Sprintf("interrupted in the %s phase", phase)
	switch phase {
	case "setup", "connect":
		note += ": no churn was applied; the figures cover the clients' connection only"
	case "measure":
		note += fmt.Sprintf(" after %s of %s of churn (%d events applied)", r.measured.Round(100*time.Millisecond), r.sc.Duration.D(), r.applied.Load())
	}
	if r.drainLeft > 0 {
		note += fmt.Sprintf("; %d observations still outstanding after a drain of at most %s count as missed", r.drainLeft, stopDrain)
	}
	return note + "; thresholds are evaluated on what was measured"
}

// Interrupted returns why a run was stopped early (empty when it was not).
func Interrupted(s *summary.Summary) string {
	if s == nil {
		return ""
	}
	return s.Metadata.Labels["note.interrupted"]
}

func (r *execution) startPhase(name string) int {
	r.phase.Store(name)
	r.phases = append(r.phases, summary.Phase{Name: name, Start: time.Now()})
	return len(r.phases) - 1
}

func (r *execution) endPhase(i int) { r.phases[i].End = time.Now() }

// connect starts the fleet and waits until every client holds its first full config or the
// connect timeout passes; what is missing then is counted, per client group, and the run goes
// on.
// The clients run on ctx; the wait ends early when sctx does (a Stop).
func (r *execution) connect(ctx, sctx context.Context) error {
	p := r.startPhase("connect")
	defer r.endPhase(p)
	if err := r.fleet.Start(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	err := waitFull(sctx, r.fleet, phaseTimeout(r.sc.Phases.Connect.Timeout, time.Minute))
	r.connectFull = r.fleet.Observer().FullConfigByGroup()
	if err != nil {
		if sctx.Err() != nil {
			return nil // stopped (or abandoned): the caller tells which
		}
		r.notes["connect"] = err.Error()
		r.tell(time.Now(), "connect phase timed out: "+err.Error())
		if why := collect.IncompleteNote(r.fleet.Incomplete()); why != "" {
			// Never an endless silent warm: which clients, waiting for what, and why.
			r.notes["incomplete"] = why
			r.tell(time.Now(), "clients without a full config: "+why)
		}
	}
	return nil
}

// onEvent runs on the simulator's goroutine before the sink applies ev: the expectation is
// registered with the fleet first, so no response carrying the change can be missed.
func (r *execution) onEvent(ev simulator.Event) {
	rec := eventRecord{ID: ev.ID, Kind: string(ev.Kind), Phase: ev.Phase, Scheduled: ev.Scheduled, Late: ev.Late, Lateness: ev.Lateness}
	rec.handle, rec.expectErr = r.fleet.Expect(ev.Expectation)
	if rec.expectErr != nil {
		r.log.Warn("event not measurable", "event", ev.ID, "kind", ev.Kind, "err", rec.expectErr)
	}
	r.events = append(r.events, rec)
}

// onFailed runs when the sink failed to apply the event: its expectation is withdrawn (the
// change was not made, or not wholly) and the event is counted failed, not missed.
func (r *execution) onFailed(ev simulator.Event, err error) {
	rec := &r.events[len(r.events)-1]
	rec.failErr = err
	if rec.handle != nil {
		rec.handle.Withdraw()
	}
	// One line per burst of failures (the directory gone for a while fails every event in
	// between), and one when the sink works again; every failure is counted.
	if r.failBurst == 0 {
		r.tell(time.Now(), fmt.Sprintf("the sink failed to apply event %d (%v): counted failed, the run goes on", ev.ID, err))
	}
	r.failBurst++
}

// onApplied runs right after the sink's Apply returned, with t0 taken.
func (r *execution) onApplied(ev simulator.Event) {
	if r.failBurst > 0 {
		r.tell(time.Now(), fmt.Sprintf("the sink applies events again, after %d failed", r.failBurst))
		r.failBurst = 0
	}
	rec := &r.events[len(r.events)-1]
	rec.T0 = ev.T0
	if rec.handle != nil {
		if err := rec.handle.SetT0(ev.T0); err != nil {
			r.log.Warn("set t0", "event", ev.ID, "err", err)
		}
	}
	r.applied.Add(1)
}

// readCP reads the control plane's metrics now (the zero sample when unavailable).
func (r *execution) readCP(ctx context.Context) collect.CPSample {
	if r.tgt.gather == nil {
		return collect.CPSample{}
	}
	fams, err := r.tgt.gather(ctx)
	if err != nil {
		// Said at once: the figures that need this sample are left out (with a note).
		r.log.Warn("could not read the control plane's metrics; the figures that need this sample are left out", "err", err)
		return collect.CPSample{}
	}
	return collect.ReadCP(fams)
}

// monitor samples the timeline every half second and writes progress.
func (r *execution) monitor(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastPrint := time.Now()
	failSeen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			if r.opts.Progress != nil && r.opts.ProgressTTY {
				fmt.Fprintln(r.opts.Progress)
			}
			return
		case now := <-tick.C:
			r.sample(now)
			p := r.fleet.Progress()
			for _, l := range p.NewFailures(failSeen) {
				r.tell(now, l)
			}
			if r.opts.Progress != nil && now.Sub(lastPrint) >= r.opts.ProgressInterval {
				lastPrint = now
				r.printProgress(now, p)
			}
		}
	}
}

// sample appends one timeline point (measure and drain phases only).
func (r *execution) sample(now time.Time) {
	t0 := r.measureT0.Load()
	if t0 == 0 {
		return
	}
	cp := r.readCP(context.Background())
	if rss, ok := cp.RSS(); ok {
		r.samplesMu.Lock()
		r.cpMaxRSS = max(r.cpMaxRSS, rss)
		r.samplesMu.Unlock()
	}
	s := report.Point{At: now.Sub(time.Unix(0, t0)), Events: r.applied.Load(), Connected: r.fleet.Observer().ConnectedNow()}
	s.PushCycles, s.HasCycles = cp.PushCycles()
	r.samplesMu.Lock()
	r.samples = append(r.samples, s)
	r.samplesMu.Unlock()
}

// tell reports something the user should see while the run goes on: as a line of its own
// among the progress lines when progress is written (not a raw log record between them), else
// as a warning in the log.
func (r *execution) tell(now time.Time, msg string) {
	if r.opts.Progress == nil {
		r.log.Warn(msg)
		return
	}
	phase, _ := r.phase.Load().(string)
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	if r.opts.ProgressTTY {
		fmt.Fprintf(r.opts.Progress, "\r\x1b[K%s %s: %s\n", r.sc.Name, phase, msg)
	} else {
		fmt.Fprintf(r.opts.Progress, "%s %s %6s: %s\n", now.UTC().Format(time.TimeOnly), r.sc.Name, phase, msg)
	}
}

func (r *execution) printProgress(now time.Time, p fleet.Progress) {
	phase, _ := r.phase.Load().(string)
	line := fmt.Sprintf("%s %6s: clients %d/%d connected, %d full config, events %d",
		r.sc.Name, phase, p.Connected, p.Clients, p.FullConfig, r.applied.Load())
	if phase == "measure" || phase == "drain" {
		if t0 := r.measureT0.Load(); t0 != 0 {
			line += fmt.Sprintf(" (%s/%s)", now.Sub(time.Unix(0, t0)).Truncate(time.Second), r.sc.Duration.D())
		}
		r.samplesMu.Lock()
		if n := len(r.samples); n > 0 && r.samples[n-1].HasCycles {
			start, _ := r.cpStart.PushCycles()
			line += fmt.Sprintf(", pushes %.0f", r.samples[n-1].PushCycles-start)
		}
		r.samplesMu.Unlock()
		if h := r.fleet.Matcher().PushLatency(); h.TotalCount() > 0 {
			p99 := time.Duration(h.ValueAtPercentile(99)) * time.Microsecond
			line += fmt.Sprintf(", p99 push latency %s", p99)
		}
	}
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	if r.opts.ProgressTTY {
		fmt.Fprintf(r.opts.Progress, "\r\x1b[K%s", line)
	} else {
		fmt.Fprintf(r.opts.Progress, "%s %s\n", now.UTC().Format(time.TimeOnly), line)
	}
}

// serveMetrics serves the live metrics (and the in-process control plane's) on addr.
func (r *execution) serveMetrics(addr string, lis net.Listener, reg *prometheus.Registry) (func(), error) {
	g := prometheus.Gatherers{reg}
	if r.tgt.kind == "in-process" && r.tgt.gather != nil {
		g = append(g, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return r.tgt.gather(context.Background()) }))
	}
	srv, err := metricsserver.Start(addr, lis, g)
	if err != nil {
		return nil, err
	}
	r.log.Info("live metrics", "url", "http://"+srv.Addr()+"/metrics")
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "live metrics on http://%s/metrics\n", srv.Addr())
	}
	return func() {
		if err := srv.Stop(); err != nil {
			r.log.Warn("metrics server", "err", err)
		}
	}, nil
}

// forReport is the run as its report shows it: its summary s and what the report draws beyond it.
func (r *execution) forReport(s *summary.Summary, profile []byte) report.Run {
	start := r.began
	for _, p := range r.phases {
		if p.Name == "measure" {
			start = p.Start
			break
		}
	}
	r.samplesMu.Lock()
	timeline := slices.Clone(r.samples)
	r.samplesMu.Unlock()
	cycles, _ := r.cpStart.PushCycles()
	return report.Run{Summary: s, Scenario: r.sc, Target: fmt.Sprintf("%s (%s)", r.tgt.kind, r.tgt.addr),
		Matches: r.fleet.Matcher().Results(), MeasureStart: start, Timeline: timeline, CyclesAtStart: cycles,
		CPUProfile: profile}
}

// CheckWritableDir creates dir if missing and checks that a file can be created in it, so that a
// run that could not write its results is refused before it starts.
func CheckWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".xdslab-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	return nil
}

// countServices counts the hosts of the ServiceEntries in objs (the services the control plane
// will know once it has loaded them).
func countServices(objs []istioconfig.Config) int {
	n := 0
	for _, c := range objs {
		if c.Kind != istioconfig.KindServiceEntry {
			continue
		}
		if se, ok := c.Spec.(*networking.ServiceEntry); ok {
			n += len(se.GetHosts())
		}
	}
	return n
}
