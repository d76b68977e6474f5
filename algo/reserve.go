package algo

// RESERVE n keeps the last n units of a key for callers without it: a call with
// Reserve n is admitted only if n units would remain after it, and a call without
// Reserve may use everything. So "20% of the fleet is kept for critical traffic" is
// critical calls without RESERVE and the others with RESERVE 20 on a limit of 100.
//
// For the counting algorithms (RL.FIXED, RL.SLIDE, RL.LOG, RL.TOKEN, RL.GCRA) n units
// remaining means that a call of cost n would pass right after this one; at one
// instant that is exactly a call of cost c+n passing now, so the decision is that call
// decided with PEEK: the same test, and the same never-early RetryAfter (−1 when c+n
// is above what the key can ever hold). RL.LEAKY and RL.ACQUIRE count places, in the
// queue and among the leases: n places must stay free after the call (Leaky,
// Acquire). Reserve changes only who is admitted, never what an admitted call writes.
// Remaining is then what the caller's class may still take: the key's remaining less n,
// at least 0.

// reserved decides r, whose Reserve is above 0, with decide, one of the counting
// algorithms: refused as the PEEK of cost c+n is, else decided as r without Reserve.
func reserved[S any](s S, r Request, now int64, decide func(S, Request, int64) (S, Decision)) (S, Decision) {
	n := r.Reserve
	probe := r
	probe.Cost, probe.Peek, probe.Reserve = r.Cost+n, true, 0
	if _, d := decide(s, probe, now); !d.Allowed {
		d.Remaining = max(0, d.Remaining-n)
		return s, d
	}
	r.Reserve = 0
	next, d := decide(s, r, now)
	d.Remaining = max(0, d.Remaining-n)
	return next, d
}

// ReserveShare is the Reserve that leaves pct percent of r's capacity (a token
// bucket's size, RL.GCRA's burst, RL.LEAKY's queue places, the limit otherwise),
// rounded up so that at least the share is left, and at most r.Limit.
func (r Request) ReserveShare(pct int64) int64 {
	capacity := r.Limit
	switch {
	case r.Kind == KindGCRA && r.Burst > 0:
		capacity = r.Burst
	case r.Kind == KindLeaky:
		capacity = r.Queue + 1
	}
	return min(r.Limit, (capacity*pct+99)/100)
}
