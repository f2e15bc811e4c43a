package collect

import "github.com/xdslab/xdslab/scenarios"

// The names of the lab's measurements in a summary: the run's own here (the harness verdict's
// in harness.go). The fleet's names are fakeenvoy's, which serves them live on /metrics
// (xdslab_fleet_*, xdslab_push_*, xdslab_convergence_seconds, xdslab_probe_*); fleet.go builds
// their summary rows.
const (
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

// NotAvailable marks a figure the target does not expose.
const NotAvailable = "not available"

// The pprof label that tells the two sides of an in-process run apart in the CPU profile; its
// values are also the tag side of MetricCPUSeconds and MetricPeakRSS.
const (
	SideLabel        = "xdslab_side"
	SideControlPlane = "controlplane"
	SideHarness      = "harness"
)

// MetricBarrierTimeouts counts events some shard did not acknowledge before the change was
// written (the simulator's summary of a distributed run).
const MetricBarrierTimeouts = "xdslab_probe_barrier_timeouts_total"

// Metrics a merge adds.
const (
	// MetricShardsMissingEvents counts events some probe-subscribed shard holds no record of.
	MetricShardsMissingEvents = "xdslab_events_shard_missing_total"
	// MetricClockOffset is the shards' clock offsets from the simulator's clock (value: the
	// largest magnitude; min and max: the signed extremes).
	MetricClockOffset = "xdslab_shard_clock_offset_seconds"
	// MetricShards is the number of fleet shards merged.
	MetricShards = "xdslab_shards"
)
