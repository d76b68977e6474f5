package client

import (
	"slices"
	"sync"
	"time"
)

// sliceAhead is the traffic a slice is sized for: about this much of its key's own
// recent use, so that a slice asked when half of the last one is left arrives long
// before the rest is spent (a round trip is well under 50 ms), and a key holds about
// this much of its limit at a time, no more.
const sliceAhead = 100 * time.Millisecond

// minGiveBackMargin is the least time a slice must have left for its units to be
// given back. A Fixed or Slide refund counts against the window the server is in when
// it arrives: one arriving after the slice's window turned would give units back to
// the next window, which never spent them. Twice the key's last round trip, and at
// least this, keeps the refund within the slice's window.
const minGiveBackMargin = 5 * time.Millisecond

// held is units of one slice, usable until until.
type held struct {
	units int64
	until time.Time
}

// sliceKey is what a Slicer holds of one key under one Limit: the slices taken and
// what sizes the next one. Its methods are the whole decision, time passed in, so
// that tests drive them without sleeping; all its fields are guarded by mu.
type sliceKey struct {
	mu   sync.Mutex
	held []held // the unspent slices, soonest until first

	// What the server said at its last reply.
	limit       int64     // Result.Limit
	remaining   int64     // Remaining after that slice; -1 before any reply
	resetAt     time.Time // when the key is fresh again
	deniedUntil time.Time // nothing granted: no unit fits before then
	rtt         time.Duration

	// The key's own use: units admitted in the 100 ms bucket from bucketAt, and in the
	// one before it.
	bucketAt  time.Time
	cur, prev int64
	lastUse   time.Time

	asked int64  // the size of the last slice asked
	fetch *fetch // the slice asked and not answered yet; nil if none
	down  bool   // the last slice asked got no answer (ErrUnavailable)
	gone  bool   // removed from its Slicer (idle, or closed): look it up again

	counts *sliceCounts // its family's counters in its Slicer; set before shared, read without mu
}

// fetch is a slice asked of the server; done is closed when err is set.
type fetch struct {
	done chan struct{}
	err  error
}

// newSliceKey is a key nothing is known of yet.
func newSliceKey() *sliceKey { return &sliceKey{remaining: -1} }

// holding is how many units k holds, valid or not.
func (k *sliceKey) holding() (n int64) {
	for _, h := range k.held {
		n += h.units
	}
	return n
}

// expire drops the slices no longer usable at now and returns their units: a unit is
// never used at or past its slice's until.
func (k *sliceKey) expire(now time.Time) (dropped int64) {
	i := 0
	for i < len(k.held) && !now.Before(k.held[i].until) {
		dropped += k.held[i].units
		i++
	}
	k.held = k.held[i:]
	return dropped
}

// take spends n held units valid at now, the soonest to expire first, and reports
// whether it could, and the Until of the first slice spent from; it spends nothing if
// fewer are held.
func (k *sliceKey) take(n int64, now time.Time) (until time.Time, ok bool) {
	if k.holding() < n {
		return time.Time{}, false
	}
	until = k.held[0].until
	for left := n; left > 0; {
		u := min(left, k.held[0].units)
		k.held[0].units -= u
		left -= u
		if k.held[0].units == 0 {
			k.held = k.held[1:]
		}
	}
	k.use(n, now)
	return until, true
}

// untake puts back n units take spent at now from slices whose first Until was until,
// for a call that did not pass after all, and reports whether it could: not once
// until has passed, nor on a key its Slicer forgot. Every slice usable at now was
// counted in the window now is in (a Fixed or Slide slice ends with its window), so
// the units may go back under the first Until.
func (k *sliceKey) untake(n int64, until, now time.Time) bool {
	if k.gone || !now.Before(until) {
		return false
	}
	k.cur = max(0, k.cur-n)
	k.hold(held{units: n, until: until})
	return true
}

// use counts n units admitted at now in the key's 100 ms buckets.
func (k *sliceKey) use(n int64, now time.Time) {
	switch since := now.Sub(k.bucketAt); {
	case since >= 2*sliceAhead:
		k.bucketAt, k.prev, k.cur = now, 0, 0
	case since >= sliceAhead:
		k.bucketAt, k.prev, k.cur = k.bucketAt.Add(sliceAhead), k.cur, 0
	}
	k.cur += n
	k.lastUse = now
}

// recent estimates the units the key used in the last 100 ms at now: the current
// bucket, and the previous one weighted by its part still inside those 100 ms (a
// sliding window's estimate).
func (k *sliceKey) recent(now time.Time) int64 {
	since := now.Sub(k.bucketAt)
	switch {
	case since >= 2*sliceAhead:
		return 0
	case since >= sliceAhead:
		return k.cur * (2*sliceAhead - since).Nanoseconds() / sliceAhead.Nanoseconds()
	}
	return k.cur + k.prev*(sliceAhead-since).Nanoseconds()/sliceAhead.Nanoseconds()
}

// size is the slice to ask at now by a call needing need more units than held, under
// a limit of limit units shared by replicas processes: about 100 ms of the key's
// traffic, at most 1/(2·replicas) of what the server had left (of the limit before
// any reply), so that each replica holds at most about its share counting the slice
// it asks ahead, and slices shrink to single units as the key nears its limit, where
// the tail is then decided unit by unit at the server; never below need, nor above
// the limit.
func (k *sliceKey) size(now time.Time, need, limit, replicas int64) int64 {
	share := limit
	if k.remaining >= 0 {
		share = min(share, k.remaining)
	}
	n := min(k.recent(now), max(1, share/(2*replicas)))
	return min(max(n, need, 1), limit)
}

// ahead is the size of the slice to ask ahead at now, or 0: when none is out, the
// server refuses none now, and at most half of the last slice asked is held.
func (k *sliceKey) ahead(now time.Time, limit, replicas int64) int64 {
	if k.fetch != nil || now.Before(k.deniedUntil) || 2*k.holding() > k.asked {
		return 0
	}
	return k.size(now, 0, limit, replicas)
}

// ask records a slice of n units asked; its answer goes to got.
func (k *sliceKey) ask(n int64) *fetch {
	k.asked = n
	k.fetch = &fetch{done: make(chan struct{})}
	return k.fetch
}

// got records the answer s to the slice asked, received at now: its units held until
// its Until, in order, or the time nothing fits until.
func (k *sliceKey) got(s Slice, now time.Time) {
	k.limit, k.remaining = int64(s.Limit), int64(s.Remaining)
	sent := s.Until.Add(-s.Valid)
	k.rtt = now.Sub(sent)
	k.resetAt = now.Add(s.ResetAfter)
	if s.Granted == 0 {
		if s.RetryAfter != Never {
			k.deniedUntil = sent.Add(s.RetryAfter)
		}
		return
	}
	k.hold(held{units: int64(s.Granted), until: s.Until})
}

// hold adds h to the held slices, in order of their Until.
func (k *sliceKey) hold(h held) {
	i := len(k.held)
	for i > 0 && k.held[i-1].until.After(h.until) {
		i--
	}
	k.held = slices.Insert(k.held, i, h)
}

// giveBack removes, at now, the held units that may still go back to the server (the
// slices with more than the margin left before their until) and returns them.
func (k *sliceKey) giveBack(now time.Time) int64 {
	margin := max(2*k.rtt, minGiveBackMargin)
	var n int64
	kept := k.held[:0]
	for _, h := range k.held {
		if h.until.Sub(now) > margin {
			n += h.units
		} else {
			kept = append(kept, h)
		}
	}
	k.held = kept
	return n
}

// result is the Result of a call decided in-process at now: allowed from the slice,
// or refused until the server said one unit fits.
func (k *sliceKey) result(allowed bool, now time.Time) Result {
	res := Result{Allowed: allowed, Limit: int(k.limit), Remaining: int(k.holding() + max(0, k.remaining)),
		ResetAfter: ceilMillis(k.resetAt.Sub(now))}
	if !allowed {
		res.RetryAfter = max(ceilMillis(k.deniedUntil.Sub(now)), time.Millisecond)
	}
	return res
}

// ceilMillis is d rounded up to the ms, at least 0.
func ceilMillis(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
