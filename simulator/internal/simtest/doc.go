// Package simtest holds the test fixtures that the simulator's tests and its sinks' tests share:
// the small topology and one churn entry per kind, a reference Store that applies events, the
// check that a sink's state is exactly the simulator's, and the churn benchmarks' mesh and runner.
// It is a normal package so that both simulator_test and simulator/sinks can import it; only
// tests use it.
package simtest
