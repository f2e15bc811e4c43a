//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// Read returns the process's CPU time (user + system) and peak resident set size in bytes; ok
// is false when the kernel did not say.
func Read() (cpu time.Duration, maxRSS int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss * 1024, true // Linux reports KiB
}
