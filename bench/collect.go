package bench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// The run's own metric names (the fleet's are in fakeenvoy: xdslab_fleet_*, xdslab_push_*,
// xdslab_convergence_seconds, xdslab_probe_*).
const (
	MetricTimeToFirstConfig = "xdslab_time_to_first_config_seconds"
	MetricSimEvents         = "xdslab_sim_events_total"
	MetricSimLate           = "xdslab_sim_events_late_total"
	MetricSimSkipped        = "xdslab_sim_events_skipped_total"
	MetricSimFailed         = "xdslab_sim_events_failed_total"
	MetricSimLateness       = "xdslab_sim_event_lateness_seconds"
	MetricEventsMissed      = "xdslab_events_missed_total"
	MetricEventsUnmeasured  = "xdslab_events_unmeasured_total"
	MetricEarlyReceives     = "xdslab_probe_early_receives_total"
	MetricPushCycles        = "xdslab_cp_push_cycles_total"
	MetricCPInbound         = "xdslab_cp_inbound_updates_total"
	MetricCPResponses       = "xdslab_cp_responses_total"
	MetricCPRejects         = "xdslab_cp_rejects_total"
	MetricEventsPerPush     = "xdslab_debounce_events_per_push"
	MetricDebounceDelay     = "xdslab_debounce_delay_seconds"
	MetricDebounceQuiet     = "xdslab_debounce_quiet_seconds"
	MetricCacheHitRatio     = "xdslab_cache_hit_ratio"
	MetricCPUSeconds        = "xdslab_cpu_seconds"
	MetricPeakRSS           = "xdslab_peak_rss_bytes"
	MetricPhaseDuration     = "xdslab_phase_duration_seconds"
	MetricConnectIncomplete = scenarios.MetricConnectIncomplete
)

// notAvailable marks a figure the target does not expose.
const notAvailable = "not available"

// collect builds the summary of the run.
func (r *run) collect(ended time.Time) (*summary.Summary, error) {
	dur := ended.Sub(r.began)
	metrics, err := FleetMetrics(r.fleet.Figures(), dur)
	if err != nil {
		return nil, err
	}
	add := func(ms ...summary.Metric) { metrics = append(metrics, ms...) }

	// Time to first config, under the run's name (the fleet's total and each client group's).
	for _, m := range metrics {
		if m.Name == fakeenvoy.MetricTimeToFirstConfig && (len(m.Tags) == 0 || len(m.Tags) == 1 && m.Tags["group"] != "") {
			c := m
			c.Name = MetricTimeToFirstConfig
			add(c)
		}
	}
	fst := r.fleet.Observer().Stats()
	if note := ConnectFailureNote(fst); note != "" {
		r.notes["connect failures"] = note
	}
	admit := 0.0
	if r.tgt.kind == "in-process" {
		admit = ControlPlaneOptions(r.sc).EffectiveAdmissionRate()
	}
	if note := AdmissionNote(fst.ConnectFailures["ResourceExhausted"], admit, r.sc); note != "" {
		r.notes["admission"] = note
	}
	add(ConnectIncomplete(r.sc, r.fleet.GroupSizes(), r.connectFull)...)

	// Simulator events.
	st := r.simStats
	add(summary.NewCounter(MetricSimEvents, summary.Default, float64(st.Events), dur, nil),
		summary.NewCounter(MetricSimLate, summary.Default, float64(st.Late), dur, nil),
		summary.NewCounter(MetricSimSkipped, summary.Default, float64(st.Skipped), dur, nil),
		summary.NewCounter(MetricSimFailed, summary.Default, float64(st.Failed), dur, nil))
	if st.Late > 0 {
		// How late late events fired (they fire at once, never shifted): a loaded harness shows here.
		mean := (st.TotalLateness / time.Duration(st.Late)).Seconds()
		add(summary.NewGauge(MetricSimLateness, summary.Time, mean, 0, st.MaxLateness.Seconds(), nil))
	}
	kinds := make([]string, 0, len(st.ByKind))
	for k := range st.ByKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ks := st.ByKind[simulator.ChurnKind(k)]
		tags := map[string]string{"kind": k}
		add(summary.NewCounter(MetricSimEvents, summary.Default, float64(ks.Events), dur, tags),
			summary.NewCounter(MetricSimLate, summary.Default, float64(ks.Late), dur, tags))
		if ks.Failed > 0 {
			add(summary.NewCounter(MetricSimFailed, summary.Default, float64(ks.Failed), dur, tags))
		}
	}

	// Events missed: an event that some client in its reach never observed (nor superseded).
	res := r.fleet.Matcher().Results()
	missed := map[string]int{}
	total := 0
	for _, e := range res.Events {
		if !e.Complete() {
			missed[e.Kind]++
			total++
		}
	}
	// Observations whose response arrived before t0 (a client applying a backlog: the matcher
	// counts them at latency 0); a loaded harness shows here, and the low percentiles lie.
	early := 0
	for _, e := range res.Events {
		early += e.EarlyReceives
	}
	add(summary.NewCounter(MetricEarlyReceives, summary.Default, float64(early), dur, nil))
	if early > 0 {
		r.notes["early"] = fmt.Sprintf("%d observations were of responses received before their event's t0 and count as latency 0 (clients behind on their backlog: the harness is overloaded)", early)
	}
	unmeasured := 0
	for _, e := range r.events {
		if e.expectErr != nil {
			unmeasured++
		}
	}
	// Convergence (overall and per kind) comes with the fleet's metrics: the matcher is its
	// only definition.
	add(summary.NewCounter(MetricEventsMissed, summary.Default, float64(total), dur, nil),
		summary.NewCounter(MetricEventsUnmeasured, summary.Default, float64(unmeasured), dur, nil))
	for _, k := range kinds {
		add(summary.NewCounter(MetricEventsMissed, summary.Default, float64(missed[k]), dur, map[string]string{"kind": k}))
	}

	// The control plane's own figures.
	r.collectCP(add, dur, st.Events)

	// CPU and memory.
	u := r.usage
	if u.processCPU > 0 {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.processCPU.Seconds(), 0, u.processCPU.Seconds(), map[string]string{"side": "process"}))
		add(summary.NewGauge(MetricPeakRSS, summary.Data, float64(u.peakRSS), 0, float64(u.peakRSS), map[string]string{"side": "process"}))
	}
	if u.bySide != nil {
		// Both sides are always reported: a side the 100 Hz profile caught no sample of (in a
		// short run on a loaded machine) is reported as 0, a figure, not a missing metric.
		for _, side := range []string{sideControlPlane, sideHarness} {
			if _, ok := u.bySide[side]; !ok {
				u.bySide[side] = 0
			}
		}
	}
	for side, d := range u.bySide {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, d.Seconds(), 0, d.Seconds(), map[string]string{"side": side}))
	}
	if r.tgt.kind != "in-process" && u.processCPU > 0 {
		// Against an external target this whole process is the harness.
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.processCPU.Seconds(), 0, u.processCPU.Seconds(), map[string]string{"side": sideHarness}))
		add(summary.NewGauge(MetricPeakRSS, summary.Data, float64(u.peakRSS), 0, float64(u.peakRSS), map[string]string{"side": sideHarness}))
	}
	if u.hasTargetCPU {
		add(summary.NewGauge(MetricCPUSeconds, summary.Time, u.targetCPU, 0, u.targetCPU, map[string]string{"side": sideControlPlane}))
	}
	if u.hasTargetRSS {
		add(summary.NewGauge(MetricPeakRSS, summary.Data, u.targetRSS, 0, u.targetRSS, map[string]string{"side": sideControlPlane}))
	}
	r.notes["cpu"] = u.note

	// The harness: its CPU beside the control plane's, its lateness and backlog, and whether
	// it was the bottleneck.
	hv := assessHarness(metrics, r.runHarnessCPU(), r.opts.Harness)
	add(hv.metrics...)
	r.notes["harness"] = hv.note
	if hv.saturated != "" {
		r.notes["saturated"] = hv.saturated
	}

	// Phases.
	for _, p := range r.phases {
		d := p.End.Sub(p.Start).Seconds()
		add(summary.NewGauge(MetricPhaseDuration, summary.Time, d, 0, d, map[string]string{"phase": p.Name}))
	}

	cfg, err := scenarioJSON(r.sc)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"scenario": r.sc.Name, "target": r.tgt.kind, "ads": r.tgt.addr}
	if r.index > 0 {
		labels["repeat"] = strconv.Itoa(r.index)
	}
	if r.tgt.metricsSource != "" {
		labels["controlPlaneMetrics"] = r.tgt.metricsSource
	}
	for k, v := range r.notes {
		labels["note."+k] = v
	}
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", ToolVersion: r.opts.ToolVersion, Command: "run",
			Started: r.began.UTC(), Ended: ended.UTC(), DurationSeconds: dur.Seconds(), Labels: labels},
		Config: cfg,
		// The per-event records (t0, the clients in reach by class, convergence), as a fleet
		// shard writes them: what compare and merge need beyond the histograms.
		Results: summary.Results{Metrics: metrics, Events: SummaryEvents(res)},
	}
	s.Results.Thresholds, s.Results.Passed = EvaluateThresholds(r.sc, s.Results)
	s.Results.Sort()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("run summary: %w", err)
	}
	return s, nil
}

// collectCP adds debounce effectiveness, push cycles and cache hit rates from the control
// plane's metrics, over the measure and drain phases (cache reads: over the whole run). Without
// them it notes "not available".
func (r *run) collectCP(add func(...summary.Metric), dur time.Duration, events int) {
	a, b := r.cpStart, r.cpEnd
	if !a.ok || !b.ok || b.cyclesFrom == "" {
		r.notes["debounce"] = notAvailable + ": the target exports neither xdslab_cp_push_cycles_total nor pilot_debounce_time" + r.metricsHint()
	} else {
		cycles := b.pushCycles - a.pushCycles
		add(summary.NewCounter(MetricPushCycles, summary.Default, cycles, dur, nil),
			summary.NewCounter(MetricCPInbound, summary.Default, b.inbound-a.inbound, dur, nil))
		perPush := 0.0
		if cycles > 0 {
			perPush = float64(events) / cycles
		}
		add(summary.NewGauge(MetricEventsPerPush, summary.Default, perPush, 0, perPush, nil))
		note := "push cycles from " + b.cyclesFrom + "; events per push = simulator events ÷ push cycles in the measure and drain phases"
		addBuckets := func(name string, contains summary.ValueType, source string, h histSnap) {
			m, err := bucketTrend(name, contains, source, h)
			if err != nil {
				note += "; " + name + " left out: " + err.Error()
				return
			}
			add(m)
		}
		if b.hasDebounce {
			addBuckets(MetricDebounceDelay, summary.Time, cpDebounceTime, b.debounce.sub(a.debounce))
		}
		if b.hasPerPush {
			// The control plane's own view: change events (inbound updates) merged per cycle.
			addBuckets(cpEventsPerPush, summary.Default, cpEventsPerPush, b.perPush.sub(a.perPush))
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
		r.notes["debounce"] = note
	}
	first := r.cpFirst
	if !b.ok || len(b.cacheReads) == 0 {
		r.notes["cache"] = notAvailable + ": the target exports no xds_cache_reads" + r.metricsHint()
	} else {
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
			add(summary.NewRate(MetricCacheHitRatio, h, o, map[string]string{"type": t}))
		}
		add(summary.NewRate(MetricCacheHitRatio, hits, others, nil))
		r.notes["cache"] = "cache hit ratio = hits ÷ (hits + misses + bypassed reads) over connect, measure and drain"
	}
	if b.ok {
		var resp, rej float64
		for t, n := range b.pushes {
			resp += n
			add(summary.NewCounter(MetricCPResponses, summary.Default, n, dur, map[string]string{"type": t}))
		}
		for t, n := range b.rejects {
			rej += n
			add(summary.NewCounter(MetricCPRejects, summary.Default, n, dur, map[string]string{"type": t}))
		}
		if len(b.pushes) > 0 {
			add(summary.NewCounter(MetricCPResponses, summary.Default, resp, dur, nil))
		}
		if len(b.rejects) > 0 {
			add(summary.NewCounter(MetricCPRejects, summary.Default, rej, dur, nil))
		}
	}
}

func (r *run) metricsHint() string {
	if r.tgt.kind != "in-process" && r.opts.TargetMetrics == "" {
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

// ConnectIncomplete returns xdslab_connect_incomplete_clients, in total and per client group of
// the scenario (every group, so that shards merge): the clients of sizes (this fleet's, by
// group) without their first full config when the connect phase ended (full, by group). Its
// max is the group's size here.
func ConnectIncomplete(sc *scenarios.Scenario, sizes map[string]int, full map[string]uint64) []summary.Metric {
	groups := make([]string, len(sc.Clients))
	for i, c := range sc.Clients {
		groups[i] = c.Name
	}
	return connectIncomplete(groups, sizes, full)
}

func connectIncomplete(groups []string, sizes map[string]int, full map[string]uint64) []summary.Metric {
	var out []summary.Metric
	total, clients := 0, 0
	for _, g := range groups {
		n := sizes[g]
		missing := n - int(min(full[g], uint64(n)))
		total, clients = total+missing, clients+n
		out = append(out, summary.NewGauge(MetricConnectIncomplete, summary.Default, float64(missing), 0, float64(n), map[string]string{"group": g}))
	}
	return append(out, summary.NewGauge(MetricConnectIncomplete, summary.Default, float64(total), 0, float64(clients), nil))
}

// FullConfigCheck is the full-config check of a fleet run without a scenario or connect phase
// ('xdslab fleet'): xdslab_connect_incomplete_clients of the groups as the run ends (sizes and
// full by group, as ConnectIncomplete takes them), one verdict per group (value==0), and
// whether all passed.
func FullConfigCheck(groups []string, sizes map[string]int, full map[string]uint64) ([]summary.Metric, []summary.Threshold, bool) {
	ms := connectIncomplete(groups, sizes, full)
	res := summary.Results{Metrics: ms}
	th := scenarios.Threshold{Source: "value==0", Agg: "value", Op: "==", Value: 0}
	var out []summary.Threshold
	passed := true
	for _, g := range groups {
		t := evalThreshold(res, MetricConnectIncomplete+"{group:"+g+"}", th)
		t.Description = "implicit: every client of group " + g + " holds its first full config by the end of the run"
		passed = passed && t.Passed
		out = append(out, t)
	}
	return ms, out, passed
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

// EvaluateThresholds evaluates the scenario's thresholds against the metrics: one verdict per
// expression, then one per implicit threshold (Scenario.ImplicitThresholds: every client group
// reaches its full config within the connect timeout unless it says requireFullConfig: false).
// A threshold naming a metric (or tags) the run did not produce fails, with no value: a gate
// must not pass on a figure nobody measured. A value known only as a bucket bound (a trend read
// from a control plane's Prometheus histogram) passes only when the bound proves the
// expression, fails when it proves the opposite, and is otherwise inconclusive, which fails
// too; Reason says which.
func EvaluateThresholds(sc *scenarios.Scenario, res summary.Results) ([]summary.Threshold, bool) {
	keys := make([]string, 0, len(sc.Thresholds))
	for k := range sc.Thresholds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	passed := true
	var out []summary.Threshold
	for _, key := range keys {
		for _, th := range sc.Thresholds[key] {
			t := evalThreshold(res, key, th)
			passed = passed && t.Passed
			out = append(out, t)
		}
	}
	for _, it := range sc.ImplicitThresholds() {
		t := evalThreshold(res, it.Key, it.Threshold)
		t.Description = it.Description
		passed = passed && t.Passed
		out = append(out, t)
	}
	return out, passed
}

// evalThreshold evaluates th on the metric key selects (failed, with no value, when the run did
// not produce it).
func evalThreshold(res summary.Results, key string, th scenarios.Threshold) summary.Threshold {
	name, tags := scenarios.MetricName(key), scenarios.MetricTags(key)
	m, found := res.Find(name, tags)
	return evaluateThreshold(th, name, tags, m, found)
}

// evaluateThreshold is one expression's verdict on metric m (found: the run produced it).
func evaluateThreshold(th scenarios.Threshold, name string, tags map[string]string, m summary.Metric, found bool) summary.Threshold {
	t := summary.Threshold{Metric: name, Tags: tags, Expression: th.Source}
	key := th.Key()
	if !found {
		t.Reason = "the run did not produce " + name + summary.TagString(tags)
		return t
	}
	if m.NoData() && m.Buckets == nil {
		t.Reason = "no data: " + name + summary.TagString(tags) + " observed nothing in the run (nothing measured is not 0)"
		return t
	}
	if b, ok := m.Bounded(key); ok {
		bd := b
		t.Bound = &bd
		v, err := th.EvalBound(b.Lower(), b.Upper())
		where := key + " " + summary.FormatBound(m.Contains, b)
		switch {
		case err != nil:
			t.Reason = err.Error()
		case v == scenarios.Pass:
			t.Passed = true
			t.Reason = where + ": the bucket bound proves it"
		case v == scenarios.Fail:
			t.Reason = where + ": the bucket bound disproves it"
		default:
			t.Inconclusive = true
			t.Reason = "inconclusive: " + where + " is a bucket bound that neither proves nor disproves it"
		}
		return t
	}
	if v, ok := m.Values[key]; ok {
		t.Value = &v
	}
	ok, err := th.Eval(m.Values)
	t.Passed = ok && err == nil
	switch {
	case err == nil:
	case m.Buckets != nil && m.Buckets.Count == 0:
		t.Reason = "no data: the histogram observed nothing in the run"
		if src := m.Buckets.Source; src != "" {
			t.Reason = "no data: " + src + " observed nothing in the run"
		}
	default:
		t.Reason = err.Error()
	}
	return t
}

// countServices counts the hosts of the ServiceEntries in objs (the services the control plane
// will know once it has loaded them).
func countServices(objs []model.Config) int {
	n := 0
	for _, c := range objs {
		if c.Kind != model.KindServiceEntry {
			continue
		}
		if se, ok := c.Spec.(*networking.ServiceEntry); ok {
			n += len(se.GetHosts())
		}
	}
	return n
}

// AdmissionNote explains connection refusals with ResourceExhausted — what they are, why they
// happened and how to avoid them — or returns "" when there were none. admit is the in-process
// control plane's admission rate (0: an external target, whose limit is not known here).
func AdmissionNote(refused uint64, admit float64, sc *scenarios.Scenario) string {
	if refused == 0 {
		return ""
	}
	ramp := 0.0
	for _, c := range sc.Clients {
		if c.Ramp.PerSecond() == 0 {
			ramp += float64(c.Count)
		} else {
			ramp += c.Ramp.PerSecond()
		}
	}
	what := fmt.Sprintf("%d new ADS streams were refused with ResourceExhausted and retried with Envoy's backoff", refused)
	if admit > 0 {
		return fmt.Sprintf("%s: the control plane admits %g new streams/s (controlPlane.admissionRate; 0 means the push throttle per second, as Istio) "+
			"and the clients ramp at %g/s in all; set controlPlane.admissionRate to at least %g/s in the scenario, or lower the groups' ramp, to connect without refusals",
			what, admit, ramp, ramp)
	}
	return fmt.Sprintf("%s: the control plane at the target limits how fast it admits new streams (istiod: PILOT_MAX_REQUESTS_PER_SECOND; 'xdslab controlplane --admission-rate'), "+
		"and the clients ramp at %g/s in all; raise that limit or lower the groups' ramp", what, ramp)
}
