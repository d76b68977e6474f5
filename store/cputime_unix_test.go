//go:build unix

package store

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: what a benchmark
// on a shared machine can compare where the wall clock counts other processes' turns.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
