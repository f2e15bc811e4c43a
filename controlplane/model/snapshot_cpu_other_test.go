//go:build !unix

package model

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }
