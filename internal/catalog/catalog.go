package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/xdslab/xdslab/internal/summary"
)

// Domain names the set of values a tag takes. Fixed domains list their values here; the others
// depend on the scenario (its churn kinds, its client groups) or on the gRPC status codes.
type Domain string

// The tag domains.
const (
	// FleetType: xDS types as the fake Envoy fleet names them, upper case (CDS, EDS, …).
	FleetType Domain = "fleet-type"
	// CPType: xDS types as the control plane's cache and response counters name them, lower
	// case (cds, eds, …), Istio's convention for xds_cache_reads{type}.
	CPType Domain = "cp-type"
	// Kind: a simulator churn kind (scenarios.ChurnKinds): endpoint-flap, scale, ….
	Kind Domain = "kind"
	// Group: a client group of the scenario (clients[].name).
	Group Domain = "group"
	// Side: whose CPU or memory (controlplane, harness, process, runtime).
	Side Domain = "side"
	// Phase: a run phase (setup, connect, measure, drain).
	Phase Domain = "phase"
	// Reason: why the harness is marked saturated (cpu, start_lateness).
	Reason Domain = "reason"
	// Code: a gRPC status code name (Unavailable, ResourceExhausted, …).
	Code Domain = "code"
)

// FleetTypes are the fleet's type tag values (measure.TypeName).
var FleetTypes = []string{"CDS", "EDS", "LDS", "RDS", "SDS", "ECDS", "RTDS", "SRDS", "VHDS"}

// CPTypes are the control plane's type tag values.
var CPTypes = []string{"cds", "eds", "lds", "rds", "sds"}

// fixed holds the values of the domains that do not depend on the scenario.
var fixed = map[Domain][]string{
	FleetType: FleetTypes,
	CPType:    CPTypes,
	Side:      {"controlplane", "harness", "process", "runtime"},
	Phase:     {"setup", "connect", "measure", "drain"},
	Reason:    {"cpu", "start_lateness"},
	Code: {"Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
		"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
		"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"},
}

// Values returns the values of a fixed domain, nil for one that depends on the scenario.
func Values(d Domain) []string { return slices.Clone(fixed[d]) }

// Metric is one catalogued summary.json metric.
type Metric struct {
	Name     string
	Type     summary.MetricType
	Contains summary.ValueType
	// Tags maps each tag the metric may carry to its domain. Every metric also has an untagged
	// entry: the total over the tag's values (or the metric itself when it has no tags).
	Tags map[string]Domain
	// Bounded: a trend read from a control plane's Prometheus buckets: its quantiles are known
	// only as bucket bounds (a threshold on one passes only when the bound proves it).
	Bounded bool
	Help    string
}

const (
	trend   = summary.Trend
	counter = summary.Counter
	gauge   = summary.Gauge
	rate    = summary.Rate
	tm      = summary.Time
	data    = summary.Data
	plain   = summary.Default
)

var (
	// Fleet and probe figures are split by event kind or xDS type, and by client group (each
	// group's total: the tags are not combined).
	byKind      = map[string]Domain{"kind": Kind, "group": Group}
	byFleetType = map[string]Domain{"type": FleetType, "group": Group}
	byCPType    = map[string]Domain{"type": CPType}
	byGroup     = map[string]Domain{"group": Group}
	bySide      = map[string]Domain{"side": Side}
)

// metrics is the catalogue, by name.
var metrics = []Metric{
	// What a run is judged by (DESIGN.md's measurements).
	{Name: "xdslab_push_latency_seconds", Type: trend, Contains: tm, Tags: byKind, Help: "simulator applied a change (t0) → the change is in effect at a client (received and, for a cluster or listener, warmed), per client and event"},
	{Name: "xdslab_push_received_latency_seconds", Type: trend, Contains: tm, Tags: byKind, Help: "t0 → the client received the response holding the change (before warming); equal to push latency when nothing warms"},
	{Name: "xdslab_push_ack_latency_seconds", Type: trend, Contains: tm, Tags: byKind, Help: "t0 → the client sent its ACK of the response holding the change"},
	{Name: "xdslab_convergence_seconds", Type: trend, Contains: tm, Tags: byKind, Help: "per event: the largest push latency over the clients the event should reach"},
	{Name: "xdslab_time_to_first_config_seconds", Type: trend, Contains: tm, Tags: byGroup, Help: "a client's scheduled start → its first full config"},
	{Name: "xdslab_events_missed_total", Type: counter, Contains: plain, Tags: byKind, Help: "events some client in their reach never observed (a lost push)"},
	{Name: "xdslab_events_unmeasured_total", Type: counter, Contains: plain, Help: "events the probe could not register"},
	{Name: "xdslab_events_shard_missing_total", Type: counter, Contains: plain, Help: "events a shard of a distributed run never reported"},
	{Name: "xdslab_connect_incomplete_clients", Type: gauge, Contains: plain, Tags: byGroup, Help: "clients without a full config at the end of the connect phase"},

	// The control plane's figures.
	{Name: "xdslab_cp_push_cycles_total", Type: counter, Contains: plain, Help: "push cycles the control plane started"},
	{Name: "xdslab_cp_inbound_updates_total", Type: counter, Contains: plain, Help: "change events the control plane received"},
	{Name: "xdslab_cp_responses_total", Type: counter, Contains: plain, Tags: byCPType, Help: "xDS responses the control plane sent"},
	{Name: "xdslab_cp_rejects_total", Type: counter, Contains: plain, Tags: byCPType, Help: "NACKs the control plane received"},
	{Name: "xdslab_debounce_events_per_push", Type: gauge, Contains: plain, Help: "events merged per push cycle: inbound events ÷ push cycles (the headline figure)"},
	{Name: "xdslab_cp_debounce_events_per_push", Type: trend, Contains: plain, Bounded: true, Help: "distribution of events merged into one push cycle, from the control plane's histogram (bucket bounds)"},
	{Name: "xdslab_debounce_delay_seconds", Type: trend, Contains: tm, Bounded: true, Help: "first event of a batch → push start (pilot_debounce_time; bucket bounds)"},
	{Name: "xdslab_debounce_quiet_seconds", Type: gauge, Contains: tm, Help: "the debounce policy's quiet window at the run's last push (min, max: at the start of the measure phase and the end; moves only under the adaptive policy)"},
	{Name: "xdslab_cache_hit_ratio", Type: rate, Contains: plain, Tags: byCPType, Help: "cache hits ÷ reads"},

	// The fleet.
	{Name: "xdslab_fleet_connected", Type: gauge, Contains: plain, Help: "connected clients"},
	{Name: "xdslab_fleet_clients", Type: gauge, Contains: plain, Tags: byGroup, Help: "clients the fleet runs"},
	{Name: "xdslab_fleet_full_config_clients", Type: gauge, Contains: plain, Tags: byGroup, Help: "clients holding a full config"},
	{Name: "xdslab_fleet_responses_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "xDS responses received"},
	{Name: "xdslab_fleet_resources_received_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "resources received"},
	{Name: "xdslab_fleet_bytes_received_total", Type: counter, Contains: data, Tags: byFleetType, Help: "encoded resource bytes received"},
	{Name: "xdslab_fleet_noop_responses_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "responses in which nothing changed for the client"},
	{Name: "xdslab_fleet_nacks_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "NACKs the fleet sent"},
	{Name: "xdslab_fleet_resends_after_nack_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "responses identical to one just NACKed"},
	{Name: "xdslab_fleet_resend_loops_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "server resend loops after a NACK"},
	{Name: "xdslab_fleet_warming_timeouts_total", Type: counter, Contains: plain, Tags: byFleetType, Help: "initial_fetch_timeout expiries"},
	{Name: "xdslab_fleet_connects_total", Type: counter, Contains: plain, Tags: byGroup, Help: "stream connects"},
	{Name: "xdslab_fleet_reconnects_total", Type: counter, Contains: plain, Tags: byGroup, Help: "streams established by clients that had held one before"},
	{Name: "xdslab_fleet_resync_seconds", Type: trend, Contains: tm, Help: "per reconnect: the new stream's start → the client holds a full config again"},
	{Name: "xdslab_fleet_connect_failures_total", Type: counter, Contains: plain, Tags: map[string]Domain{"code": Code, "group": Group}, Help: "failed connects, by gRPC code"},
	{Name: "xdslab_fleet_ack_delay_seconds", Type: trend, Contains: tm, Tags: byGroup, Help: "response received → ACK sent (includes the scripted ACK delay)"},
	{Name: "xdslab_fleet_start_lateness_seconds", Type: trend, Contains: tm, Tags: byGroup, Help: "how late the fleet started each client after its slot in the ramp (the harness's share)"},
	{Name: "xdslab_fleet_receive_backlog_seconds", Type: trend, Contains: tm, Tags: byGroup, Help: "how long responses waited in the client before being read"},

	// The probe.
	{Name: "xdslab_probe_events_total", Type: counter, Contains: plain, Help: "events the probe registered"},
	{Name: "xdslab_probe_observed_total", Type: counter, Contains: plain, Tags: byGroup, Help: "client × event observations made"},
	{Name: "xdslab_probe_superseded_total", Type: counter, Contains: plain, Tags: byGroup, Help: "observations superseded by a later conflicting change"},
	{Name: "xdslab_probe_already_held_total", Type: counter, Contains: plain, Tags: byGroup, Help: "changes a client already held when registered (no latency)"},
	{Name: "xdslab_probe_missed_total", Type: counter, Contains: plain, Tags: byGroup, Help: "observations never made"},
	{Name: "xdslab_probe_unresolved_total", Type: counter, Contains: plain, Tags: byGroup, Help: "observations still awaited at the end"},
	{Name: "xdslab_probe_outstanding", Type: gauge, Contains: plain, Tags: byGroup, Help: "observations awaited"},
	{Name: "xdslab_probe_early_receives_total", Type: counter, Contains: plain, Help: "changes received before the probe registered them"},
	{Name: "xdslab_probe_barrier_timeouts_total", Type: counter, Contains: plain, Help: "distributed runs: event barriers that timed out"},

	// The simulator.
	{Name: "xdslab_sim_events_total", Type: counter, Contains: plain, Tags: map[string]Domain{"kind": Kind}, Help: "events the simulator applied"},
	{Name: "xdslab_sim_events_late_total", Type: counter, Contains: plain, Tags: map[string]Domain{"kind": Kind}, Help: "events applied late"},
	{Name: "xdslab_sim_events_skipped_total", Type: counter, Contains: plain, Help: "events skipped"},
	{Name: "xdslab_sim_events_failed_total", Type: counter, Contains: plain, Tags: map[string]Domain{"kind": Kind}, Help: "events the sink failed to apply (a write error; the run goes on)"},
	{Name: "xdslab_sim_event_lateness_seconds", Type: gauge, Contains: tm, Help: "how late the simulator applied events"},

	// The harness and the run.
	{Name: "xdslab_cpu_seconds", Type: gauge, Contains: tm, Tags: bySide, Help: "CPU seconds by side"},
	{Name: "xdslab_peak_rss_bytes", Type: gauge, Contains: data, Tags: bySide, Help: "peak resident memory by side"},
	{Name: "xdslab_harness_cpu_ratio", Type: gauge, Contains: plain, Help: "harness CPU ÷ control-plane CPU"},
	{Name: "xdslab_harness_saturated", Type: gauge, Contains: plain, Tags: map[string]Domain{"reason": Reason}, Help: "1 when the harness was saturated"},
	{Name: "xdslab_phase_duration_seconds", Type: gauge, Contains: tm, Tags: map[string]Domain{"phase": Phase}, Help: "how long each phase took"},
	{Name: "xdslab_shards", Type: gauge, Contains: plain, Help: "shards merged into a distributed run's summary"},
	{Name: "xdslab_shard_clock_offset_seconds", Type: gauge, Contains: tm, Help: "largest clock offset between shards"},
}

var index = func() map[string]*Metric {
	m := make(map[string]*Metric, len(metrics))
	for i := range metrics {
		m[metrics[i].Name] = &metrics[i]
	}
	return m
}()

// Lookup returns the catalogued metric name.
func Lookup(name string) (Metric, bool) {
	m, ok := index[name]
	if !ok {
		return Metric{}, false
	}
	return *m, true
}

// Names returns every catalogued name, sorted.
func Names() []string {
	out := make([]string, 0, len(metrics))
	for _, m := range metrics {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// Aggregations returns the threshold aggregations a metric of type t has (k6's: counters
// count and rate, gauges value, min and max, rates rate, trends avg, min, max, med and p(N));
// a bucket-bounded trend has the same (its quantiles as bucket bounds).
func Aggregations(t summary.MetricType, bounded bool) []string {
	switch t {
	case counter:
		return []string{"count", "rate"}
	case gauge:
		return []string{"value", "min", "max"}
	case rate:
		return []string{"rate"}
	case trend:
		return []string{"avg", "min", "max", "med", "p(N)"}
	}
	return nil
}

// HasAggregation reports whether the metric has aggregation agg ("p" stands for any p(N)).
func (m Metric) HasAggregation(agg string) bool {
	if agg == "p" {
		agg = "p(N)"
	}
	return slices.Contains(Aggregations(m.Type, m.Bounded), agg)
}

// TagKeys returns the metric's tag names, sorted.
func (m Metric) TagKeys() []string {
	out := make([]string, 0, len(m.Tags))
	for k := range m.Tags {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Check returns a problem for every metric entry that disagrees with the catalogue: a name it
// does not list, another type or unit, a tag the metric does not carry, a value outside a
// fixed domain. groups and kinds are the values of the scenario-dependent domains (nil: any).
func Check(ms []summary.Metric, groups, kinds []string) []error {
	var errs []error
	for _, e := range ms {
		m, ok := Lookup(e.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: not in the metric catalogue (internal/catalog)", e.Key()))
			continue
		}
		if e.Type != m.Type || e.Contains != m.Contains {
			errs = append(errs, fmt.Errorf("%s: a %s of %s, the catalogue says a %s of %s", e.Key(), e.Type, e.Contains, m.Type, m.Contains))
		}
		for k, v := range e.Tags {
			d, ok := m.Tags[k]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: tag %q is not catalogued (tags: %s)", e.Key(), k, strings.Join(m.TagKeys(), ", ")))
				continue
			}
			if vals := DomainValues(d, groups, kinds); vals != nil && !slices.Contains(vals, v) {
				errs = append(errs, fmt.Errorf("%s: %s=%q is not one of %s", e.Key(), k, v, strings.Join(vals, ", ")))
			}
		}
	}
	return errs
}

// DomainValues returns the values of d: a fixed domain's, or groups or kinds (nil: unknown).
func DomainValues(d Domain, groups, kinds []string) []string {
	switch d {
	case Group:
		return groups
	case Kind:
		return kinds
	}
	return fixed[d]
}
