package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
)

// Input is one summary to merge and where it came from (a file name, for messages).
type Input struct {
	Source  string
	Summary *summary.Summary
}

// Options configure Merge.
type Options struct {
	// Scenario, if set, has its thresholds evaluated once on the merged metrics.
	Scenario *scenarios.Scenario
	// ToolVersion goes into the merged summary's metadata.
	ToolVersion string
	// Harness says when the merged run is marked harness-saturated (zero fields: the
	// defaults): by the fleet's start lateness, and by CPU when shards scraped the control
	// plane's (see distributedCPU).
	Harness collect.HarnessLimits
}

// maxGauges are gauges whose merged value is the largest shard's, not the sum (a lateness,
// a ratio, a duration); every other gauge is a count or an amount and is summed.
var maxGauges = map[string]bool{
	collect.MetricSimLateness:   true,
	collect.MetricEventsPerPush: true,
	collect.MetricPhaseDuration: true,
	collect.MetricClockOffset:   true,
}

// eventDerived are the metrics a merge recomputes from the per-event records: a shard's
// figure covers only its own clients (convergence is a maximum over every client).
var eventDerived = map[string]bool{
	fleet.MetricConvergence:           true,
	fleet.MetricProbeEvents:           true,
	collect.MetricEventsMissed:        true,
	collect.MetricShardsMissingEvents: true,
	collect.MetricShards:              true,
}

// Merge combines the summaries of a distributed run — one per fleet shard (metadata.segment
// set) and optionally the simulator's (command "sim") — into one summary of the whole run:
// histograms are added, counters and amount gauges summed (see maxGauges), rates' passes and
// fails summed, phases aligned on the simulator's clock (each shard's phase times corrected by
// its measured clock offset) and every event's record combined across shards (convergence is
// the largest over shards; an event a subscribed shard does not hold counts as incomplete).
// The scenario's thresholds are evaluated once, on the merged figures. Inputs that do not
// form one run (missing or repeated shards, different shard counts, start times or scenarios,
// conflicting metric types) are an error naming the input.
func Merge(inputs []Input, opts Options) (*summary.Summary, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: no summaries to merge")
	}
	var (
		errs    []error
		shards  []Input
		sim     *Input
		count   = 0
		seen    = map[int]string{}
		startAt *time.Time
		startBy string
		scen    string
		scenBy  string
		cfg     any
		cfgBy   string
		runID   string
		runBy   string
	)
	for i := range inputs {
		in := inputs[i]
		s := in.Summary
		if s == nil {
			errs = append(errs, fmt.Errorf("%s: no summary", in.Source))
			continue
		}
		switch s.Metadata.Command {
		case "sim":
			if sim != nil {
				errs = append(errs, fmt.Errorf("%s: a second simulator summary (the first is %s): a run has one simulator", in.Source, sim.Source))
				continue
			}
			sim = &inputs[i]
		case "fleet":
			seg := segmentOf(s)
			if count == 0 {
				count = seg.Count
			} else if seg.Count != count {
				errs = append(errs, fmt.Errorf("%s: shard %s of a %d-shard fleet, but other inputs are of a %d-shard fleet", in.Source, seg, seg.Count, count))
				continue
			}
			if prev, dup := seen[seg.Index]; dup {
				errs = append(errs, fmt.Errorf("%s: shard %s is also %s: pass each shard's summary once", in.Source, seg, prev))
				continue
			}
			seen[seg.Index] = in.Source
			shards = append(shards, in)
		default:
			errs = append(errs, fmt.Errorf("%s: a %q summary cannot be merged: merge takes the summaries of 'xdslab fleet' shards and of 'xdslab sim --publish'", in.Source, s.Metadata.Command))
			continue
		}
		if at := s.Metadata.StartAt; at != nil {
			if startAt == nil {
				startAt, startBy = at, in.Source
			} else if !at.Equal(*startAt) {
				errs = append(errs, fmt.Errorf("%s: start time %s differs from %s's %s: the inputs are not one run", in.Source, at.Format(time.RFC3339Nano), startBy, startAt.Format(time.RFC3339Nano)))
			}
		}
		if id := RunOf(s); id != "" {
			if runID == "" {
				runID, runBy = id, in.Source
			} else if id != runID {
				errs = append(errs, fmt.Errorf("%s: run %s differs from %s's run %s: the inputs are not one run; merge the files of one run (xdslab merge picks one: --run ID)", in.Source, id, runBy, runID))
			}
		}
		if name := s.Metadata.Labels["scenario"]; name != "" {
			if scen == "" {
				scen, scenBy = name, in.Source
			} else if name != scen {
				errs = append(errs, fmt.Errorf("%s: scenario %q differs from %s's %q", in.Source, name, scenBy, scen))
			}
		}
		// The scenario each process ran, as it resolved it: one name is not one run (another
		// seed, client count or churn under the same name measures something else).
		if len(s.Config) > 0 {
			var c any
			if err := json.Unmarshal(s.Config, &c); err != nil {
				errs = append(errs, fmt.Errorf("%s: its scenario config does not decode: %v", in.Source, err))
			} else if cfg == nil {
				cfg, cfgBy = c, in.Source
			} else if where := configDiff(cfgBy, cfg, in.Source, c, ""); where != "" {
				errs = append(errs, fmt.Errorf("%s: its scenario config differs from %s's (%s): the inputs are not one run; merge the summaries of processes started with one scenario file", in.Source, cfgBy, where))
			}
		}
	}
	if opts.Scenario != nil && scen != "" && opts.Scenario.Name != scen {
		errs = append(errs, fmt.Errorf("merge: the scenario given is %q but %s (and the other inputs) ran scenario %q: pass --scenario %s, or the shards of a %q run",
			opts.Scenario.Name, scenBy, scen, scen, opts.Scenario.Name))
	}
	if opts.Scenario != nil && cfg != nil && (scen == "" || opts.Scenario.Name == scen) {
		// The given scenario re-gates the run: its thresholds may differ, nothing else. The
		// merged summary embeds it as the run's config (compare reads its seed from there).
		if j, err := collect.ScenarioJSON(opts.Scenario); err == nil {
			var given any
			if err := json.Unmarshal(j, &given); err == nil {
				ran := withoutThresholds(cfg)
				if where := configDiff(cfgBy, ran, "--scenario", keysOf(ran, withoutThresholds(given)), ""); where != "" {
					errs = append(errs, fmt.Errorf("merge: the scenario given differs from the one the inputs ran (%s): only its thresholds may differ; pass the scenario file the run was started with, or leave --scenario out to use the one %s embeds", where, cfgBy))
				}
			}
		}
	}
	if len(shards) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("merge: no fleet shard summary among the inputs"))
	}
	if count > 0 && len(seen) < count {
		var missing []string
		for i := range count {
			if _, ok := seen[i]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", i, count))
			}
		}
		errs = append(errs, fmt.Errorf("merge: shard(s) %s missing: every shard's summary is needed for exact totals", strings.Join(missing, ", ")))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(shards, func(i, j int) bool { return segIndex(shards[i].Summary) < segIndex(shards[j].Summary) })
	all := slices.Clone(shards)
	if sim != nil {
		all = append(all, *sim)
	}

	// Bounds of the merged run, on the simulator's clock.
	var started, ended time.Time
	for _, in := range all {
		off := clockOffset(in.Summary)
		b, e := in.Summary.Metadata.Started.Add(off), in.Summary.Metadata.Ended.Add(off)
		if started.IsZero() || b.Before(started) {
			started = b
		}
		if e.After(ended) {
			ended = e
		}
	}
	dur := ended.Sub(started)

	events := mergeEvents(shards, sim)
	metrics, notes, err := mergeMetrics(all, dur, len(events) > 0)
	if err != nil {
		return nil, err
	}
	if n := latencyNote(shards); n != "" {
		notes = append(notes, n)
	}
	add := func(ms ...summary.Metric) { metrics = append(metrics, ms...) }
	if len(events) > 0 {
		ms, err := eventMetrics(events, dur)
		if err != nil {
			return nil, err
		}
		add(ms...)
	}
	add(summary.NewGauge(collect.MetricShards, summary.Default, float64(count), float64(count), float64(count), nil))

	// Clock offsets.
	var offs []float64
	for _, in := range shards {
		if c := in.Summary.Metadata.Clock; c != nil {
			offs = append(offs, c.OffsetSeconds)
		}
	}
	if len(offs) > 0 {
		lo, hi, big := offs[0], offs[0], 0.0
		for _, o := range offs {
			lo, hi, big = math.Min(lo, o), math.Max(hi, o), math.Max(big, math.Abs(o))
		}
		metrics = slices.DeleteFunc(metrics, func(m summary.Metric) bool { return m.Name == collect.MetricClockOffset })
		add(summary.NewGauge(collect.MetricClockOffset, summary.Time, big, lo, hi, nil))
	}

	// Phases, on the simulator's clock; their durations replace the shards' gauges.
	phases := mergePhases(all)
	if len(phases) > 0 {
		metrics = slices.DeleteFunc(metrics, func(m summary.Metric) bool { return m.Name == collect.MetricPhaseDuration })
		for _, p := range phases {
			d := p.End.Sub(p.Start).Seconds()
			add(summary.NewGauge(collect.MetricPhaseDuration, summary.Time, d, 0, d, map[string]string{"phase": p.Name}))
		}
	}

	// The harness: the shards' start lateness and receive backlog merged; CPU is per machine.
	metrics = slices.DeleteFunc(metrics, func(m summary.Metric) bool {
		return m.Name == collect.MetricHarnessSaturated || m.Name == collect.MetricHarnessCPURatio
	})
	// The control plane's CPU, as the shards that scraped it measured it over their runs: the
	// longest window, not their sum (they measured one process).
	metrics = slices.DeleteFunc(metrics, func(m summary.Metric) bool {
		return m.Name == collect.MetricCPUSeconds && m.Tags["side"] == collect.SideControlPlane
	})
	hc := distributedCPU(shards, metrics)
	if hc.HasControlPlane {
		add(summary.NewGauge(collect.MetricCPUSeconds, summary.Time, hc.ControlPlane, 0, hc.ControlPlane, map[string]string{"side": collect.SideControlPlane}))
	}
	hv := collect.AssessHarness(metrics, hc, opts.Harness)
	add(hv.Metrics...)

	labels := map[string]string{"shards": strconv.Itoa(count), "note.harness": hv.Note}
	if hv.Saturated != "" {
		labels["note.saturated"] = hv.Saturated
	}
	if scen != "" {
		labels["scenario"] = scen
	}
	if runID != "" {
		labels[LabelRun] = runID
	}
	if len(notes) > 0 {
		labels["note.merge"] = strings.Join(notes, "; ")
	}
	if note := collect.MissedNote(events); note != "" {
		labels["note.missed"] = note
	}
	if sim == nil {
		labels["note.sim"] = "no simulator summary among the inputs: simulator figures and the events no shard recorded are not in this summary"
	}
	// A shard stopped by a signal measured part of the run: the merge says which.
	var stopped []string
	for _, in := range shards {
		if n := in.Summary.Metadata.Labels["note.interrupted"]; n != "" {
			stopped = append(stopped, fmt.Sprintf("shard %s: %s", segmentOf(in.Summary), n))
		}
	}
	if len(stopped) > 0 {
		labels["note.interrupted"] = strings.Join(stopped, "; ")
	}
	out := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", ToolVersion: opts.ToolVersion, Command: "merge",
			Started: started.UTC(), Ended: ended.UTC(), DurationSeconds: dur.Seconds(), Labels: labels,
			StartAt: startAt, Phases: phases},
		Results: summary.Results{Passed: true, Metrics: metrics, Events: events},
	}
	for _, in := range all {
		m := in.Summary.Metadata
		out.Metadata.Shards = append(out.Metadata.Shards, summary.Shard{Source: in.Source, Command: m.Command,
			Segment: m.Segment, Started: m.Started, Ended: m.Ended, Clock: m.Clock, Events: len(in.Summary.Results.Events)})
	}
	if opts.Scenario != nil {
		cfg, err := collect.ScenarioJSON(opts.Scenario)
		if err != nil {
			return nil, err
		}
		out.Config = cfg
		out.Results.Thresholds, out.Results.Passed = collect.EvaluateThresholds(opts.Scenario, out.Results)
	}
	out.Results.Sort()
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("merge: merged summary: %w", err)
	}
	return out, nil
}

func segIndex(s *summary.Summary) int {
	if s.Metadata.Segment == nil {
		return 0
	}
	return s.Metadata.Segment.Index
}

// clockOffset is what to add to s's local times to put them on the simulator's clock.
func clockOffset(s *summary.Summary) time.Duration {
	if c := s.Metadata.Clock; c != nil {
		return time.Duration(c.OffsetSeconds * float64(time.Second))
	}
	return 0
}

// mergeMetrics combines every metric entry by key. Event-derived metrics are left out when
// events are merged (they are recomputed from them).
func mergeMetrics(in []Input, dur time.Duration, haveEvents bool) ([]summary.Metric, []string, error) {
	type group struct {
		first  summary.Metric
		from   []string
		values []summary.Metric
	}
	groups := map[string]*group{}
	var order []string
	var errs []error
	for _, x := range in {
		for _, m := range x.Summary.Results.Metrics {
			if haveEvents && eventDerived[m.Name] {
				continue
			}
			k := m.Key()
			g := groups[k]
			if g == nil {
				g = &group{first: m}
				groups[k] = g
				order = append(order, k)
			} else if m.Type != g.first.Type || m.Contains != g.first.Contains {
				errs = append(errs, fmt.Errorf("%s: metric %s is a %s of %s, but %s has it as a %s of %s", x.Source, k, m.Type, m.Contains, g.from[0], g.first.Type, g.first.Contains))
				continue
			}
			g.from = append(g.from, x.Source)
			g.values = append(g.values, m)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	var out []summary.Metric
	var notes []string
	for _, k := range order {
		g := groups[k]
		m, ok, err := mergeMetric(g.values, dur)
		if err != nil {
			return nil, nil, fmt.Errorf("metric %s (from %s): %w", k, strings.Join(g.from, ", "), err)
		}
		if !ok {
			notes = append(notes, k+" left out: a trend without a histogram cannot be merged exactly")
			continue
		}
		out = append(out, m)
	}
	return out, notes, nil
}

// mergeMetric merges one metric's entries; ok is false for trends that carry no histogram
// (bucket trends read from Prometheus) present in more than one input.
func mergeMetric(ms []summary.Metric, dur time.Duration) (summary.Metric, bool, error) {
	first := ms[0]
	tags := maps.Clone(first.Tags)
	switch first.Type {
	case summary.Counter:
		n := 0.0
		for _, m := range ms {
			n += m.Values["count"]
		}
		return summary.NewCounter(first.Name, first.Contains, n, dur, tags), true, nil
	case summary.Gauge:
		v, lo, hi := 0.0, 0.0, 0.0
		for i, m := range ms {
			if maxGauges[first.Name] {
				if i == 0 {
					v, lo, hi = m.Values["value"], m.Values["min"], m.Values["max"]
				}
				v, lo, hi = math.Max(v, m.Values["value"]), math.Min(lo, m.Values["min"]), math.Max(hi, m.Values["max"])
				continue
			}
			v, lo, hi = v+m.Values["value"], lo+m.Values["min"], hi+m.Values["max"]
		}
		return summary.NewGauge(first.Name, first.Contains, v, lo, hi, tags), true, nil
	case summary.Rate:
		p, f := 0.0, 0.0
		for _, m := range ms {
			p, f = p+m.Values["passes"], f+m.Values["fails"]
		}
		return summary.NewRate(first.Name, p, f, tags), true, nil
	case summary.Trend:
		if len(ms) == 1 {
			return first, true, nil
		}
		var acc *hdr.Histogram
		scale := 0.0
		for _, m := range ms {
			if m.Histogram == nil {
				return summary.Metric{}, false, nil
			}
			h, err := m.Histogram.Decode()
			if err != nil {
				return summary.Metric{}, false, err
			}
			if acc == nil {
				acc, scale = h, m.Histogram.Scale
				continue
			}
			if m.Histogram.Scale != scale {
				return summary.Metric{}, false, fmt.Errorf("histogram scales differ (%g and %g)", scale, m.Histogram.Scale)
			}
			if dropped := acc.Merge(h); dropped > 0 {
				return summary.Metric{}, false, fmt.Errorf("%d values out of the histogram's range", dropped)
			}
		}
		m, err := summary.NewTrend(first.Name, first.Contains, acc, scale, tags)
		return m, err == nil, err
	}
	return summary.Metric{}, false, fmt.Errorf("unknown metric type %q", first.Type)
}

// maxMissedBy is how many missing clients a merged event names.
const maxMissedBy = 3

// mergeEvents combines the shards' event records by id: counts summed, convergence the largest,
// censored if any shard's is; the simulator's record (when given) supplies t0 and the ack count
// and lists the events no shard recorded. A shard that subscribed to the probes and lacks an
// event adds to its ShardsMissing. MissedBy keeps the first maxMissedBy clients the shards
// name, in shard order.
func mergeEvents(shards []Input, sim *Input) []summary.Event {
	byID := map[uint64]*summary.Event{}
	holders := map[uint64]int{}
	var ids []uint64
	get := func(e summary.Event) *summary.Event {
		m := byID[e.ID]
		if m == nil {
			m = &summary.Event{ID: e.ID, Kind: e.Kind}
			byID[e.ID] = m
			ids = append(ids, e.ID)
		}
		return m
	}
	if sim != nil {
		for _, e := range sim.Summary.Results.Events {
			m := get(e)
			m.T0, m.Acked = e.T0, e.Acked
		}
	}
	subscribed := 0
	for _, in := range shards {
		if in.Summary.Metadata.Probes != "" {
			subscribed++
		}
		for _, e := range in.Summary.Results.Events {
			m := get(e)
			if m.T0.IsZero() {
				m.T0 = e.T0
			}
			m.Reached += e.Reached
			m.Observed += e.Observed
			m.AlreadyHeld += e.AlreadyHeld
			m.Superseded += e.Superseded
			m.Missed += e.Missed
			if n := maxMissedBy - len(m.MissedBy); n > 0 {
				m.MissedBy = append(m.MissedBy, e.MissedBy[:min(n, len(e.MissedBy))]...)
			}
			m.Unresolved += e.Unresolved
			m.Received += e.Received
			m.EarlyReceives += e.EarlyReceives
			m.ConvergenceSeconds = math.Max(m.ConvergenceSeconds, e.ConvergenceSeconds)
			m.PushLatencies += e.PushLatencies
			m.Censored = m.Censored || e.Censored
			if in.Summary.Metadata.Probes != "" {
				holders[e.ID]++
			}
		}
	}
	slices.Sort(ids)
	out := make([]summary.Event, 0, len(ids))
	for _, id := range ids {
		e := *byID[id]
		e.ShardsMissing = subscribed - holders[id]
		if e.ShardsMissing > 0 {
			e.Censored = true
		}
		out = append(out, e)
	}
	return out
}

// eventMetrics recomputes the event-derived metrics over the merged events, as the matcher and
// the runner define them: convergence (overall and per kind) over measured events, probe
// events, incomplete (missed) events overall and per kind, and events some shard lacks.
func eventMetrics(events []summary.Event, dur time.Duration) ([]summary.Metric, error) {
	all := measure.NewLatencyHistogram()
	byKind := map[string]*hdr.Histogram{}
	missed := map[string]int{}
	kinds := map[string]bool{}
	incomplete, shardMissing := 0, 0
	for _, e := range events {
		kinds[e.Kind] = true
		if !e.Complete() {
			incomplete++
			missed[e.Kind]++
		}
		if e.ShardsMissing > 0 {
			shardMissing++
		}
		if !e.Measured() {
			continue
		}
		h := byKind[e.Kind]
		if h == nil {
			h = measure.NewLatencyHistogram()
			byKind[e.Kind] = h
		}
		us := max(int64(math.Round(e.ConvergenceSeconds*1e6)), 0)
		if err := h.RecordValue(us); err != nil {
			_ = h.RecordValue(h.HighestTrackableValue())
		}
	}
	for _, h := range byKind {
		all.Merge(h)
	}
	var out []summary.Metric
	m, err := summary.NewTrend(fleet.MetricConvergence, summary.Time, all, 1e-6, nil)
	if err != nil {
		return nil, err
	}
	out = append(out, m)
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		m, err := summary.NewTrend(fleet.MetricConvergence, summary.Time, byKind[k], 1e-6, map[string]string{"kind": k})
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	n := float64(len(events))
	out = append(out,
		summary.NewCounter(fleet.MetricProbeEvents, summary.Default, n, dur, nil),
		summary.NewCounter(collect.MetricEventsMissed, summary.Default, float64(incomplete), dur, nil),
		summary.NewCounter(collect.MetricShardsMissingEvents, summary.Default, float64(shardMissing), dur, nil))
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		out = append(out, summary.NewCounter(collect.MetricEventsMissed, summary.Default, float64(missed[k]), dur, map[string]string{"kind": k}))
	}
	return out, nil
}

// mergePhases aligns the inputs' phases on the simulator's clock: each phase runs from its
// earliest start to its latest end over the inputs, in order of start.
func mergePhases(in []Input) []summary.Phase {
	byName := map[string]*summary.Phase{}
	for _, x := range in {
		off := clockOffset(x.Summary)
		for _, p := range x.Summary.Metadata.Phases {
			s, e := p.Start.Add(off).UTC(), p.End.Add(off).UTC()
			m := byName[p.Name]
			if m == nil {
				byName[p.Name] = &summary.Phase{Name: p.Name, Start: s, End: e}
				continue
			}
			if s.Before(m.Start) {
				m.Start = s
			}
			if e.After(m.End) {
				m.End = e
			}
		}
	}
	out := make([]summary.Phase, 0, len(byName))
	for _, p := range byName {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// distributedCPU is what a merge knows of both sides' CPU. The control plane's comes from the
// shards that scraped its metrics (fleet --target-metrics): the largest of their figures, each
// taken over the shard's whole run. It is compared with the CPU of the shards that reached it
// on an address of their own machine (label targetLocal yes), which share its cores; shards
// elsewhere, and the simulator (where it ran is not known), take none of them. Without the
// control plane's CPU, the harness's is summed over every process and nothing is compared.
func distributedCPU(shards []Input, merged []summary.Metric) collect.HarnessCPU {
	cpuOf := func(ms []summary.Metric, side string) (float64, bool) {
		m, ok := (summary.Results{Metrics: ms}).Find(collect.MetricCPUSeconds, map[string]string{"side": side})
		return m.Values["value"], ok
	}
	var hc collect.HarnessCPU
	local, localCPU, scraped := 0, 0.0, 0
	for _, in := range shards {
		if cp, ok := cpuOf(in.Summary.Results.Metrics, collect.SideControlPlane); ok {
			scraped++
			if !hc.HasControlPlane || cp > hc.ControlPlane {
				hc.ControlPlane, hc.HasControlPlane = cp, true
			}
		}
		if in.Summary.Metadata.Labels[collect.LabelTargetLocal] == "yes" {
			if h, ok := cpuOf(in.Summary.Results.Metrics, collect.SideHarness); ok {
				local++
				localCPU += h
			}
		}
	}
	from := fmt.Sprintf("%d shards'", scraped)
	if scraped == 1 {
		from = "1 shard's"
	}
	if !hc.HasControlPlane {
		hc.Harness, hc.HasHarness = cpuOf(merged, collect.SideHarness)
		hc.Where = "the harness's summed over every process of the run; the control plane's is not collected: no shard was given --target-metrics"
		return hc
	}
	if local == 0 {
		hc.Harness, hc.HasHarness = cpuOf(merged, collect.SideHarness)
		hc.Where = fmt.Sprintf("the harness's summed over every process; the control plane's is from its metrics, the longest of %s; "+
			"no shard reached it on an address of its own machine", from)
		return hc
	}
	hc.Harness, hc.HasHarness, hc.Shared = localCPU, true, true
	hc.Where = fmt.Sprintf("the harness's summed over the %d of %d shards that reached the control plane on an address of their own machine, "+
		"so they are taken to share its cores; the simulator's is not counted, as where it ran is not known; the control plane's is from its metrics, the longest of %s",
		local, len(shards), from)
	return hc
}

// segmentOf is the shard a fleet summary covers: its segment, or the whole fleet (0/1) when
// it names none.
func segmentOf(s *summary.Summary) summary.Segment {
	if s.Metadata.Segment != nil {
		return *s.Metadata.Segment
	}
	return summary.Segment{Index: 0, Count: 1}
}

// withoutThresholds is a decoded scenario config without its thresholds and description (what
// a scenario given to merge may change).
func withoutThresholds(c any) any {
	m, ok := c.(map[string]any)
	if !ok {
		return c
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "thresholds" && k != "description" {
			out[k] = v
		}
	}
	return out
}

// keysOf is b with, in every object, only the keys a has: a summary written before a scenario
// key existed does not hold it, and that is no difference.
func keysOf(a, b any) any {
	if al, ok := a.([]any); ok {
		bl, ok := b.([]any)
		if !ok || len(al) != len(bl) {
			return b
		}
		out := make([]any, len(bl))
		for i := range bl {
			out[i] = keysOf(al[i], bl[i])
		}
		return out
	}
	am, ok := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok || !ok2 {
		return b
	}
	out := make(map[string]any, len(am))
	for k, v := range bm {
		if av, ok := am[k]; ok {
			out[k] = keysOf(av, v)
		}
	}
	return out
}

// configDiff names the first place where two decoded scenario configs differ ("seed: 7 in a,
// 99 in b"), or "" when they are equal. Decoding and walking the values compares them
// canonically: key order and spacing do not count.
func configDiff(aBy string, a any, bBy string, b any, path string) string {
	at := func() string {
		if path == "" {
			return "the config"
		}
		return path
	}
	show := func(v any) string {
		if v == nil {
			return "absent"
		}
		j, _ := json.Marshal(v)
		if len(j) > 60 {
			return string(j[:57]) + "..."
		}
		return string(j)
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Sorted(maps.Keys(av))
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if d := configDiff(aBy, av[k], bBy, bv[k], p); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		if len(av) != len(bv) {
			return fmt.Sprintf("%s: %d entries in %s, %d in %s", at(), len(av), aBy, len(bv), bBy)
		}
		for i := range av {
			if d := configDiff(aBy, av[i], bBy, bv[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	default:
		if reflect.DeepEqual(a, b) {
			return ""
		}
	}
	return fmt.Sprintf("%s: %s in %s, %s in %s", at(), show(a), aBy, show(b), bBy)
}

// latencyNote says when the fleet shards do not all carry the untagged push latency: the
// merged figure then covers only the shards that do (or there is none), which a threshold or a
// compare would otherwise take for the whole fleet's.
func latencyNote(shards []Input) string {
	var lacking []string
	for _, in := range shards {
		if _, ok := in.Summary.Results.Find(fleet.MetricPushLatency, nil); !ok {
			lacking = append(lacking, in.Source)
		}
	}
	switch {
	case len(lacking) == 0:
		return ""
	case len(lacking) == len(shards):
		return fmt.Sprintf("no shard measured %s (were they given --probes?): the merged run has no push latency", fleet.MetricPushLatency)
	}
	return fmt.Sprintf("%s lack(s) %s: the merged push latency covers only the other %d of %d shards' clients",
		strings.Join(lacking, ", "), fleet.MetricPushLatency, len(shards)-len(lacking), len(shards))
}
