// Package merge combines the summaries of a distributed run (docs/distributed.md) — one per
// fleet shard and the simulator's — into one summary of the whole run, on which the scenario's
// thresholds are evaluated once. It sits on top of the summary format, beside compare and
// tune: histograms are added, counters summed, per-event records combined and phases aligned
// on the simulator's clock. Select (runs.go) first picks the inputs of one run among files of
// several (a reused volume) by the run id each process writes (metadata.labels.run, or derived
// from its start time).
package merge
