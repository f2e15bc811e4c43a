// Package bench runs scenarios and turns what they measured into reports, comparisons and
// tuning advice.
//
// The runner (Run, run*.go) executes one resolved scenario in phases against a target — the
// in-process control plane configured from the scenario's controlPlane section, or an external
// ADS server fed through a directory of Istio YAML it watches:
//
//	setup    the simulator's initial topology is loaded into the control plane (in-process: its
//	         config store, then wait for a snapshot holding every service)
//	connect  the fake Envoy fleet ramps up; the phase ends when every client holds its first full
//	         config, or at phases.connect.timeout (the clients still without one are counted)
//	measure  the simulator applies churn for the scenario's duration on the wall clock; every
//	         event's expectation is registered with the fleet BEFORE the sink applies it, and t0
//	         is taken right after the sink's Apply returns
//	drain    wait until every registered expectation is resolved (observed, already held or
//	         superseded) at every client in its reach, or phases.drain.timeout; what is left is
//	         counted as missed, and the event's convergence as at least t0 to then
//
// The collector (collect*.go) merges the fleet's observations (push latency and convergence per
// event kind as HDR histograms, computed by the fleet's matcher, their only definition; time to first config, NACKs, no-op responses, bytes) with the
// simulator's event counts, the control plane's own metrics (push cycles, debounce delay and
// events per push, cache hit ratio per type; read in-process, or scraped from the target's
// /metrics when it exports Istio's pilot_* names), and the CPU and memory of both sides (an
// in-process run splits CPU with pprof labels). The control plane's histograms (pilot_debounce_time,
// xdslab_cp_debounce_events_per_push) become bucket trends (summary.NewBucketTrend): exact
// count and mean, every quantile as the bucket that holds it, never interpolated. Thresholds in
// k6 syntax are evaluated on the result; one on a bucket-bounded quantile passes only when the
// bucket proves it and is otherwise failed or inconclusive (which fails too); a failed one
// makes Results.Passed false, which the CLI turns into exit code 99.
//
// The reports (report*.go) are summary.json (internal/summary's k6-like shape, with encoded HDR
// histograms, the resolved scenario as config and one record per event in results.events: its
// t0, the clients in its reach by class and its convergence, whatever the target), report.html (self-contained, plots as inline
// SVG), junit.xml (one test case per threshold) and, for in-process runs, cpu.pprof (the run's
// CPU profile; go tool pprof -tagfocus xdslab_side=harness shows where the harness spent its
// share). Notes that qualify a figure ("not available", how CPU was attributed, clients that
// missed the connect timeout, responses counted at latency 0) are in metadata.labels as
// note.KEY and in the HTML report.
//
// The harness (harness.go) is stated beside the control plane in every run and merge: both
// sides' CPU (with their ratio when they share cores), the fleet's start lateness and its
// receive backlog, in note.harness; when HarnessLimits says the harness was saturated (more
// than half the control plane's CPU on the same cores, or a start lateness p99 above 50 ms)
// the run is marked: note.saturated, xdslab_harness_saturated{reason}, a banner atop
// report.html and a line on the console (docs/observability.md).
//
// compare*.go and tune*.go read these summaries to gate releases and tune the debouncer. Neither
// treats a bucket bound as a point: compare's "bounds" rows claim a change only when the
// sides' buckets (of their confidence intervals) do not overlap, and tune ranks on the lab's
// own HDR latencies and exact counts, evaluating thresholds on bucket-bounded figures by
// their bounds.
//
// Distributed runs (docs/distributed.md; distributed.go, merge.go): RunShard runs one segment
// of a scenario's fleet as a shard that takes the simulator's probe events from its stream
// (probe/stream) on its own clock, RunPublished runs the simulator that publishes them with an
// ack barrier, and Merge combines the shards' and the simulator's summaries into one
// (histograms added, counters summed, per-event records combined, phases aligned on the
// simulator's clock) on which the scenario's thresholds are evaluated once.
package bench
