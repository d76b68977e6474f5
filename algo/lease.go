package algo

import (
	"bytes"
)

// MaxLeaseID is the most bytes of a lease id given with ID: an id is stored with every
// lease.
const MaxLeaseID = 128

// Lease is one lease of an RL.ACQUIRE key. A key's leases are kept sorted by Deadline,
// soonest first.
type Lease struct {
	Deadline int64  // µs: the lease is live while now < Deadline
	ID       []byte // 1 to 128 bytes, unique among the key's live leases
}

// LeaseRequest is one RL.ACQUIRE, as resp parses it.
type LeaseRequest struct {
	Limit    int64  // the most live leases the key may hold; below 1 nothing is ever acquired
	Duration int64  // µs: lease_ms·1000; a lease acquired at now lives until now + Duration
	ID       []byte // the ID option's id; nil: the store generates one
	// Reserve n keeps n places free for callers without it: a new lease is taken only
	// if fewer than Limit − n would then be live. 0 to Limit.
	Reserve int64
}

// LeaseDecision is the answer to one RL.ACQUIRE: its wire fields, and FreshAt.
type LeaseDecision struct {
	Acquired   bool   // field 1
	Limit      int64  // field 2
	Remaining  int64  // field 3: limit − reserve minus the live leases after the call, at least 0
	RetryAfter int64  // field 4 in µs: 0 when acquired, else until a place is free; -1: never
	ID         []byte // field 5: the lease's id when acquired, nil when not
	// FreshAt is the latest live lease's deadline after the call, when the key goes;
	// <= now if no lease is live.
	FreshAt int64
}

// Acquire decides one RL.ACQUIRE on a key's leases, sorted by deadline; newID is the
// id of a new lease when r.ID is nil. Leases whose deadline is at or before now have
// ended and count for nothing.
//
// A live lease with id r.ID is extended to now + r.Duration, taking no second place
// (an idempotent retry). Otherwise a new lease is taken if fewer than r.Limit − r.Reserve
// are live. Otherwise nothing changes, and RetryAfter is the time until enough leases
// end that fewer than r.Limit − r.Reserve are live: the earliest deadline, or a later
// one if the limit was lowered below the live count; −1 if r.Reserve leaves no place.
//
// When acquired, the result is the live leases with this one, still sorted, built in
// place in leases' backing array (the store passes a scratch buffer); the lease's ID
// aliases r.ID or newID. When not, leases is returned as it came.
func Acquire(leases []Lease, r LeaseRequest, newID []byte, now int64) ([]Lease, LeaseDecision) {
	live := liveLeases(leases, now)
	d := LeaseDecision{Limit: r.Limit}
	deadline := leaseEnd(now, r.Duration)
	places := r.Limit - r.Reserve // the places this call may take
	switch i := indexOfLease(live, r.ID); {
	case r.Limit < 1, places < 1 && i < 0:
		d.RetryAfter = -1 // never, as for a cost above the limit
		d.FreshAt = lastDeadline(live, now)
		return leases, d
	case i >= 0:
		d.Acquired, d.ID = true, live[i].ID
		leases = moveLease(dropEnded(leases, live), i, deadline)
	case int64(len(live)) < places:
		id := r.ID
		if id == nil {
			id = newID
		}
		d.Acquired, d.ID = true, id
		leases = insertLease(dropEnded(leases, live), Lease{Deadline: deadline, ID: id})
	default:
		// Fewer than places are live once live[n-places] has ended.
		d.RetryAfter = live[int64(len(live))-places].Deadline - now
		d.FreshAt = lastDeadline(live, now)
		return leases, d
	}
	d.Remaining = max(0, places-int64(len(leases)))
	d.FreshAt = leases[len(leases)-1].Deadline
	return leases, d
}

// Release removes the live lease with id and reports whether there was one. When it
// removes, the result is the remaining live leases, built in place; when not, leases
// is returned as it came.
func Release(leases []Lease, id []byte, now int64) ([]Lease, bool) {
	live := liveLeases(leases, now)
	i := indexOfLease(live, id)
	if i < 0 {
		return leases, false
	}
	leases = dropEnded(leases, live)
	return append(leases[:i], leases[i+1:]...), true
}

// Renew sets the deadline of the live lease with id to now + duration and reports
// whether there was one; an ended lease is not revived. When it renews, the result is
// the live leases, sorted, built in place; when not, leases is returned as it came.
func Renew(leases []Lease, id []byte, duration, now int64) ([]Lease, bool) {
	live := liveLeases(leases, now)
	i := indexOfLease(live, id)
	if i < 0 {
		return leases, false
	}
	return moveLease(dropEnded(leases, live), i, leaseEnd(now, duration)), true
}

// leaseEnd is the deadline of a lease taken or renewed at now: now + duration, capped
// at 2^53 µs (the year 2255), where Lua's sorted-set scores, doubles, stop being exact;
// the clock itself stops at 2^53 - 1, so the lease still lives. Lua: math.min(now +
// duration, 2^53).
func leaseEnd(now, duration int64) int64 {
	return min(now+duration, maxDuration)
}

// liveLeases returns the leases whose deadline is after now: a suffix, as they are sorted.
func liveLeases(leases []Lease, now int64) []Lease {
	first := 0
	for first < len(leases) && leases[first].Deadline <= now {
		first++
	}
	return leases[first:]
}

// lastDeadline returns the latest deadline of live, sorted leases, or now if none.
func lastDeadline(live []Lease, now int64) int64 {
	if len(live) == 0 {
		return now
	}
	return live[len(live)-1].Deadline
}

// dropEnded moves live, a suffix of leases, to the front of leases' backing array.
func dropEnded(leases, live []Lease) []Lease {
	return leases[:copy(leases, live)]
}

// indexOfLease returns the index of the lease with id, or -1; a nil id is none.
func indexOfLease(leases []Lease, id []byte) int {
	if id == nil {
		return -1
	}
	for i, l := range leases {
		if bytes.Equal(l.ID, id) {
			return i
		}
	}
	return -1
}

// moveLease sets lease i's deadline and moves it to its sorted place.
func moveLease(leases []Lease, i int, deadline int64) []Lease {
	l := leases[i]
	l.Deadline = deadline
	leases = append(leases[:i], leases[i+1:]...)
	return insertLease(leases, l)
}

// insertLease inserts l after the leases whose deadline is at or before its own.
func insertLease(leases []Lease, l Lease) []Lease {
	j := len(leases)
	for j > 0 && leases[j-1].Deadline > l.Deadline {
		j--
	}
	leases = append(leases, Lease{})
	copy(leases[j+1:], leases[j:])
	leases[j] = l
	return leases
}
