package algo

import "math"

// RedisGCRA decides one call of Redis 8.8's GCRA command as Redis's gcraCommand
// (src/gcra.c) does, on Redis's clock: the command's time in whole ms (Redis reads
// commandTimeSnapshot, a ms clock, and multiplies it by 1000), so now is floored to
// its ms here. tat is the key's theoretical arrival time in µs, 0 for a fresh key
// (read as now, as Redis does for an absent key). With T = r.Interval, b = r.Burst and
// c = r.Cost: new_tat = max(tat, now) + T·c, allowed iff new_tat − T·b <= now, all in
// int64 µs with Redis's overflow check (ErrCostOverflow, nothing changes) where
// max(tat, now) + T·c would pass 2^63−1. The reply is Redis's, its times in µs here
// (Redis answers them in seconds, ceil of a float64 quotient as C computes it):
// retry_after −1 when allowed or when c > b (never fits), reset_after the tat's
// distance from now, negative for a tat behind now; remaining truncated as C divides.
//
// An allowed call writes new_tat, and the key lives until the ms Redis expires it at,
// ceil(new_tat / 1000): FreshAt is that ms in µs, so the key goes as that ms begins.
// (Redis keeps a key through its expire ms and drops it after; a key read in that ms
// holds a tat at or before now, which decides as a fresh key but for the remaining of
// a call refused for c > b.) A limited call changes nothing.
func RedisGCRA(tat int64, r Request, now int64) (int64, Decision, error) {
	now -= now % 1000
	if tat == 0 {
		tat = now
	}
	t := r.Interval
	variance := t * r.Burst // NativeGCRA checked both products
	increment := t * r.Cost
	base := max(now, tat)
	if math.MaxInt64-base < increment {
		return tat, Decision{}, ErrCostOverflow
	}
	newTat := base + increment
	diff := now - (newTat - variance)
	d := Decision{Limit: r.Burst, RetryAfter: -1}
	var ttl int64
	if diff < 0 {
		if increment <= variance {
			d.RetryAfter = -diff
		}
		ttl = tat - now
	} else {
		d.Allowed, d.Write = true, true
		ttl = newTat - now
		d.FreshAt = GCRAExpireAt(newTat)
	}
	if next := variance - ttl; next > -t {
		d.Remaining = next / t
	}
	d.ResetAfter = ttl
	if d.Write {
		return newTat, d, nil
	}
	return tat, d, nil
}

// GCRAExpireAt is when a key of Redis's GCRA whose tat is t µs goes: t rounded up to
// a whole ms, as Redis sets the key's expire time ((tat + 999) / 1000 ms), in µs; the
// latest such moment int64 holds beyond that.
func GCRAExpireAt(t int64) int64 {
	ms := t / 1000
	if t%1000 > 0 {
		ms++
	}
	if ms > math.MaxInt64/1000 {
		return math.MaxInt64 / 1000 * 1000
	}
	return ms * 1000
}
