// Package run executes scenarios: the first stage of the lab's pipeline
// (run → collect → report; compare, tune and merge read the summaries it writes).
//
// Run executes one resolved scenario in phases against a target — the in-process control
// plane configured from the scenario's controlPlane section (config.go: ControlPlaneOptions,
// and SimConfig and FleetConfig for the simulator and the fleet), or an external ADS server fed
// through a directory of Istio YAML it watches, probed before anything is written (probe.go):
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
// What the run measured — the fleet, the simulator's counts, the control plane's metrics at
// the phases' bounds, both sides' CPU and memory (an in-process run labels each side's
// goroutines for pprof) — goes to collect.Run, which builds the summary; report.Write writes
// it with report.html, junit.xml, the .hgrm files and cpu.pprof. Options.Stop ends a run
// early with what it measured, marked interrupted.
//
// Distributed runs (docs/distributed.md; distributed.go): RunShard runs one segment of a
// scenario's fleet as a shard that takes the simulator's probe events from its stream
// (probe/stream) on its own clock, and RunPublished runs the simulator that publishes them
// with an ack barrier; merge.Merge combines their summaries.
package run
