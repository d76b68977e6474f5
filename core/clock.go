package core

import (
	"math"
	"sync/atomic"
	"time"
)

// Clock is the server's one source of "now", in µs since the Unix epoch. It reads
// the real time, or, after DEBUG CLOCK SET or ADVANCE (Core.SetClock, AdvanceClock),
// stays frozen where the test put it, so a test and a reference implementation can
// share one clock exactly.
type Clock struct {
	frozen atomic.Int64 // the frozen time, or realTime
}

// MaxClock is the latest time the debug clock accepts, 2^53−1 µs: the engine's
// float64 formulas hold times exactly below it.
const MaxClock = 1<<53 - 1

// realTime marks the clock as following the real time; no test freezes it there.
const realTime = math.MinInt64

// Now is the time in µs since the Unix epoch.
func (c *Clock) Now() int64 {
	if t := c.frozen.Load(); t != realTime {
		return t
	}
	return time.Now().UnixMicro()
}

// At is Now for a caller that has just read the real time t.
func (c *Clock) At(t time.Time) int64 {
	if f := c.frozen.Load(); f != realTime {
		return f
	}
	return t.UnixMicro()
}

// set freezes the clock at t.
func (c *Clock) set(t int64) { c.frozen.Store(t) }

// advance moves the clock d µs forward and leaves it frozen there; from the real
// clock it freezes at the real time plus d. It reports false, changing nothing, if
// the result would pass MaxClock.
func (c *Clock) advance(d int64) bool {
	for {
		old := c.frozen.Load()
		base := old
		if old == realTime {
			base = time.Now().UnixMicro()
		}
		if base > MaxClock-d {
			return false
		}
		if c.frozen.CompareAndSwap(old, base+d) {
			return true
		}
	}
}

// real makes the clock follow the real time again.
func (c *Clock) real() { c.frozen.Store(realTime) }

// IsFrozen reports whether DEBUG CLOCK froze the clock.
func (c *Clock) IsFrozen() bool { return c.frozen.Load() != realTime }
