// Package procstat reads this process's resource usage (CPU time, peak RSS) from the kernel:
// the runner's harness-overhead figures and the benchmarks that report CPU per op beside wall
// time (on a shared, loaded machine wall time mostly measures the queue for a core, CPU time
// the work). A leaf.
package procstat
