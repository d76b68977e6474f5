package shed

import (
	"math"
	"time"
)

// The learning constants. They follow Netflix's concurrency-limits (Gradient2 and
// Vegas): a window of samples, compared with the least latency seen.
const (
	// minSamples is the fewest completions a window needs before it may move the
	// limit: fewer give a mean too noisy to act on.
	minSamples = 10
	// probeEvery is how many windows pass between two probes of the no-load latency.
	// The least mean seen cannot simply forget (drift up): under a standing overload
	// every window is queued, so a forgetting minimum climbs to the queued latency and
	// the limit runs away with it. A probe instead holds the limit at probeFactor of
	// itself for one window (below capacity, since the limit is capacity plus a
	// headroom) and takes that window's mean as the new no-load latency, as BBR probes
	// its RTT. A probe that finds the latency fallen by a tenth probes again, lower,
	// so a limit that started far above capacity comes down within a few windows.
	// The first window is followed by a probe, then every 50 (5 s): a service that
	// became slower for good is relearned within seconds, at the price of one window
	// in 50 at 2/3 of the limit. At 3/4 (tried first), a limit of 12 on 8 workers
	// probed at 9, still queued: each probe raised the no-load latency, and the limit
	// ratcheted up to 12 with 4 requests queued inside. At 1/2, the critical 60% of
	// the experiment's load at 3x exceeded what the probe window left (4 of 9 slots).
	probeEvery  = 50
	probeFactor = 2.0 / 3
	// smoothing is the share of a lower estimate the limit takes per window: 0.2 moves
	// it most of the way down in about 5 windows, and keeps one noisy window from
	// halving it. A higher estimate is taken whole: growth is already bounded (by
	// √limit a window), and a limit too low refuses requests the service could serve.
	smoothing = 0.2
	// floorGradient is the most one window can cut the estimate by (half), as Gradient2
	// does, so that one outlier window does not collapse the limit.
	floorGradient = 0.5
)

// gradient learns a concurrency limit from the latency of completed requests. Each
// window (at least window long and minSamples completions) it compares the window's
// mean latency with the least mean seen (the no-load latency):
//
//	estimate = limit × max(0.5, noLoad / mean) + headroom(limit)
//	           (limit + √limit when that says less than one request is queued)
//	limit    = estimate if higher, else limit × 0.8 + estimate × 0.2; within [min, max]
//
// By Little's law, limit × noLoad / mean is the concurrency the service completes
// without queueing inside (at capacity, latency grows with the in-flight count), so
// the limit settles at the service's capacity plus the headroom, the few requests
// queued inside that keep it busy. A window whose peak in-flight stayed under half
// the limit says nothing about capacity (the application limited it): the limit holds.
// Every probeEvery windows, one window measures the no-load latency afresh. It is
// not safe for concurrent use; Shedder holds its lock.
type gradient struct {
	limit    float64
	min, max float64
	window   time.Duration

	end         time.Time     // when the current window may close; zero before the first sample
	sum         time.Duration // latencies of the window's completions
	n           int           // completions in the window
	maxInflight int           // most requests in flight at a completion of the window
	noLoad      time.Duration // least window mean seen since the last probe
	mean        time.Duration // the last closed window's mean latency; 0 before one
	windows     int           // windows closed
	saved       float64       // the limit before the probe, while probing
	probing     bool          // the current window is a probe
}

// headroom is how far above the measured capacity the limit stays: √limit / 4, at
// least 1. At a limit of 8 it is 1: one request queued inside the service, so that
// no worker idles between a completion and the next arrival, while latency at
// capacity grows only by that request's share (1/8). √limit / 2 (tried first) held
// 3 requests queued inside an 8-worker service of the overload experiment, and its
// critical p99 at 3x load 2.1x that at 0.5x.
func headroom(limit float64) float64 {
	return max(1, math.Sqrt(limit)/4)
}

// sample records one completion of latency rtt at now, with inflight requests in
// flight when it started, and reports whether the limit changed.
func (g *gradient) sample(now time.Time, rtt time.Duration, inflight int) bool {
	if g.end.IsZero() {
		g.end = now.Add(g.window)
	}
	g.sum += max(rtt, 1)
	g.n++
	g.maxInflight = max(g.maxInflight, inflight)
	if g.n < minSamples || now.Before(g.end) {
		return false
	}
	mean := g.sum / time.Duration(g.n)
	peak := g.maxInflight
	g.end, g.sum, g.n, g.maxInflight = now.Add(g.window), 0, 0, 0
	g.mean = mean
	g.windows++
	old := g.limit
	switch {
	case g.probing:
		// A probe whose latency fell by a tenth or more found the service queued at
		// the limit before it: probe again, lower, and keep the lower limit when the
		// fall stops. Otherwise the limit was right: restore it.
		falling := float64(mean) < float64(g.noLoad)*0.9
		g.noLoad = mean
		if falling {
			g.saved = 0
			g.limit = max(g.min, g.limit*probeFactor)
			return int(g.limit) != int(old)
		}
		g.probing = false
		g.limit = max(g.limit, g.saved)
		return int(g.limit) != int(old)
	case g.noLoad == 0 || mean < g.noLoad:
		g.noLoad = mean
	}
	if g.windows%probeEvery == 0 || g.windows == 1 {
		g.saved, g.probing = g.limit, true
		g.limit = max(g.min, g.limit*probeFactor)
		return int(g.limit) != int(old)
	}
	if float64(peak) < g.limit/2 {
		return false
	}
	grad := max(floorGradient, float64(g.noLoad)/float64(mean))
	estimate := g.limit*grad + headroom(g.limit)
	if g.limit*(1-grad) < 1 {
		// Less than one request queued inside: grow by √limit, as Vegas does when it
		// sees no queueing, so 1 → 16 takes 7 windows, not 15.
		estimate = g.limit + math.Sqrt(g.limit)
	}
	if estimate < g.limit {
		estimate = g.limit*(1-smoothing) + estimate*smoothing
	}
	g.limit = min(g.max, max(g.min, estimate))
	return int(g.limit) != int(old)
}
