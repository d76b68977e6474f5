package algo

// A slice (RL.SLICE) takes up to n units of a key's limit at once, spent at the server
// as a call of that cost would spend them, so that a client can admit its own requests
// from them in-process without a round trip each. It is partial: it takes as many of
// the n as pass now (0 when none does), the largest cost c <= n the algorithm admits,
// with its RESERVE if any. Only where spending early cannot admit more than the
// limit: RL.FIXED and RL.SLIDE count a slice in the window it was taken in, which is
// the window it may be used in; RL.TOKEN and RL.GCRA spend it from the bucket at once.
// RL.LOG (an entry's time is the request's) and RL.LEAKY (its queue's order is the
// point) take none. The unspent part goes back with Request.Refund (refund.go).
//
// How long a slice may be used (Decision.ValidFor, sliceLife): RL.FIXED and RL.SLIDE
// until the window it was counted in ends, so the units a key admits in each window,
// slices and calls together, never pass the limit. RL.TOKEN and RL.GCRA for the time
// the bucket takes to refill from empty (capacity·W/rate; RL.GCRA's τ = T·burst), so
// the units used over any span t are at most what the bucket admits over t plus that
// time: the long-run rate is exact, and a burst can pass the capacity by at most the
// units outstanding, at most one capacity.

// Sliceable reports whether a slice may be taken on a key of kind k: RL.FIXED,
// RL.SLIDE, RL.TOKEN and RL.GCRA.
func (k Kind) Sliceable() bool {
	return k == KindFixed || k == KindSlide || k == KindToken || k == KindGCRA
}

// sliced decides r, whose Slice n is above 0, with decide, one of RL.FIXED, RL.SLIDE,
// RL.TOKEN and RL.GCRA: the call of the largest cost c <= n that decide admits. With
// c = 0 it is refused, writes nothing, and answers as a call of cost 1 would (so
// RetryAfter is the time until one unit fits).
func sliced[S any](s S, r Request, now int64, decide func(S, Request, int64) (S, Decision)) (S, Decision) {
	n := r.Slice
	r.Slice = 0
	passes := func(c int64) bool {
		probe := r
		probe.Cost, probe.Peek = c, true
		_, d := decide(s, probe, now)
		return d.Allowed
	}
	probe := r
	probe.Cost, probe.Peek = 0, true
	_, d := decide(s, probe, now)
	// Remaining is the largest cost-1 count that passes; for RL.SLIDE's float estimate
	// floor(L - est) can differ from its test est + c <= L by one, either way.
	c := min(n, d.Remaining)
	if c < n && passes(c+1) {
		c++
	}
	for c > 0 && !passes(c) {
		c--
	}
	if c == 0 {
		r.Cost, r.Peek = 1, true
		_, d = decide(s, r, now)
		return s, d
	}
	r.Cost = c
	next, d := decide(s, r, now)
	d.Granted, d.ValidFor = c, r.sliceLife(now)
	return next, d
}

// sliceLife is how long, in µs from now, a slice of r taken at now may be used: to the
// end of the window for RL.FIXED and RL.SLIDE, the time the bucket refills from empty
// for RL.TOKEN (floor, at most maxDuration) and τ = T·burst for RL.GCRA.
func (r Request) sliceLife(now int64) int64 {
	switch r.Kind {
	case KindToken:
		b := newBucket(r)
		return int64(min(b.capacity*b.window/b.rate, maxDuration))
	case KindGCRA:
		return r.interval() * r.burst()
	}
	return (now/r.Window+1)*r.Window - now
}
