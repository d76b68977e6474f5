package algo

import "math"

// FixedState is RL.FIXED's state: the index of the window its count belongs to, and
// the cost admitted in that window. The zero value is a fresh key.
type FixedState struct{ Window, Count int64 }

// Fixed decides one RL.FIXED call. Windows are aligned to multiples of W since the
// epoch, w = floor(now/W); a count stored for another window is 0. All integer math.
func Fixed(s FixedState, r Request, now int64) (FixedState, Decision) {
	if r.Refund > 0 {
		return refundFixed(s, r, now)
	}
	if r.Slice > 0 {
		return sliced(s, r, now, Fixed)
	}
	if r.Reserve > 0 && !r.Spend {
		return reserved(s, r, now, Fixed)
	}
	limit, cost := r.Limit, r.Cost
	w := now / r.Window
	end := (w + 1) * r.Window
	var count int64
	if s.Window == w {
		count = s.Count
	}
	// A cost above the limit fails here too: count is never negative.
	allowed := cost == 0 || count+cost <= limit
	after := count
	if r.Spend {
		// Every call counts, so the count can pass the limit; it saturates rather
		// than wrap. A reserve is kept above the count, and a call refused by its
		// reserve alone (the limit would admit it) spends nothing: lower classes'
		// refusals must not eat what they leave to the higher. Remaining still shows
		// the count, not the caller's share.
		after = min(count, math.MaxInt64-cost) + cost
		allowed = after <= limit-r.Reserve
		if !allowed && after <= limit {
			after = count
		}
	} else if allowed {
		after += cost
	}
	d := Decision{Allowed: allowed, Limit: limit, Remaining: max(0, limit-after), FreshAt: now}
	if r.Spend {
		d.Remaining = limit - after
	}
	switch {
	case allowed:
	case cost+r.Reserve > limit:
		d.RetryAfter = -1
	default:
		d.RetryAfter = end - now
	}
	if after > 0 {
		d.ResetAfter = end - now
		d.FreshAt = end
	}
	if (allowed || r.Spend && after != count) && cost > 0 && !r.Peek {
		d.Write = true
		return FixedState{Window: w, Count: after}, d
	}
	return s, d
}
