package algo

import "math"

// SlideState is RL.SLIDE's state: window index w, the cost admitted in window w (Cur)
// and in window w-1 (Prev). The zero value is a fresh key.
type SlideState struct{ Window, Cur, Prev int64 }

// Slide decides one RL.SLIDE call, a sliding window counter: the previous window's
// count weighs by the part of it still inside the sliding window.
func Slide(s SlideState, r Request, now int64) (SlideState, Decision) {
	if r.Refund > 0 {
		return refundSlide(s, r, now)
	}
	if r.Slice > 0 {
		return sliced(s, r, now, Slide)
	}
	if r.Reserve > 0 {
		return reserved(s, r, now, Slide)
	}
	limit, cost, window := r.Limit, r.Cost, r.Window
	v := viewSlide(s, window, now)
	allowed := cost == 0 || v.passes(cost, limit)

	after := v.cur
	if allowed {
		after += cost
	}
	// est' = cur' + part; remaining = max(0, floor(L - est')).
	estAfter := float64(after) + v.part
	d := Decision{
		Allowed:   allowed,
		Limit:     limit,
		Remaining: int64(max(0, math.Floor(float64(limit)-estAfter))),
		FreshAt:   now,
	}

	switch {
	case allowed:
	case cost > limit:
		d.RetryAfter = -1
	default:
		// The contract's t, taken relative to now: in absolute µs (1.7e15) a float
		// keeps only quarters of a µs, and that rounding alone made t up to 1 ms early.
		// (w+1)·W - now and (w+2)·W - now are exact integers. ms(x) is then settled
		// against passes, the test itself (see settleRetry).
		var x float64
		if v.cur+cost <= limit {
			// Passes in this window once prev's weight has fallen enough (prev > 0 here,
			// since est + c > L >= cur + c): x = (W - elapsed) - (W * (L - cur - c)) / prev,
			// in this order: a = W * (L - cur - c); b = a / prev; x = (W - elapsed) - b.
			x = float64(window-v.elapsed) - float64(window)*float64(limit-v.cur-cost)/float64(v.prev)
		} else {
			// Passes in the next window, where prev := cur and cur := 0 (cur > L - c >= 0):
			// x = (2W - elapsed) - (W * (L - c)) / cur, in the same order.
			x = float64(2*window-v.elapsed) - float64(window)*float64(limit-cost)/float64(v.cur)
		}
		d.RetryAfter = settleRetry(msCeil(x), now,
			func(t int64) bool { return viewSlide(s, window, t).passes(cost, limit) })
	}

	switch {
	case after > 0:
		d.FreshAt = (v.w + 2) * window
	case v.prev > 0:
		d.FreshAt = (v.w + 1) * window
	}
	d.ResetAfter = d.FreshAt - now

	if allowed && cost > 0 && !r.Peek {
		d.Write = true
		return SlideState{Window: v.w, Cur: after, Prev: v.prev}, d
	}
	return s, d
}

// slideView is a SlideState as seen at one moment: rolled to the current window, with
// the previous window's weighted count.
type slideView struct {
	w, elapsed int64   // current window index, and µs since it began
	cur, prev  int64   // counts of windows w and w-1
	part       float64 // prev * ((W - elapsed) / W)
}

// viewSlide rolls s forward to now: stored w = current w keeps both counts; stored
// w = current w-1 makes prev := cur, cur := 0; anything else is fresh.
func viewSlide(s SlideState, window, now int64) slideView {
	v := slideView{w: now / window}
	v.elapsed = now - v.w*window
	switch s.Window {
	case v.w:
		v.cur, v.prev = s.Cur, s.Prev
	case v.w - 1:
		v.prev = s.Cur
	}
	// In float64, in this order: weight = (W - elapsed) / W; part = prev * weight.
	weight := (float64(window) - float64(v.elapsed)) / float64(window)
	v.part = float64(float64(v.prev) * weight)
	return v
}

// passes is the contract's test est + c <= L, with est = cur + part, in this order.
// A cost above the limit fails it too, as est >= 0.
func (v slideView) passes(cost, limit int64) bool {
	est := float64(v.cur) + v.part
	return est+float64(cost) <= float64(limit)
}
