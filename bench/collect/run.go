package collect

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// Target is what a run's summary says of the control plane it drove.
type Target struct {
	// Kind is "in-process" or "external"; Addr is the ADS address (host:port).
	Kind, Addr string
	// MetricsSource says where the control plane's metrics were read from ("" when they were
	// not: an external target without --target-metrics).
	MetricsSource string
	// AdmissionRate is the in-process control plane's admission rate of new streams per
	// second (0: an external target, whose limit is not known here).
	AdmissionRate float64
	// Local says whether an external target's ADS host is an address of this machine (nil
	// when that could not be told, LocalErr saying why): only then can its CPU and the
	// harness's be compared as a contention of the same cores.
	Local    *bool
	LocalErr error
}

// inProcess reports whether the control plane ran in this process.
func (t Target) inProcess() bool { return t.Kind == "in-process" }

// RunInput is what one run measured, as Run turns it into a summary.
type RunInput struct {
	Scenario *scenarios.Scenario
	// Index is the repeat (from 1; 0 for a single run).
	Index       int
	ToolVersion string
	// Began and Ended bound the run.
	Began, Ended time.Time
	Target       Target
	// Fleet is the run's fleet, stopped: its metrics, observer and matcher are read.
	Fleet *fleet.Fleet
	// ConnectFull counts, by client group, the clients holding their first full config when
	// the connect phase ended.
	ConnectFull map[string]uint64
	// Sim is the simulator's count of what it applied.
	Sim simulator.Stats
	// Unmeasured counts the events whose expectation the fleet could not register.
	Unmeasured int
	// CPFirst, CPStart and CPEnd are the control plane's metrics right after it started, at
	// the start of the measure phase and after the drain; CPPeakRSS is the largest resident
	// memory sampled in between (an external control plane's).
	CPFirst, CPStart, CPEnd CPSample
	CPPeakRSS               float64
	// UsageStart and UsageEnd are this process's CPU and memory at the run's bounds;
	// CPUBySide splits its CPU by side (nil without a CPU profile).
	UsageStart, UsageEnd ProcessUsage
	CPUBySide            map[string]time.Duration
	// Harness says when the run is marked harness-saturated.
	Harness HarnessLimits
	Phases  []summary.Phase
	// Notes qualify figures (note.KEY in the summary's labels); Run adds its own to a copy.
	Notes map[string]string
}

// Run builds the summary of a run: the fleet's metrics, the simulator's counts, events missed,
// the control plane's own figures, CPU and memory of both sides, the harness verdict and the
// phases, with the scenario's thresholds evaluated on them.
func Run(in RunInput) (*summary.Summary, error) {
	notes := maps.Clone(in.Notes)
	if notes == nil {
		notes = map[string]string{}
	}
	dur := in.Ended.Sub(in.Began)
	metrics, err := FleetMetrics(in.Fleet.Figures(), dur)
	if err != nil {
		return nil, err
	}
	add := func(ms ...summary.Metric) { metrics = append(metrics, ms...) }

	fst := in.Fleet.Observer().Stats()
	if note := ConnectFailureNote(fst); note != "" {
		notes["connect failures"] = note
	}
	if note := AdmissionNote(fst.ConnectFailures["ResourceExhausted"], in.Target.AdmissionRate, in.Scenario); note != "" {
		notes["admission"] = note
	}
	add(ConnectIncomplete(in.Scenario, in.Fleet.GroupSizes(), in.ConnectFull)...)

	// Simulator events.
	st := in.Sim
	add(simRows(st, dur, true)...)
	kinds := churnKinds(st)

	// Events missed: an event that some client in its reach never observed (nor superseded).
	res := in.Fleet.Matcher().Results()
	missed := map[string]int{}
	total := 0
	for _, e := range res.Events {
		if !e.Complete() {
			missed[e.Kind]++
			total++
		}
	}
	events := SummaryEvents(res, in.Fleet.NodeID)
	if note := MissedNote(events); note != "" {
		notes["missed"] = note
	}
	// Events no client was in reach of (every client's groups, namespaces or subscriptions
	// left them out): counted among the events, in no class; say so rather than let them vanish.
	unreached := 0
	for _, e := range res.Events {
		if e.Reached == 0 && e.Unresolved == 0 {
			unreached++
		}
	}
	if unreached > 0 {
		notes["unreached"] = fmt.Sprintf("%d of %d events reached no client (none of the clients in their reach was subscribed to what they changed): no latency, and not missed", unreached, len(res.Events))
	}
	// Observations whose response arrived before t0 (a client applying a backlog: the matcher
	// counts them at latency 0); a loaded harness shows here, and the low percentiles lie.
	early := 0
	for _, e := range res.Events {
		early += e.EarlyReceives
	}
	add(summary.NewCounter(MetricEarlyReceives, summary.Default, float64(early), dur, nil))
	if early > 0 {
		notes["early"] = fmt.Sprintf("%d observations were of responses received before their event's t0 and count as latency 0 (clients behind on their backlog: the harness is overloaded)", early)
	}
	// Convergence (overall and per kind) comes with the fleet's metrics: the matcher is its
	// only definition.
	add(summary.NewCounter(MetricEventsMissed, summary.Default, float64(total), dur, nil),
		summary.NewCounter(MetricEventsUnmeasured, summary.Default, float64(in.Unmeasured), dur, nil))
	for _, k := range kinds {
		add(summary.NewCounter(MetricEventsMissed, summary.Default, float64(missed[k]), dur, map[string]string{"kind": k}))
	}

	// The control plane's own figures.
	collectCP(in, notes, add, dur, st.Events)

	// CPU and memory.
	cpEnd := in.CPEnd
	if cpEnd.hasRSS {
		cpEnd.rss = max(cpEnd.rss, in.CPPeakRSS)
	}
	u := usageBetween(in.UsageStart, in.UsageEnd, in.CPUBySide, in.CPFirst, cpEnd, in.Target.Kind, in.CPStart)
	if u.processCPU > 0 {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.processCPU.Seconds(), 0, u.processCPU.Seconds(), map[string]string{"side": "process"}))
		add(summary.NewGauge(MetricPeakRSS, summary.Data, float64(u.peakRSS), 0, float64(u.peakRSS), map[string]string{"side": "process"}))
	}
	if u.bySide != nil {
		// Both sides are always reported: a side the 100 Hz profile caught no sample of (in a
		// short run on a loaded machine) is reported as 0, a figure, not a missing metric.
		for _, side := range []string{SideControlPlane, SideHarness} {
			if _, ok := u.bySide[side]; !ok {
				u.bySide[side] = 0
			}
		}
	}
	for side, d := range u.bySide {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, d.Seconds(), 0, d.Seconds(), map[string]string{"side": side}))
	}
	if !in.Target.inProcess() && u.processCPU > 0 {
		// Against an external target this whole process is the harness.
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.processCPU.Seconds(), 0, u.processCPU.Seconds(), map[string]string{"side": SideHarness}))
		add(summary.NewGauge(MetricPeakRSS, summary.Data, float64(u.peakRSS), 0, float64(u.peakRSS), map[string]string{"side": SideHarness}))
	}
	if u.hasTargetCPU {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.targetCPU, 0, u.targetCPU, map[string]string{"side": SideControlPlane}))
	}
	if u.hasTargetRSS {
		add(summary.NewGauge(MetricPeakRSS, summary.Data, u.targetRSS, 0, u.targetRSS, map[string]string{"side": SideControlPlane}))
	}
	notes["cpu"] = u.note

	// The harness: its CPU beside the control plane's, its lateness and backlog, and whether
	// it was the bottleneck.
	hv := AssessHarness(metrics, runHarnessCPU(in.Target, u), in.Harness)
	add(hv.Metrics...)
	notes["harness"] = hv.Note
	if hv.Saturated != "" {
		notes["saturated"] = hv.Saturated
	}

	// Phases.
	add(phaseDurations(in.Phases)...)

	cfg, err := ScenarioJSON(in.Scenario)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"scenario": in.Scenario.Name, "target": in.Target.Kind, "ads": in.Target.Addr}
	if in.Index > 0 {
		labels["repeat"] = strconv.Itoa(in.Index)
	}
	if in.Target.MetricsSource != "" {
		labels["controlPlaneMetrics"] = in.Target.MetricsSource
	}
	for k, v := range notes {
		labels["note."+k] = v
	}
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", ToolVersion: in.ToolVersion, Command: "run",
			Started: in.Began.UTC(), Ended: in.Ended.UTC(), DurationSeconds: dur.Seconds(), Labels: labels},
		Config: cfg,
		// The per-event records (t0, the clients in reach by class, convergence), as a fleet
		// shard writes them: what compare and merge need beyond the histograms.
		Results: summary.Results{Metrics: metrics, Events: events},
	}
	s.Results.Thresholds, s.Results.Passed = EvaluateThresholds(in.Scenario, s.Results)
	s.Results.Sort()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("run summary: %w", err)
	}
	return s, nil
}

// collectCP adds debounce effectiveness and push cycles (over the measure and drain phases:
// CPStart to CPEnd), cache hit rates, responses and rejects (over the whole run: CPFirst to
// CPEnd) from the control plane's metrics. Every counter is the difference of two samples; a
// figure whose samples are missing, or span a restart of the target, is left out with a note
// saying why, never reported as the target's lifetime count or as a negative one.
func collectCP(in RunInput, notes map[string]string, add func(...summary.Metric), dur time.Duration, events int) {
	a, b, first := in.CPStart, in.CPEnd, in.CPFirst
	switch {
	case !b.ok || b.cyclesFrom == "":
		notes["debounce"] = NotAvailable + ": the target exports neither xdslab_cp_push_cycles_total nor pilot_debounce_time" + in.Target.metricsHint()
	case !a.ok || a.cyclesFrom != b.cyclesFrom:
		notes["debounce"] = NotAvailable + ": the control plane's metrics could not be read when the measure phase started, so its push cycles in the run are not known"
	case restartNote(a, b) != "":
		notes["debounce"] = "push cycles, events per push and debounce delay left out: " + restartNote(a, b)
	default:
		// Their rates are over the phases they count, not over the whole run.
		window := measureAndDrain(in.Phases, dur)
		cycles := b.pushCycles - a.pushCycles
		add(summary.NewCounter(MetricPushCycles, summary.Default, cycles, window, nil))
		if a.hasInbound && b.hasInbound {
			add(summary.NewCounter(MetricCPInbound, summary.Default, b.inbound-a.inbound, window, nil))
		}
		note := "push cycles from " + b.cyclesFrom + "; events per push = simulator events ÷ push cycles in the measure and drain phases"
		if cycles > 0 {
			perPush := float64(events) / cycles
			add(summary.NewGauge(MetricEventsPerPush, summary.Default, perPush, 0, perPush, nil))
		} else {
			note += fmt.Sprintf("; %s left out: no push cycles in the measure and drain phases (%d simulator events)", MetricEventsPerPush, events)
		}
		addBuckets := func(name string, contains summary.ValueType, source string, h histSnap) {
			m, err := bucketTrend(name, contains, source, h)
			if err != nil {
				note += "; " + name + " left out: " + err.Error()
				return
			}
			add(m)
		}
		if b.hasDebounce {
			if a.hasDebounce {
				addBuckets(MetricDebounceDelay, summary.Time, cpDebounceTime, b.debounce.sub(a.debounce))
			} else {
				note += "; " + MetricDebounceDelay + " left out: " + cpDebounceTime + " was not exported when the measure phase started"
			}
		}
		if b.hasPerPush {
			// The control plane's own view: change events (inbound updates) merged per cycle.
			if a.hasPerPush {
				addBuckets(cpEventsPerPush, summary.Default, cpEventsPerPush, b.perPush.sub(a.perPush))
			} else {
				note += "; " + cpEventsPerPush + " left out: it was not exported when the measure phase started"
			}
		}
		if b.hasQuiet {
			// The window at the end of the run; min and max of the two samples (start of the
			// measure phase, end of the run) show whether an adaptive policy moved it.
			lo, hi := b.quiet, b.quiet
			if a.hasQuiet {
				lo, hi = min(a.quiet, b.quiet), max(a.quiet, b.quiet)
			}
			add(summary.NewGauge(MetricDebounceQuiet, summary.Time, b.quiet, lo, hi, nil))
		}
		if b.hasDebounce || b.hasPerPush {
			note += "; " + MetricDebounceDelay + " and " + cpEventsPerPush + " are read from the control plane's Prometheus buckets: count and mean are exact, each quantile is the bucket that holds it"
		}
		notes["debounce"] = note
	}
	// Whole-run figures need the sample taken right after the target started.
	noFirst := "the control plane's metrics could not be read before the fleet connected, so its counts in the run are not known (the target's lifetime counts are no figure of the run)"
	switch {
	case !b.ok || len(b.cacheReads) == 0:
		notes["cache"] = NotAvailable + ": the target exports no xds_cache_reads" + in.Target.metricsHint()
	case !first.ok:
		notes["cache"] = "cache hit ratio left out: " + noFirst
	case restartNote(first, a, b) != "":
		notes["cache"] = "cache hit ratio left out: " + restartNote(first, a, b)
	default:
		var hits, others float64
		types := make([]string, 0, len(b.cacheReads))
		for t := range b.cacheReads {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			h, o := 0.0, 0.0
			for res, n := range b.cacheReads[t] {
				n -= first.cacheReads[t][res]
				if res == "hit" {
					h += n
				} else {
					o += n // misses and reads that bypass the cache
				}
			}
			hits, others = hits+h, others+o
			// The type "" is istiod's: reads with no per-type split, in the overall ratio only.
			if t != "" && h+o > 0 {
				add(summary.NewRate(MetricCacheHitRatio, h, o, map[string]string{"type": t}))
			}
		}
		note := "cache hit ratio = hits ÷ (hits + misses + bypassed reads) over connect, measure and drain"
		if _, istiod := b.cacheReads[""]; istiod {
			note += "; xds_cache_reads has no per-type split (istiod's type=hit|miss): overall ratio only"
		}
		if hits+others > 0 {
			add(summary.NewRate(MetricCacheHitRatio, hits, others, nil))
		} else {
			note = "cache hit ratio left out: no cache reads over connect, measure and drain"
		}
		notes["cache"] = note
	}
	switch {
	case !b.ok || (len(b.pushes) == 0 && len(b.rejects) == 0):
		notes["responses"] = NotAvailable + ": the target exports neither pilot_xds_pushes nor pilot_total_xds_rejects" + in.Target.metricsHint()
	case !first.ok:
		notes["responses"] = MetricCPResponses + " and " + MetricCPRejects + " left out: " + noFirst
	case restartNote(first, a, b) != "":
		notes["responses"] = MetricCPResponses + " and " + MetricCPRejects + " left out: " + restartNote(first, a, b)
	default:
		counts := func(name string, end, start map[string]float64) {
			if len(end) == 0 {
				return
			}
			total := 0.0
			for t, n := range end {
				n -= start[t]
				total += n
				add(summary.NewCounter(name, summary.Default, n, dur, map[string]string{"type": t}))
			}
			add(summary.NewCounter(name, summary.Default, total, dur, nil))
		}
		counts(MetricCPResponses, b.pushes, first.pushes)
		counts(MetricCPRejects, b.rejects, first.rejects)
		notes["responses"] = MetricCPResponses + " and " + MetricCPRejects + " = the control plane's pilot_xds_pushes and pilot_total_xds_rejects over connect, measure and drain"
	}
}

// measureAndDrain is the time from the start of the measure phase to the end of the drain,
// when the phases say (else dur): the window of the CPStart and CPEnd samples.
func measureAndDrain(phases []summary.Phase, dur time.Duration) time.Duration {
	var from, to time.Time
	for _, p := range phases {
		switch p.Name {
		case "measure":
			from = p.Start
		case "drain":
			to = p.End
		}
	}
	if from.IsZero() || to.IsZero() || !to.After(from) {
		return dur
	}
	return to.Sub(from)
}

// metricsHint says how to read the metrics of an external target that were not read.
func (t Target) metricsHint() string {
	if !t.inProcess() && t.MetricsSource == "" {
		return " (pass --target-metrics HOST:PORT to scrape it)"
	}
	return ""
}

// bucketTrend summarises the observations of a Prometheus histogram (source, as scraped) as a
// trend that claims no precision its buckets lack: count and mean exactly, every quantile as
// the bucket that holds it (summary.NewBucketTrend). It carries no HDR histogram.
func bucketTrend(name string, contains summary.ValueType, source string, h histSnap) (summary.Metric, error) {
	b, err := h.buckets(source)
	if err != nil {
		return summary.Metric{}, err
	}
	return summary.NewBucketTrend(name, contains, b, nil)
}

// ScenarioJSON is the resolved scenario as summary.json embeds it.
func ScenarioJSON(sc *scenarios.Scenario) (json.RawMessage, error) {
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("encode scenario %s: %w", sc.Name, err)
	}
	return b, nil
}
