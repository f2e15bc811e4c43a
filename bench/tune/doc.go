// Package tune sweeps scenario parameters (the debouncer's minQuiet and maxDelay, its policy,
// the push throttle, …) and recommends a setting: it sits on top of run (each grid point is
// run, repeatedly) and of compare's statistics.
//
// Every point is first predicted without running anything (estimate.go: the scenario's churn
// timeline replayed through the debouncer's pure core), then run; the measured figures rank
// the points on the lab's own HDR latencies and exact counts (thresholds on bucket-bounded
// figures are evaluated by their bounds). pareto.go finds the frontier of latency against cost
// and its knee, policy.go compares debounce policies point by point with the U test, search.go
// optionally searches between grid values (Nelder-Mead on the estimate), and output.go and
// plot.go write the table, the report and the plot.
//
// floor.go replays the same timeline event by event (DebounceFloor): each event timed from its
// schedule to the push that carries it, the events the lab would not time (undone or already
// held within a push) left out. A latency threshold below that floor cannot pass against any
// control plane that debounces as the scenario says; xdslab validate and run warn of it.
package tune
