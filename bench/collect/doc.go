// Package collect is the one place that names the lab's measurements and builds summary rows:
// it turns what a run measured into internal/summary's k6-like shape. It sits between run
// (which measures) and report (which writes); merge, compare and tune read its names.
//
// Run merges the fleet's observations (push latency and convergence per event kind as HDR
// histograms, computed by the fleet's matcher, their only definition; time to first config,
// NACKs, no-op responses, bytes) with the simulator's event counts, the control plane's own
// metrics (controlplane.go: push cycles, debounce delay and events per push, cache hit ratio
// per type; read in-process, or scraped from the target's /metrics when it exports Istio's
// pilot_* names), and the CPU and memory of both sides (usage.go). The control plane's
// histograms (pilot_debounce_time, xdslab_cp_debounce_events_per_push) become bucket trends
// (summary.NewBucketTrend): exact count and mean, every quantile as the bucket that holds it,
// never interpolated. Thresholds in k6 syntax are evaluated on the result (thresholds.go); one
// on a bucket-bounded quantile passes only when the bucket proves it and is otherwise failed or
// inconclusive (which fails too); a failed one makes Results.Passed false, which the CLI turns
// into exit code 99. Notes that qualify a figure ("not available", how CPU was attributed,
// clients that missed the connect timeout) go into metadata.labels as note.KEY.
//
// The harness (harness.go) is stated beside the control plane in every run and merge: both
// sides' CPU (with their ratio when they share cores), the fleet's start lateness and its
// receive backlog, in note.harness; when HarnessLimits says the harness was saturated (more
// than half the control plane's CPU on the same cores, or a start lateness p99 above 50 ms)
// the run is marked: note.saturated, xdslab_harness_saturated{reason}.
//
// Shard and Sim build the summaries of a distributed run's fleet shards and simulator
// (distributed.go), which merge combines.
package collect
