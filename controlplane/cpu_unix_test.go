//go:build unix

package controlplane_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the process has used so far. Benchmarks report it
// per op beside wall time: on a shared, loaded machine wall time mostly measures the queue for
// a core, CPU time the work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
