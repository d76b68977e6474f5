package algo

// LogEntry is one admitted request of RL.LOG: its time (µs) and cost.
type LogEntry struct{ TS, Cost int64 }

// Log decides one RL.LOG call, a sliding window log: exact, at the price of one entry
// per admitted request still in the window. entries are oldest first; an entry with
// TS <= now-W has left the window.
//
// When the call writes, the result holds the entries still in the window plus this
// call, built in place in entries' backing array (one copy, no allocation while the
// capacity suffices), so the store can pass a scratch buffer. A call at or before the
// newest entry's time adds its cost to that entry: equal times change no reply, and a
// clock that steps back cannot unsort the log. When the call does not write, entries
// is returned as it came.
func Log(entries []LogEntry, r Request, now int64) ([]LogEntry, Decision) {
	if r.Refund > 0 {
		return refundLog(entries, r, now)
	}
	if r.Reserve > 0 {
		return reserved(entries, r, now, Log)
	}
	limit, cost, window := r.Limit, r.Cost, r.Window
	first := 0
	for first < len(entries) && entries[first].TS <= now-window {
		first++
	}
	live := entries[first:]
	var sum int64
	newest := int64(-1) // no entry
	for _, e := range live {
		sum += e.Cost
		newest = max(newest, e.TS)
	}

	allowed := cost == 0 || sum+cost <= limit
	after := sum
	if allowed && cost > 0 {
		after += cost
		newest = max(newest, now)
	}
	d := Decision{Allowed: allowed, Limit: limit, Remaining: max(0, limit-after), FreshAt: now}
	switch {
	case allowed:
	case cost > limit:
		d.RetryAfter = -1
	default:
		// Drop the oldest entries until sum + c <= L; the last one dropped leaves the
		// window at its TS + W. Reached at the latest with the last entry, as c <= L.
		left := sum
		for _, e := range live {
			left -= e.Cost
			if left+cost <= limit {
				d.RetryAfter = e.TS + window - now
				break
			}
		}
	}
	if newest >= 0 {
		d.FreshAt = newest + window
		d.ResetAfter = d.FreshAt - now
	}

	if !allowed || cost == 0 || r.Peek {
		return entries, d
	}
	d.Write = true
	n := copy(entries, live)
	entries = entries[:n]
	if n > 0 && entries[n-1].TS >= now {
		entries[n-1].Cost += cost
	} else {
		entries = append(entries, LogEntry{TS: now, Cost: cost})
	}
	return entries, d
}
