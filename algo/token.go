package algo

import "math"

// TokenState is RL.TOKEN's state: the tokens left at time TS (µs). The zero value
// (TS 0) is a fresh, full bucket.
type TokenState struct {
	Tokens float64
	TS     int64
}

// Token decides one RL.TOKEN call, a token bucket of Limit tokens refilled
// continuously at Rate tokens per window (0: Rate = Limit).
func Token(s TokenState, r Request, now int64) (TokenState, Decision) {
	if r.Refund > 0 {
		return refundToken(s, r, now)
	}
	if r.Slice > 0 {
		return sliced(s, r, now, Token)
	}
	if r.Reserve > 0 {
		return reserved(s, r, now, Token)
	}
	b := newBucket(r)
	cost := float64(r.Cost)
	tokens := b.refill(s, now)
	allowed := r.Cost == 0 || tokens >= cost
	after := tokens
	if allowed {
		after = tokens - cost
	}
	d := Decision{Allowed: allowed, Limit: r.Limit, Remaining: int64(math.Floor(after))}
	switch {
	case allowed:
	case r.Cost > r.Limit:
		d.RetryAfter = -1
	default:
		// ms((c - tokens) · W / r), in this order: a = c - tokens; b = a * W; b / r;
		// then settled against the refill computed from the stored state.
		d.RetryAfter = settleRetry(msCeil((cost-tokens)*b.window/b.rate), now,
			func(t int64) bool { return b.refill(s, t) >= cost })
	}
	// The time to fill up, (capacity - tokens') · W / r in the same order, rounded up
	// to a whole µs gives FreshAt; one µs later if the refill computed from the written
	// state still falls short of capacity there (it must then read exactly capacity,
	// as a fresh key). reset_after = ms(FreshAt - now), the contract's
	// ms((capacity - tokens') · W / r) unless that µs was added.
	// Lua: fresh = now + math.ceil(full); if refill(tokens', now, fresh) < capacity then
	// fresh = fresh + 1 end; reset_after = math.ceil((fresh - now) / 1000).
	full := (b.capacity - after) * b.window / b.rate
	d.FreshAt = freshAt(float64(now)+math.Ceil(full), now)
	if d.FreshAt < now+maxDuration && b.refill(TokenState{Tokens: after, TS: now}, d.FreshAt) < b.capacity {
		d.FreshAt++
	}
	d.ResetAfter = d.FreshAt - now

	if allowed && r.Cost > 0 && !r.Peek {
		d.Write = true
		return TokenState{Tokens: after, TS: now}, d
	}
	return s, d
}

// bucket is a token bucket's parameters as float64.
type bucket struct{ capacity, rate, window float64 }

func newBucket(r Request) bucket {
	b := bucket{capacity: float64(r.Limit), rate: float64(r.Rate), window: float64(r.Window)}
	if r.Rate <= 0 {
		b.rate = b.capacity
	}
	return b
}

// refill is the bucket's content at now:
// tokens = min(capacity, tokens + (now - ts) * r / W), in float64, in this order:
// a = now - ts (clamped to >= 0); b = a * r; c = b / W; d = tokens + c; min(capacity, d).
// TS 0 is a fresh key, full: the formula alone leaves it short of full whenever
// capacity·W/r > now (1e6 tokens refilled at 1 per year, say).
func (b bucket) refill(s TokenState, now int64) float64 {
	if s.TS == 0 {
		return b.capacity
	}
	elapsed := float64(max(0, now-s.TS))
	return min(b.capacity, s.Tokens+elapsed*b.rate/b.window)
}
