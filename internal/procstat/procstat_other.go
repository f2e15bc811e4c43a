//go:build !unix

package procstat

import "time"

// Read is not measured on this platform: ok is false.
func Read() (cpu time.Duration, maxRSS int64, ok bool) { return 0, 0, false }
