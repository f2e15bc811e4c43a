//go:build unix

package gen

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this test process has used: benchmarks report it
// beside wall time because the shared 2-core machine is often busy with other work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
