package algo

import "math"

// Leaky decides one RL.LEAKY call; tat as in GCRA: the time the queue drains.
// Requests leave one every T = W/L; up to Queue requests may wait their turn.
//
// Following the contract's formula, a cost above the limit is not refused: it passes
// when the queue has room and then occupies T·c of the schedule. Field 4 is never -1.
func Leaky(tat float64, r Request, now int64) (float64, Decision) {
	n := float64(now)
	interval := float64(r.Window) / float64(r.Limit) // T = W / L
	room := float64(interval * float64(r.Queue))     // T * q
	start := max(tat, n)                             // start = max(tat, now)
	delay := start - n                               // delay = start - now

	allowed := r.Cost == 0 || delay <= room
	after := tat // COST 0 changes nothing
	if allowed && r.Cost > 0 {
		after = start + float64(interval*float64(r.Cost)) // tat = start + T * c
	}

	// remaining = max(0, floor((T*q - max(0, tat' - now)) / T) + 1), in this order:
	// a = max(0, tat' - now); b = T*q - a; c = b / T; floor(c) + 1; max(0, ·).
	queued := max(0, after-n)
	remaining := math.Floor((room-queued)/interval) + 1
	d := Decision{
		Allowed:    allowed,
		Limit:      r.Limit,
		Remaining:  int64(max(0, remaining)),
		RetryAfter: msCeil(delay), // allowed: the wait before proceeding
		ResetAfter: msCeil(after - n),
		FreshAt:    freshAt(after, now),
	}
	if !allowed {
		d.RetryAfter = msCeil(delay - room) // until the queue has room
	}

	if allowed && r.Cost > 0 && !r.Peek {
		d.Write = true
		return after, d
	}
	return tat, d
}
