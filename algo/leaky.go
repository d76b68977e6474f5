package algo

// Leaky decides one RL.LEAKY call; tat, in integer µs as in GCRA, is the time the
// queue drains. Requests leave one every T (Window over Limit, rounded); up to Queue
// requests may wait their turn: allowed iff max(tat, now) − now <= T·q.
//
// Following the contract, a cost above the limit is not refused: it passes when the
// queue has room and then occupies T·c of the schedule. Field 4 is never -1 but with
// Reserve n, which keeps n places free: allowed iff delay + T·(c+n−1) <= T·q, −1
// when T·(c+n−1) > T·q.
func Leaky(tat int64, r Request, now int64) (int64, Decision) {
	if r.Refund > 0 {
		return refundTat(tat, r, now, Leaky)
	}
	t := r.interval()
	room := t * r.Queue
	start := max(tat, now)
	delay := start - now

	allowed := r.Cost == 0 || delay <= room
	// With Reserve n, n places must stay in the queue after the call: n more calls of
	// cost 1 would each find room, the last when the schedule is T·(c+n−1) past
	// delay. need > room never fits.
	need := t * (r.Cost + r.Reserve - 1)
	if r.Reserve > 0 {
		allowed = need <= room && delay+need <= room
	}
	after := tat // COST 0 changes nothing
	if allowed && r.Cost > 0 {
		after = start + t*r.Cost
	}
	ahead := max(0, after-now)
	d := Decision{
		Allowed:    allowed,
		Limit:      r.Limit,
		Remaining:  max(0, floorDiv(room-ahead, t)+1-r.Reserve),
		RetryAfter: delay, // allowed: the wait before proceeding
		ResetAfter: ahead,
		FreshAt:    now + ahead,
	}
	switch {
	case allowed:
	case r.Reserve == 0:
		d.RetryAfter = delay - room // until the queue has room
	case need > room:
		d.RetryAfter = -1
	default:
		d.RetryAfter = delay + need - room
	}
	if allowed && r.Cost > 0 && !r.Peek {
		d.Write = true
		return after, d
	}
	return tat, d
}

// floorDiv is a/b rounded toward minus infinity, for b > 0 (Go's / truncates).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
