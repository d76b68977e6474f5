package resp

import (
	"math"
	"sync/atomic"
	"time"
)

// clock is the server's one source of "now", in µs since the Unix epoch. It reads
// the real time, or, after DEBUG CLOCK SET or ADVANCE, stays frozen where the test
// put it, so a test and a reference implementation can share one clock exactly.
type clock struct {
	frozen atomic.Int64 // the frozen time, or realTime
}

// maxClock is the latest time the debug clock accepts, 2^53−1 µs: the engine's
// float64 formulas hold times exactly below it.
const maxClock = 1<<53 - 1

// realTime marks the clock as following the real time; no test freezes it there.
const realTime = math.MinInt64

func (c *clock) now() int64 {
	if t := c.frozen.Load(); t != realTime {
		return t
	}
	return time.Now().UnixMicro()
}

// at is now for a caller that has just read the real time t.
func (c *clock) at(t time.Time) int64 {
	if f := c.frozen.Load(); f != realTime {
		return f
	}
	return t.UnixMicro()
}

// set freezes the clock at t.
func (c *clock) set(t int64) { c.frozen.Store(t) }

// advance moves the clock d µs forward and leaves it frozen there; from the real
// clock it freezes at the real time plus d. It reports false, changing nothing, if
// the result would pass maxClock.
func (c *clock) advance(d int64) bool {
	for {
		old := c.frozen.Load()
		base := old
		if old == realTime {
			base = time.Now().UnixMicro()
		}
		if base > maxClock-d {
			return false
		}
		if c.frozen.CompareAndSwap(old, base+d) {
			return true
		}
	}
}

// real makes the clock follow the real time again.
func (c *clock) real() { c.frozen.Store(realTime) }

// isFrozen reports whether DEBUG CLOCK froze the clock.
func (c *clock) isFrozen() bool { return c.frozen.Load() != realTime }
