package collect

import (
	"fmt"
	"sort"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// ShardInput is what one fleet shard of a distributed run measured.
type ShardInput struct {
	Scenario    *scenarios.Scenario
	ToolVersion string
	// Target is the ADS server (host:port); Segment is this shard.
	Target  string
	Segment fleet.Segment
	// StartAt is the shared start (zero: none); Clock the shard's measured offset from the
	// simulator's clock and Probes the simulator's publisher (nil and empty without probes).
	StartAt time.Time
	Clock   *summary.Clock
	Probes  string
	// Began and Ended bound the shard's run.
	Began, Ended time.Time
	// Fleet is the shard's fleet, stopped.
	Fleet *fleet.Fleet
	// ConnectFull counts, by client group, the clients holding their first full config when
	// the connect phase ended.
	ConnectFull map[string]uint64
	// UsageStart and UsageEnd are this process's CPU and memory at the shard's bounds.
	UsageStart, UsageEnd ProcessUsage
	// CPStart and CPEnd are the control plane's metrics at the shard's bounds, when the shard
	// scrapes them (fleet --target-metrics; zero otherwise): its CPU over the shard's run.
	CPStart, CPEnd CPSample
	// TargetLocal says whether the target's ADS host is an address of the shard's machine, so
	// that the two share its cores (nil when that could not be told, TargetLocalErr saying why).
	TargetLocal    *bool
	TargetLocalErr error
	Phases         []summary.Phase
	Notes          map[string]string
}

// LabelTargetLocal is the shard summary's label saying whether the target's ADS host is an
// address of the shard's machine: "yes", "no", or "unknown: " and why. A merge compares the
// control plane's CPU with the harness CPU of the shards that say yes.
const LabelTargetLocal = "targetLocal"

// TargetLocalLabel is the LabelTargetLocal value of local (nil: unknown, err saying why).
func TargetLocalLabel(local *bool, err error) string {
	switch {
	case local == nil && err != nil:
		return "unknown: " + err.Error()
	case local == nil:
		return "unknown"
	case *local:
		return "yes"
	default:
		return "no"
	}
}

// Shard builds the summary of one fleet shard for a merge: the fleet's metrics, the per-event
// records, its phases, segment, start time and clock offset. It evaluates no threshold: a shard
// sees part of the fleet, so the scenario is gated once, on the merged summary.
func Shard(in ShardInput) (*summary.Summary, error) {
	dur := in.Ended.Sub(in.Began)
	metrics, err := FleetMetrics(in.Fleet.Figures(), dur)
	if err != nil {
		return nil, err
	}
	res := in.Fleet.Matcher().Results()
	early, missed := 0, 0
	for _, e := range res.Events {
		early += e.EarlyReceives
		if !e.Complete() {
			missed++
		}
	}
	metrics = append(metrics, summary.NewCounter(MetricEarlyReceives, summary.Default, float64(early), dur, nil),
		summary.NewCounter(MetricEventsMissed, summary.Default, float64(missed), dur, nil))
	// This shard is harness only: its CPU and peak RSS, summed over the shards by a merge.
	if u0, u1 := in.UsageStart, in.UsageEnd; u0.ok && u1.ok {
		cpu := (u1.cpu - u0.cpu).Seconds()
		metrics = append(metrics,
			summary.NewGauge(MetricCPUSeconds, summary.Time, cpu, 0, cpu, map[string]string{"side": SideHarness}),
			summary.NewGauge(MetricPeakRSS, summary.Data, float64(u1.maxRSS), 0, float64(u1.maxRSS), map[string]string{"side": SideHarness}))
	}
	// A target that restarted in between has no CPU figure of the shard's run (left out).
	cpuRestart := ""
	if a, b := in.CPStart, in.CPEnd; a.hasCPU && b.hasCPU {
		if cpuRestart = restartNote(a, b); cpuRestart == "" {
			cp := b.cpu - a.cpu
			metrics = append(metrics, summary.NewGauge(MetricCPUSeconds, summary.Time, cp, 0, cp, map[string]string{"side": SideControlPlane}))
		}
	}
	metrics = append(metrics, ConnectIncomplete(in.Scenario, in.Fleet.GroupSizes(), in.ConnectFull)...)
	metrics = append(metrics, phaseDurations(in.Phases)...)
	cfg, err := ScenarioJSON(in.Scenario)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"scenario": in.Scenario.Name, "ads": in.Target,
		LabelTargetLocal: TargetLocalLabel(in.TargetLocal, in.TargetLocalErr)}
	for k, v := range in.Notes {
		labels["note."+k] = v
	}
	if cpuRestart != "" {
		labels["note.cpu"] = "the control plane's CPU left out: " + cpuRestart
	}
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", ToolVersion: in.ToolVersion, Command: "fleet",
			Started: in.Began.UTC(), Ended: in.Ended.UTC(), DurationSeconds: dur.Seconds(), Labels: labels,
			Clock: in.Clock, Probes: in.Probes, Phases: utcPhases(in.Phases)},
		Config:  cfg,
		Results: summary.Results{Passed: true, Metrics: metrics, Events: SummaryEvents(res, in.Fleet.NodeID)},
	}
	if in.Segment.Count > 0 {
		s.Metadata.Segment = &summary.Segment{Index: in.Segment.Index, Count: in.Segment.Count}
	}
	if !in.StartAt.IsZero() {
		at := in.StartAt.UTC()
		s.Metadata.StartAt = &at
	}
	s.Results.Sort()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("shard summary: %w", err)
	}
	return s, nil
}

// SimInput is what the simulator of a distributed run did.
type SimInput struct {
	Scenario     *scenarios.Scenario
	ToolVersion  string
	Began, Ended time.Time
	// Stats is the simulator's count of what it applied; BarrierTimeouts the events some
	// shard did not acknowledge before the change was written.
	Stats           simulator.Stats
	BarrierTimeouts int
	// Events are the published events, with their t0 and ack counts.
	Events  []summary.Event
	StartAt time.Time
	Phases  []summary.Phase
	Notes   map[string]string
}

// Sim builds the simulator's summary of a distributed run: its events with t0 and ack counts,
// its stats and phases.
func Sim(in SimInput) (*summary.Summary, error) {
	dur := in.Ended.Sub(in.Began)
	metrics := append(simRows(in.Stats, dur, false),
		summary.NewCounter(MetricBarrierTimeouts, summary.Default, float64(in.BarrierTimeouts), dur, nil))
	cfg, err := ScenarioJSON(in.Scenario)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"scenario": in.Scenario.Name}
	for k, v := range in.Notes {
		labels["note."+k] = v
	}
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", ToolVersion: in.ToolVersion, Command: "sim",
			Started: in.Began.UTC(), Ended: in.Ended.UTC(), DurationSeconds: dur.Seconds(), Labels: labels, Phases: utcPhases(in.Phases)},
		Config:  cfg,
		Results: summary.Results{Passed: true, Metrics: metrics, Events: in.Events},
	}
	if !in.StartAt.IsZero() {
		at := in.StartAt.UTC()
		s.Metadata.StartAt = &at
	}
	s.Results.Sort()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("simulator summary: %w", err)
	}
	return s, nil
}

// simRows are the simulator's counts: events, late and skipped events (and failed ones, with
// failed) in total and per churn kind, and how late the late ones fired.
func simRows(st simulator.Stats, dur time.Duration, failed bool) []summary.Metric {
	out := []summary.Metric{
		summary.NewCounter(MetricSimEvents, summary.Default, float64(st.Events), dur, nil),
		summary.NewCounter(MetricSimLate, summary.Default, float64(st.Late), dur, nil),
		summary.NewCounter(MetricSimSkipped, summary.Default, float64(st.Skipped), dur, nil),
	}
	if failed {
		out = append(out, summary.NewCounter(MetricSimFailed, summary.Default, float64(st.Failed), dur, nil))
	}
	if st.Late > 0 {
		// How late late events fired (they fire at once, never shifted): a loaded harness shows here.
		mean := (st.TotalLateness / time.Duration(st.Late)).Seconds()
		out = append(out, summary.NewGauge(MetricSimLateness, summary.Time, mean, 0, st.MaxLateness.Seconds(), nil))
	}
	for _, k := range churnKinds(st) {
		ks := st.ByKind[simulator.ChurnKind(k)]
		tags := map[string]string{"kind": k}
		out = append(out, summary.NewCounter(MetricSimEvents, summary.Default, float64(ks.Events), dur, tags),
			summary.NewCounter(MetricSimLate, summary.Default, float64(ks.Late), dur, tags))
		if failed && ks.Failed > 0 {
			out = append(out, summary.NewCounter(MetricSimFailed, summary.Default, float64(ks.Failed), dur, tags))
		}
	}
	return out
}

// churnKinds lists the churn kinds the simulator applied, sorted.
func churnKinds(st simulator.Stats) []string {
	kinds := make([]string, 0, len(st.ByKind))
	for k := range st.ByKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	return kinds
}

// phaseDurations are the phases' durations, one gauge per phase.
func phaseDurations(phases []summary.Phase) []summary.Metric {
	out := make([]summary.Metric, 0, len(phases))
	for _, p := range phases {
		d := p.End.Sub(p.Start).Seconds()
		out = append(out, summary.NewGauge(MetricPhaseDuration, summary.Time, d, 0, d, map[string]string{"phase": p.Name}))
	}
	return out
}

func utcPhases(ps []summary.Phase) []summary.Phase {
	out := make([]summary.Phase, len(ps))
	for i, p := range ps {
		out[i] = summary.Phase{Name: p.Name, Start: p.Start.UTC(), End: p.End.UTC()}
	}
	return out
}
