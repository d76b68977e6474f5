// Package ttl is a hierarchical timing wheel for millions of expiring ids.
//
// A Wheel tracks one deadline (µs since the Unix epoch) per uint32 id and reports the
// ids whose deadline has passed. It is built for the store's shards: ids number groups
// of records (each due at its earliest record's deadline), and the wheel keeps its links and deadlines in parallel slices indexed by
// id ("index arrays"), so there is no goroutine, timer, heap object or map entry per
// id. The arrays are mapped outside the Go heap (internal/offheap): the garbage
// collector never sees them, and Release gives them back.
// Schedule, Cancel and Deadline are O(1). A Wheel does no locking: its owner does.
//
// Parallel slices beat one slice of 16-byte {next, prev, deadline} records here, though
// a record puts an id in one cache line: walking a bucket follows next alone, and the
// 4-byte next array of 1M ids stays in cache where 16 MB of records do not: Advance,
// Reschedule and Schedule were all faster so, in interleaved runs at 1M ids.
//
// How often to Advance is the owner's choice, and the cheapest expiry is the least
// often that memory allows: an id fires once an Advance, however many of its owner's
// records came due since the last, and its owner's work on firing (the store walks
// the 16 records an id stands for) is then shared by all of them. The store advanced
// every millisecond until issue 41, and a group of keys due at different
// milliseconds fired once a key: 7 records walked a key removed under churn
// (store's BenchmarkChurn), expiry 35-42% of the store's CPU; advanced every 10-16 ms
// it is 17-21%, 2 records walked a key. Advance itself is a small part of either: its
// buckets and links cost 1-2% of the store's CPU in those profiles.
//
// Layout: 6 levels of 64 buckets. A level-0 bucket spans one tick of 1 ms, a level-k
// bucket 64^k ticks, so the wheel reaches 64^6 ms ≈ 2.2 years ahead; a deadline further
// out waits in the last bucket of the top level and is placed again when that bucket
// comes due. Each bucket is a doubly linked list threaded through the index arrays.
package ttl

import (
	"fmt"

	"github.com/rlserver/rlserver/internal/offheap"
)

const (
	slotBits   = 6
	slots      = 1 << slotBits // buckets per level
	levels     = 6             // 64^6 ms ≈ 2.2 years
	tickMicros = 1000          // level-0 resolution: 1 ms

	// headMark in prev[id] says id is the first of its bucket's list; the low bits
	// are then the bucket's number. prev[id] == 0 says id is not scheduled.
	headMark = 1 << 31

	// BytesPerID is what the index arrays cost per id: next and prev links (uint32)
	// and the deadline (int64).
	BytesPerID = 4 + 4 + 8
)

// Wheel is a hierarchical timing wheel. The zero Wheel is ready to use; it is
// positioned at the epoch, and its first Advance moves it to the present in one
// bounded sweep. A Wheel must not be copied after first use.
//
// Ids are in [1, 2^31): 0 is the nil link.
type Wheel struct {
	// pos is the wheel's tick (ms since the epoch): every id due before it has fired.
	// An id whose tick is pos or earlier waits in level 0's bucket for pos, which every
	// Advance looks at, so it fires at its exact deadline and never before.
	pos   int64
	heads [levels * slots]uint32 // first id of each bucket's list, 0 if empty

	next     []uint32 // next id in the same bucket, 0 at the end
	prev     []uint32 // previous id, headMark|bucket for a list's first id, 0 if unscheduled
	deadline []int64  // µs; meaningful while prev[id] != 0
}

// Schedule sets id's deadline, scheduling it or moving it if it already was.
//
// A later deadline for a scheduled id only rewrites the deadline: the id stays in its
// bucket, which comes due no later than the new deadline, and is placed again from
// there. A key that is hit on every request thus costs one store, not an unlink and a
// link, per request.
func (w *Wheel) Schedule(id uint32, deadline int64) {
	if id == 0 || id >= headMark {
		panic(fmt.Sprintf("ttl: id %d out of range [1, 2^31)", id))
	}
	if int(id) >= len(w.next) {
		w.grow(int(id) + 1)
	}
	if w.prev[id] != 0 {
		if deadline >= w.deadline[id] {
			w.deadline[id] = deadline
			return
		}
		w.unlink(id)
	}
	w.deadline[id] = deadline
	w.link(id)
}

// Cancel unschedules id; it does nothing if id is not scheduled.
func (w *Wheel) Cancel(id uint32) {
	if int(id) < len(w.prev) && w.prev[id] != 0 {
		w.unlink(id)
	}
}

// Deadline returns id's deadline, and false if id is not scheduled.
func (w *Wheel) Deadline(id uint32) (int64, bool) {
	if int(id) >= len(w.prev) || w.prev[id] == 0 {
		return 0, false
	}
	return w.deadline[id], true
}

// Advance moves the wheel to now and calls fn for every id whose deadline is at or
// before now, unscheduling it first. fn must not Schedule or Cancel other ids.
//
// The work is bounded by the buckets that came due, at most 64 per level however far
// the clock jumped (a machine back from hours of sleep costs one sweep, not one step
// per elapsed tick), plus the ids in them: each is fired or placed again, lower down.
// If now is behind the wheel (a clock set back), only ids scheduled in the past can be
// due; they wait in the bucket every Advance looks at.
func (w *Wheel) Advance(now int64, fn func(id uint32)) {
	target := now / tickMicros
	if target < w.pos {
		w.sweep(0, w.pos, 1, now, fn)
		return
	}
	old := w.pos
	w.pos = target
	// Level 0 is due from old through target; a higher level from the bucket after
	// old's (old's own is always empty there) through target's. Levels go upward so that
	// ids placed again land in levels already swept this call.
	for k := range levels {
		shift := uint(k * slotBits)
		from, n := old>>shift+1, target>>shift-old>>shift
		if k == 0 {
			from, n = old, target-old+1
		}
		if n <= 0 {
			return // nothing due at this level, so nothing above either
		}
		w.sweep(k, from, min(n, slots), now, fn)
	}
}

// Bytes is the memory held by the index arrays and the bucket heads.
func (w *Wheel) Bytes() int64 {
	return int64(cap(w.next))*4 + int64(cap(w.prev))*4 + int64(cap(w.deadline))*8 + int64(len(w.heads))*4
}

// sweep empties n buckets of level k starting at bucket number from, then fires each
// of their ids that is due and places the others again. All n lists are detached
// before any id is placed, so an id placed again into one of them is not seen twice.
func (w *Wheel) sweep(k int, from, n int64, now int64, fn func(id uint32)) {
	var lists [slots]uint32
	for i := range n {
		b := k*slots + int((from+i)&(slots-1))
		lists[i] = w.heads[b]
		w.heads[b] = 0
	}
	for _, id := range lists[:n] {
		for id != 0 {
			next := w.next[id]
			w.next[id], w.prev[id] = 0, 0
			if w.deadline[id] <= now {
				fn(id)
			} else {
				w.link(id)
			}
			id = next
		}
	}
}

// link puts an unlinked id at the head of the bucket for its deadline: the lowest
// level whose 64 buckets ahead of the wheel reach the deadline's tick.
func (w *Wheel) link(id uint32) {
	b := w.bucketFor(w.deadline[id])
	head := w.heads[b]
	w.next[id] = head
	w.prev[id] = headMark | uint32(b)
	if head != 0 {
		w.prev[head] = id
	}
	w.heads[b] = id
}

// bucketFor returns the bucket link puts a deadline in.
func (w *Wheel) bucketFor(deadline int64) int {
	tick := deadline / tickMicros
	b := int(w.pos & (slots - 1)) // level 0's current bucket: due at the next Advance
	if tick > w.pos {
		for k := range levels {
			shift := uint(k * slotBits)
			if tick>>shift-w.pos>>shift < slots {
				return k*slots + int(tick>>shift&(slots-1))
			}
			if k == levels-1 { // beyond the wheel: wait in its farthest bucket
				b = k*slots + int((w.pos>>shift+slots-1)&(slots-1))
			}
		}
	}
	return b
}

// unlink removes a scheduled id from its bucket's list.
func (w *Wheel) unlink(id uint32) {
	next, prev := w.next[id], w.prev[id]
	if prev&headMark != 0 {
		w.heads[prev&^headMark] = next
	} else {
		w.next[prev] = next
	}
	if next != 0 {
		w.prev[next] = prev
	}
	w.next[id], w.prev[id] = 0, 0
}

// Release unschedules every id and unmaps the index arrays: the wheel is a zero
// Wheel again. A Wheel that is dropped without Release keeps its arrays mapped.
func (w *Wheel) Release() {
	offheap.Free(w.next)
	offheap.Free(w.prev)
	offheap.Free(w.deadline)
	*w = Wheel{}
}

// grow makes the index arrays at least n long. They grow by an eighth, to exactly
// that capacity: append's own rounding had left 1M ids spread over 64 wheels with 48%
// slack (23.7 MB for 16 MB); an eighth leaves 6% on average, for 8 copies of an id
// over its life, amortized O(1). The arrays are mapped (offheap.Grow): the old ones are
// unmapped once copied, and the capacity past the highest id scheduled is not resident.
func (w *Wheel) grow(n int) {
	n = max(n, len(w.next)+len(w.next)/8, 64)
	w.next = resize(w.next, n)
	w.prev = resize(w.prev, n)
	w.deadline = resize(w.deadline, n)
}

func resize[T uint32 | int64](s []T, n int) []T {
	if n > cap(s) {
		s = offheap.Grow(s, n)
	}
	return s[:n]
}
