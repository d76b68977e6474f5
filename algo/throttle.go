package algo

import "math"

// Throttle decides one CL.THROTTLE call; tat as in GCRA. Reply fields are in seconds.
//
// It follows redis-cell's rate_limit (brandur/redis-cell, RateLimiter::rate_limit):
// limit = max_burst+1, T = period/count, tolerance τ = T·(max_burst+1), increment T·q.
// Where this code departs from it:
//   - Time is float64 µs, as the contract says, where redis-cell uses integer ns with
//     T truncated to a whole ns; results differ only where that truncation shows.
//   - A stored tat older than now counts as now. redis-cell reads tat - now for ttl,
//     but Redis has expired such a key already, so it never sees one.
//   - Seconds round up on any remainder, as the contract says; redis-cell adds 1 only
//     when the remainder has a whole millisecond, so its 2.0004 s reads 2 (early).
//   - Two integer shortcuts around the float test, as in RL.GCRA: a quantity above
//     max_burst+1 is limited, and one within it passes when tat <= now.
//
// Unlike RL.* COST 0, quantity 0 is decided by the same test as any other (redis-cell
// "peeks" this way): it can be limited when a smaller max_burst now applies to an old tat.
func Throttle(tat float64, r Request, now int64) (float64, Decision) {
	n := float64(now)
	limit := r.Limit + 1
	interval := float64(r.Window) / float64(r.Rate)  // T = period / count
	tolerance := float64(interval * float64(limit))  // τ = T * (max_burst+1)
	increment := float64(interval * float64(r.Cost)) // T * quantity
	start := max(tat, n)                             // tat, or now if older or absent
	newTat := start + increment                      // new_tat = start + increment
	diff := n - (newTat - tolerance)                 // diff = now - (new_tat - τ)
	// The shortcuts of RL.GCRA: quantity > limit never passes, and with tat <= now a
	// quantity <= limit always does, however the float sum rounds. redis-cell's integer
	// ns get both right without them.
	limited := r.Cost > limit || (tat > n && diff < 0)

	d := Decision{Allowed: !limited, Limit: limit, RetryAfter: -1}
	after := tat
	var ttl float64
	if limited {
		ttl = start - n // ttl = tat - now
		if r.Cost <= limit {
			d.RetryAfter = secCeil(-diff)
		}
	} else {
		ttl = newTat - n // ttl = new_tat - now
		if r.Cost > 0 {
			after = newTat
		}
	}
	// next = τ - ttl; remaining = trunc(next / T) when next > -T, else 0.
	if next := tolerance - ttl; next > -interval {
		d.Remaining = int64(next / interval)
	}
	d.ResetAfter = secCeil(ttl)
	d.FreshAt = freshAt(after, now)

	if !limited && r.Cost > 0 && !r.Peek {
		d.Write = true
		return newTat, d
	}
	return tat, d
}

// secCeil is a duration x in µs as whole seconds, rounded up on any remainder,
// negative as 0 and long ones capped at maxDuration.
// Lua: math.ceil(math.min(math.max(x, 0), 2^53) / 1000000).
func secCeil(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	return int64(math.Ceil(min(x, maxDuration) / 1e6))
}
