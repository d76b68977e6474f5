package algo

// The GCRA family (RL.GCRA, CL.THROTTLE, Redis's GCRA) and RL.LEAKY keep one number
// per key, the theoretical arrival time tat, and do all their arithmetic on integer µs.
// Every value stays below 2^53, so the Lua scripts, whose numbers are doubles, compute
// the same integers: CheckSchedule refuses a schedule longer than maxSchedule, a stored tat is
// at most now + maxSchedule, and now + 2·maxSchedule is below 2^53 until 2055.
//
// Integers, not float64: a float tat holds µs only to a quarter near today's epoch, and
// a fractional interval W/L summed b times can land a hair above τ, so that a burst of
// b admitted b−1 (RL.GCRA 6 per 1000 ms did, in about 40% of (limit, window) pairs).

// maxSchedule is the longest a state may run ahead of now, in µs: 100 years. It bounds
// the tolerance T·b of the GCRA family and T·q and T·c of RL.LEAKY.
const maxSchedule = 100 * 365 * 86_400 * 1_000_000

// emissionInterval is T = max(1, round(w/n)) µs, rounding half up: the rule of Redis 8.8's
// GCRA, (long long)(period_us / tokens + 0.5), in integers.
func emissionInterval(w, n int64) int64 {
	return max(1, (2*w+n)/(2*n))
}

// interval is r's emission interval T in µs: Interval when set (Redis's GCRA), else
// Window over Limit (CL.THROTTLE: over Rate), rounded.
func (r Request) interval() int64 {
	switch {
	case r.Interval > 0:
		return r.Interval
	case r.Kind == KindThrottle:
		return emissionInterval(r.Window, r.Rate)
	}
	return emissionInterval(r.Window, r.Limit)
}

// burst is how many cost-1 requests the GCRA family admits at one instant: BURST
// (default the limit) for RL.GCRA, max_burst+1 for CL.THROTTLE.
func (r Request) burst() int64 {
	switch {
	case r.Kind == KindThrottle:
		return r.Limit + 1
	case r.Burst > 0:
		return r.Burst
	}
	return r.Limit
}

// GCRA decides one call of RL.GCRA, CL.THROTTLE or Redis's GCRA; tat is the theoretical
// arrival time in µs (0: fresh). With T the emission interval, b the burst and
// τ = T·b: new_tat = max(tat, now) + T·c, allowed iff new_tat − τ <= now.
//
// r.Cell selects redis-cell's reply (CL.THROTTLE always, Redis's GCRA): retry_after −1
// when allowed (the front answers its times in seconds), and a quantity of 0 decided
// by the same test as any other, so it is limited when an old tat lies more than τ
// ahead. Otherwise COST 0 is always allowed. Either way a cost above b is refused with
// retry_after −1, and a limited call changes nothing.
func GCRA(tat int64, r Request, now int64) (int64, Decision) {
	if r.Refund > 0 {
		return refundTat(tat, r, now, GCRA)
	}
	if r.Slice > 0 {
		return sliced(tat, r, now, GCRA)
	}
	if r.Reserve > 0 {
		return reserved(tat, r, now, GCRA)
	}
	t, b, c := r.interval(), r.burst(), r.Cost
	tolerance := t * b
	start := max(tat, now)
	// c <= b keeps T·c within τ, and so within maxSchedule.
	allowed := c <= b && (c == 0 && !r.Cell || start+t*c-tolerance <= now)
	after := tat // what is stored after the call
	if allowed && c > 0 {
		after = start + t*c
	}
	ahead := max(0, after-now)
	d := Decision{
		Allowed:    allowed,
		Limit:      b,
		Remaining:  max(0, (tolerance-ahead)/t), // floor, clamped: at most b
		ResetAfter: ahead,
		FreshAt:    now + ahead,
	}
	switch {
	case allowed && r.Cell:
		d.RetryAfter = -1
	case allowed:
	case c > b:
		d.RetryAfter = -1
	default:
		d.RetryAfter = start + t*c - tolerance - now
	}
	if allowed && c > 0 && !r.Peek {
		d.Write = true
		return after, d
	}
	return tat, d
}
