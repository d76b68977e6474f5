package ttl

// Earliest returns the id due soonest, with its deadline, and false if nothing is
// scheduled; the id stays scheduled. The store evicts with it under -maxmemory.
//
// "Soonest" is to the bucket: the id comes from the bucket whose span starts first
// (ties to the lower, finer level), so it is exact to the millisecond for deadlines
// within 64 ms of the wheel's position and within the bucket's span (64^k ms at
// level k) beyond; exact order would need a heap, 8 more bytes and a log n per
// Schedule for every key, to sharpen a choice that only matters under memory
// pressure. An id left in an earlier bucket by a later Schedule (see Schedule) is
// placed again in the bucket its deadline belongs to before it can be chosen, so a
// key that is hit all the time is not mistaken for one about to expire.
//
// The cost is a look at up to 64 heads per level (384 word reads on an empty wheel)
// plus the ids placed again, each at most once per later Schedule: amortised O(1).
func (w *Wheel) Earliest() (uint32, int64, bool) {
	for {
		b := w.earliestBucket()
		if b < 0 {
			return 0, 0, false
		}
		id := w.heads[b]
		if w.bucketFor(w.deadline[id]) != b {
			w.unlink(id)
			w.link(id)
			continue
		}
		return id, w.deadline[id], true
	}
}

// BytesToSchedule is the memory Schedule(id) would allocate now: the growth of the
// index arrays if id is past their end, else 0.
func (w *Wheel) BytesToSchedule(id uint32) int64 {
	if int(id) < len(w.next) {
		return 0
	}
	n := max(int(id)+1, len(w.next)+len(w.next)/8, 64)
	if n <= cap(w.next) {
		return 0
	}
	return int64(n-cap(w.next))*4 + int64(n-cap(w.prev))*4 + int64(n-cap(w.deadline))*8
}

// earliestBucket returns the non-empty bucket whose span starts first, or -1.
func (w *Wheel) earliestBucket() int {
	best, bestStart := -1, int64(0)
	for k := range levels {
		shift := uint(k * slotBits)
		base := w.pos >> shift
		for d := range int64(slots) {
			b := k*slots + int((base+d)&(slots-1))
			if w.heads[b] == 0 {
				continue
			}
			if start := (base + d) << shift; best < 0 || start < bestStart {
				best, bestStart = b, start
			}
			break // later buckets of this level start later
		}
	}
	return best
}
