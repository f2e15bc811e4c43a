package procstat

import "time"

// CPU is the process's CPU time so far (0 where it cannot be read).
func CPU() time.Duration {
	cpu, _, _ := Read()
	return cpu
}
