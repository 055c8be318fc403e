//go:build !linux

package tracebench

import "time"

// threadCPU reports that per-thread CPU time is not measured on this platform.
func threadCPU() (time.Duration, bool) { return 0, false }
