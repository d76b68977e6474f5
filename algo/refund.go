package algo

// Refunds give back what earlier calls spent, the way an LLM gateway reserves
// max_tokens and returns what the answer did not use: a Request with Refund n > 0
// runs one of these instead of its algorithm. A refund never leaves more room than a
// fresh key has, and gives back only what still counts at now: spending in a window
// that has ended, tokens already refilled, a schedule already past. The reply is what
// a PEEK of cost 0 answers right after the refund (for the GCRA family and RL.LEAKY,
// whose reply the Lua twins compute the same way), and Write says whether the state
// changed; a fresh key has nothing to give back and changes nothing. With Peek a
// refund answers as it would and writes nothing (Store.DoAll decides as PEEK first).
//
// The Lua scripts run the same arithmetic when their cost argument is -n (package lua).

// afterRefund is r as the PEEK of cost 0 that describes the state a refund leaves.
func afterRefund(r Request) Request {
	r.Refund, r.Cost, r.Peek = 0, 0, true
	return r
}

// refundFixed takes n off the current window's count, not below 0.
func refundFixed(s FixedState, r Request, now int64) (FixedState, Decision) {
	next := s
	if s.Window == now/r.Window && s.Count > 0 {
		next.Count = max(0, s.Count-r.Refund)
	}
	_, d := Fixed(next, afterRefund(r), now)
	if d.Write = next != s && !r.Peek; !d.Write {
		return s, d
	}
	return next, d
}

// refundSlide takes n off the current window's count, then what is left of n off the
// previous window's: what a call spent just before the window turned still weighs
// there, by the share of that window still inside the sliding window.
func refundSlide(s SlideState, r Request, now int64) (SlideState, Decision) {
	v := viewSlide(s, r.Window, now)
	next := s
	if v.cur > 0 || v.prev > 0 {
		fromCur := min(v.cur, r.Refund)
		next = SlideState{Window: v.w, Cur: v.cur - fromCur, Prev: max(0, v.prev-(r.Refund-fromCur))}
	}
	_, d := Slide(next, afterRefund(r), now)
	if d.Write = next != s && !r.Peek; !d.Write {
		return s, d
	}
	return next, d
}

// refundLog takes n off the costs of the newest entries still in the window, newest
// first, dropping each entry whose cost reaches 0. Like Log, when it writes it keeps
// only the entries in the window, built in entries' backing array; otherwise entries
// comes back as it came.
func refundLog(entries []LogEntry, r Request, now int64) ([]LogEntry, Decision) {
	first := 0
	for first < len(entries) && entries[first].TS <= now-r.Window {
		first++
	}
	live := entries[first:]
	kept, part := len(live), int64(0) // entries kept, and the cost taken off the last one kept
	var sum int64
	for _, e := range live {
		sum += e.Cost
	}
	for left := r.Refund; kept > 0 && left > 0; {
		if c := live[kept-1].Cost; c <= left {
			left, sum, kept = left-c, sum-c, kept-1
		} else {
			part, sum, left = left, sum-left, 0
		}
	}
	// The reply of Log to a PEEK of cost 0 on what is left.
	d := Decision{Allowed: true, Limit: r.Limit, Remaining: max(0, r.Limit-sum), FreshAt: now}
	if kept > 0 {
		d.FreshAt = live[kept-1].TS + r.Window
		d.ResetAfter = d.FreshAt - now
	}
	if len(live) == 0 || r.Peek {
		return entries, d
	}
	d.Write = true
	entries = entries[:copy(entries, live[:kept])]
	if part > 0 {
		entries[kept-1].Cost -= part
	}
	return entries, d
}

// refundToken puts n tokens back, up to the capacity:
// tokens' = min(capacity, refill(now) + n), in float64, stored at now.
func refundToken(s TokenState, r Request, now int64) (TokenState, Decision) {
	b := newBucket(r)
	tokens := b.refill(s, now)
	if tokens >= b.capacity {
		_, d := Token(s, afterRefund(r), now)
		return s, d
	}
	next := TokenState{Tokens: min(b.capacity, tokens+float64(r.Refund)), TS: now}
	_, d := Token(next, afterRefund(r), now)
	if d.Write = !r.Peek; !d.Write {
		return s, d
	}
	return next, d
}

// refundTat moves a GCRA or RL.LEAKY schedule back by n emission intervals, never
// before now: tat' = max(now, tat - n·T), then replies as decide (GCRA or Leaky) does
// to a PEEK of cost 0. n·T is not formed when it would pass tat - now, where it
// could overflow.
func refundTat(tat int64, r Request, now int64, decide func(int64, Request, int64) (int64, Decision)) (int64, Decision) {
	next := tat
	if t := r.interval(); tat > now {
		if r.Refund > (tat-now)/t {
			next = now
		} else {
			next = tat - r.Refund*t
		}
	}
	_, d := decide(next, afterRefund(r), now)
	if d.Write = next != tat && !r.Peek; !d.Write {
		return tat, d
	}
	return next, d
}
