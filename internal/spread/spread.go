// Package spread spreads the waits rlserver's HTTP answers and Go client tell refused
// callers, so that callers refused together do not come back together: a wait is
// never shortened, only lengthened by a bounded random amount.
package spread

import (
	"math"
	"math/rand/v2"
	"time"
)

// The jitter's bounds: a tenth of the wait, at least MinJitter (callers told "now"
// by a whole-second header or a short wait still spread) and at most MaxJitter (a
// long wait is not made much longer).
const (
	MinJitter = 10 * time.Millisecond
	MaxJitter = time.Second
)

// Wait is d plus a uniform random jitter in [0, J), J being d/10 bounded to
// [MinJitter, MaxJitter]: never before d, at most d + MaxJitter. A d of 0 or less (no
// wait) is returned as it is, and so is one within MaxJitter of the longest Duration
// (client.Never, "it never will"), which the jitter would overflow.
func Wait(d time.Duration) time.Duration {
	if d <= 0 || d > math.MaxInt64-MaxJitter {
		return d
	}
	return d + rand.N(Jitter(d))
}

// Jitter is the bound J of Wait(d)'s jitter.
func Jitter(d time.Duration) time.Duration {
	return min(max(d/10, MinJitter), MaxJitter)
}
