package algo

import "math"

// GCRA decides one RL.GCRA call; tat is the theoretical arrival time in µs (0 = fresh).
// Emission interval T = W/L, burst b (Burst, 0: b = L), tolerance τ = T·b.
func GCRA(tat float64, r Request, now int64) (float64, Decision) {
	burst := r.Burst
	if burst <= 0 {
		burst = r.Limit
	}
	n := float64(now)
	interval := float64(r.Window) / float64(r.Limit)          // T = W / L
	tolerance := float64(interval * float64(burst))           // τ = T * b
	newTat := max(tat, n) + float64(interval*float64(r.Cost)) // new_tat = max(tat, now) + T * c
	allowAt := newTat - tolerance                             // new_tat - τ

	// Allowed iff now >= new_tat - τ, with two exact shortcuts for the float test:
	//   - A cost above b is refused: the contract's -1 says it can never pass, but the
	//     float test admits it once T·(c-b) is below the quarter µs that float µs keep
	//     near today's epoch.
	//   - With tat <= now, c <= b passes: new_tat - τ = now - T·(b-c) <= now. In floats,
	//     now + T·c - τ can round above now when now + T·c crosses a power of two
	//     (τ of 17 years today, seconds in 2041): c = b would then never pass.
	// Lua: allowed = c == 0 or (c <= b and (tat <= now or now >= new_tat - τ)).
	allowed := r.Cost == 0 || (r.Cost <= burst && (tat <= n || n >= allowAt))
	after := tat // COST 0 changes nothing, not even max(tat, now)
	if allowed && r.Cost > 0 {
		after = newTat
	}

	// remaining = floor((now - (tat' - τ)) / T) clamped to [0, b], in this order:
	// a = tat' - τ; b = now - a; c = b / T; floor; clamp. With tat' <= now it is b
	// exactly (the formula is >= τ/T = b, which floats may round to b - 1): an old tat
	// then answers as a fresh key. Lua: if tat' <= now then b else the formula.
	remaining := burst
	if after > n {
		remaining = int64(min(max(math.Floor((n-(after-tolerance))/interval), 0), float64(burst)))
	}
	d := Decision{
		Allowed:    allowed,
		Limit:      burst,
		Remaining:  remaining,
		ResetAfter: msCeil(after - n), // ms(tat' - now)
		FreshAt:    freshAt(after, now),
	}
	switch {
	case allowed:
	case r.Cost > burst:
		d.RetryAfter = -1
	default:
		d.RetryAfter = msCeil(allowAt - n) // ms((new_tat - τ) - now)
	}

	if allowed && r.Cost > 0 && !r.Peek {
		d.Write = true
		return newTat, d
	}
	return tat, d
}
