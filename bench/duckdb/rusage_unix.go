//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user plus system) used so far by the
// whole process, every thread included: Go's and DuckDB's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
