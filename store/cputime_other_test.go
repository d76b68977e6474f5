//go:build !unix

package store

import "time"

// cpuTime is 0 where getrusage is not to be had: the cpu-ns/op metric then reads 0.
func cpuTime() time.Duration { return 0 }
