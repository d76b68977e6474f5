package algo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// leaseStep is one call on a lease set: at µs after base, a command and its answer.
// ACQUIRE answers "acquired limit remaining retry_after id" (id "-" when none; a
// generated one is "n" and the step's index), RELEASE and RENEW "1" or "0".
type leaseStep struct {
	at   int64
	cmd  string
	want string
}

// runLeaseSteps plays steps on one lease set and checks, after each, that the set is
// sorted, live at the step's time and without two leases of one id.
func runLeaseSteps(t *testing.T, steps []leaseStep) {
	t.Helper()
	var set []Lease
	for i, s := range steps {
		now := base + s.at
		args := split(s.cmd)
		var got string
		switch cmd := string(args[0]); cmd {
		case "ACQUIRE":
			r := leaseRequest(t, args[1:])
			var d LeaseDecision
			set, d = Acquire(set, r, []byte(fmt.Sprint("n", i)), now)
			id := "-"
			if d.ID != nil {
				id = string(d.ID)
			}
			got = fmt.Sprintf("%d %d %d %d %s", b2i(d.Acquired), d.Limit, d.Remaining, Millis(d.RetryAfter), id)
			if want := lastDeadline(liveLeases(set, now), now); d.FreshAt != want {
				t.Errorf("step %d: FreshAt %d, want %d", i, d.FreshAt, want)
			}
		case "RELEASE", "RENEW":
			var ok bool
			if cmd == "RELEASE" {
				set, ok = Release(set, args[1], now)
			} else {
				set, ok = Renew(set, args[1], ms(atoi(t, args[2])), now)
			}
			got = fmt.Sprint(b2i(ok))
		default:
			t.Fatalf("step %d: unknown command %q", i, cmd)
		}
		if got != s.want {
			t.Errorf("step %d: %s at +%dµs = %q, want %q", i, s.cmd, s.at, got, s.want)
		}
		checkLeases(t, set, now)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkLeases fails unless set is sorted by deadline with distinct ids. Ended leases
// may remain in a set a refused call returned as it came.
func checkLeases(t *testing.T, set []Lease, now int64) {
	t.Helper()
	if !slices.IsSortedFunc(set, func(a, b Lease) int { return int(a.Deadline - b.Deadline) }) {
		t.Fatalf("lease set not sorted: %v", set)
	}
	live := liveLeases(set, now)
	for i := range live {
		for j := range i {
			if bytes.Equal(live[i].ID, live[j].ID) {
				t.Fatalf("two live leases of id %q", live[i].ID)
			}
		}
	}
}

func TestLease(t *testing.T) {
	tests := []struct {
		name  string
		steps []leaseStep
	}{
		{"limit, retry_after to the earliest end, places free at the deadline", []leaseStep{
			{0, "ACQUIRE 2 1000", "1 2 1 0 n0"},
			{ms(100), "ACQUIRE 2 1000", "1 2 0 0 n1"},
			{ms(200), "ACQUIRE 2 1000", "0 2 0 800 -"},
			{ms(1000) - 1, "ACQUIRE 2 1000", "0 2 0 1 -"},     // 1 µs left rounds up to a ms
			{ms(1000), "ACQUIRE 2 1000", "1 2 0 0 n4"},        // n0 ended at its deadline
			{ms(1100), "ACQUIRE 2 1000 ID x", "1 2 0 0 x"},    // and n1 at its own
			{ms(1100), "ACQUIRE 2 1000 ID y", "0 2 0 900 -"},  // n4 ends first
			{ms(1100), "ACQUIRE 5 1000 ID y", "1 5 2 0 y"},    // a higher limit makes room
			{ms(3000), "ACQUIRE 5 1000", "1 5 4 0 n8"},        // all others ended
			{ms(3000), "ACQUIRE 5 1 ID z", "1 5 3 0 z"},       // shortest lease
			{ms(3001), "ACQUIRE 5 1000 ID z", "1 5 3 0 z"},    // z ended: a new place
			{ms(3001), "ACQUIRE 1 1000 ID w", "0 1 0 1000 -"}, // limit 1 with two live: the later end
			{ms(3001), "ACQUIRE 1 1000 ID z", "1 1 0 0 z"},    // an idempotent retry even over the limit
			{ms(3500), "ACQUIRE 1 1000 ID w", "0 1 0 501 -"},  // both must end: z at 4001
		}},
		{"release and renew", []leaseStep{
			{0, "ACQUIRE 2 1000 ID a", "1 2 1 0 a"},
			{0, "ACQUIRE 2 2000 ID b", "1 2 0 0 b"},
			{ms(10), "RENEW a 5000", "1"},              // a now ends after b
			{ms(20), "ACQUIRE 2 1000", "0 2 0 1980 -"}, // b ends first now
			{ms(30), "RELEASE b", "1"},
			{ms(30), "RELEASE b", "0"},
			{ms(30), "RELEASE nope", "0"},
			{ms(30), "RENEW nope 1000", "0"},
			{ms(40), "ACQUIRE 2 1000", "1 2 0 0 n8"},
			{ms(5010), "RENEW a 1000", "0"}, // a ended at 5010: not revived
			{ms(5010), "RELEASE a", "0"},
			{ms(5010), "ACQUIRE 1 1000 ID a", "1 1 0 0 a"},
			{ms(5500), "ACQUIRE 1 1000 ID a", "1 1 0 0 a"}, // the retry extends to 6500
			{ms(6499), "ACQUIRE 1 1000", "0 1 0 1 -"},
			{ms(6499), "RELEASE a", "1"},
			{ms(6499), "ACQUIRE 1 1000", "1 1 0 0 n15"},
		}},
		// The clock stops at 2^53-1 µs; a deadline stops at 2^53, where Lua's double
		// scores are still exact.
		{"deadlines capped at 2^53", []leaseStep{
			{1<<53 - 1 - base, "ACQUIRE 2 5 ID a", "1 2 1 0 a"},
			{1<<53 - 1 - base, "ACQUIRE 1 5 ID b", "0 1 0 1 -"},
			{1<<53 - 1 - base, "RENEW a 1000", "1"},
			{1<<53 - 1 - base, "ACQUIRE 1 5 ID b", "0 1 0 1 -"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runLeaseSteps(t, tt.steps) })
	}
}

// TestLeaseLimitZero: a limit below 1, which rlcmd.ParseAcquire never gives, acquires
// nothing and says never (-1), rather than indexing past the set.
func TestLeaseLimitZero(t *testing.T) {
	set, _ := Acquire(nil, LeaseRequest{Limit: 1, Duration: ms(1000)}, []byte("a"), base)
	for _, r := range []LeaseRequest{{Limit: 0, Duration: ms(1000)}, {Limit: -1, Duration: ms(1000), ID: []byte("a")}} {
		got, d := Acquire(set, r, []byte("b"), base)
		if d.Acquired || d.RetryAfter != -1 || d.FreshAt != base+ms(1000) || len(got) != 1 {
			t.Errorf("limit %d: %+v, %d leases", r.Limit, d, len(got))
		}
	}
}

// TestLeaseProperty plays random calls on one lease set against a model (id →
// deadline) and checks after each: never more than limit live leases, remaining and
// FreshAt as the model says, and retry_after exact: acquiring at now + retry_after
// succeeds, and 1 ms earlier fails.
func TestLeaseProperty(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 8))
		limit := 1 + rng.Int64N(5)
		model := map[string]int64{}
		var set []Lease
		now := base
		live := func(at int64) []string {
			var ids []string
			for id, d := range model {
				if d > at {
					ids = append(ids, id)
				}
			}
			return ids
		}
		for i := range 300 {
			now += rng.Int64N(ms(400))
			id := []byte(fmt.Sprint("i", rng.IntN(8)))
			dur := ms(1 + rng.Int64N(2000))
			switch rng.IntN(4) {
			case 0, 1:
				r := LeaseRequest{Limit: limit, Duration: dur}
				if rng.IntN(2) == 0 {
					r.ID = id
				}
				if rng.IntN(3) == 0 { // RESERVE: places kept for calls without it
					r.Reserve = rng.Int64N(limit + 1)
				}
				places := limit - r.Reserve
				newID := []byte(fmt.Sprint("g", i))
				before := slices.Clone(set)
				var d LeaseDecision
				set, d = Acquire(set, r, newID, now)
				n := len(live(now))
				renewing := r.ID != nil && model[string(r.ID)] > now
				if d.Acquired != (renewing || int64(n) < places) {
					t.Fatalf("seed %d call %d: acquired %v with %d live of %d", seed, i, d.Acquired, n, limit)
				}
				if d.Acquired {
					model[string(d.ID)] = now + dur
				} else {
					if !slices.EqualFunc(set, before, func(a, b Lease) bool { return a.Deadline == b.Deadline && bytes.Equal(a.ID, b.ID) }) {
						t.Fatalf("seed %d call %d: a refused call changed the set", seed, i)
					}
					// Exact: the same request 1 ms before retry_after fails, at it succeeds;
					// -1 exactly when the reserve leaves no place.
					retry := Millis(d.RetryAfter)
					if (retry < 0) != (places < 1) {
						t.Fatalf("seed %d call %d: retry_after %d with %d places", seed, i, retry, places)
					}
					if retry < 0 {
						break
					}
					at := now + retry*1000
					if _, early := Acquire(slices.Clone(set), r, newID, at-1000); early.Acquired {
						t.Fatalf("seed %d call %d: acquired 1 ms before retry_after %d", seed, i, retry)
					}
					if _, late := Acquire(slices.Clone(set), r, newID, at); !late.Acquired {
						t.Fatalf("seed %d call %d: not acquired at retry_after %d", seed, i, retry)
					}
				}
				after := int64(len(live(now)))
				if after > limit && !renewing {
					t.Fatalf("seed %d call %d: %d live leases, limit %d", seed, i, after, limit)
				}
				if d.Remaining != max(0, places-after) || d.FreshAt != lastDeadline(liveLeases(set, now), now) {
					t.Fatalf("seed %d call %d: remaining %d FreshAt %d, model %d live", seed, i, d.Remaining, d.FreshAt, after)
				}
			case 2:
				var ok bool
				set, ok = Release(set, id, now)
				if want := model[string(id)] > now; ok != want {
					t.Fatalf("seed %d call %d: Release = %v, want %v", seed, i, ok, want)
				}
				delete(model, string(id))
			case 3:
				var ok bool
				set, ok = Renew(set, id, dur, now)
				if want := model[string(id)] > now; ok != want {
					t.Fatalf("seed %d call %d: Renew = %v, want %v", seed, i, ok, want)
				}
				if ok {
					model[string(id)] = now + dur
				}
			}
			checkLeases(t, set, now)
			got := liveLeases(set, now)
			if len(got) != len(live(now)) {
				t.Fatalf("seed %d call %d: %d live leases, model %d", seed, i, len(got), len(live(now)))
			}
			for _, l := range got {
				if model[string(l.ID)] != l.Deadline {
					t.Fatalf("seed %d call %d: lease %q ends at %d, model %d", seed, i, l.ID, l.Deadline, model[string(l.ID)])
				}
			}
		}
	}
}

// leaseRequest builds the request of ACQUIRE's "limit lease_ms [ID id]" in a step.
func leaseRequest(t *testing.T, args [][]byte) LeaseRequest {
	t.Helper()
	r := LeaseRequest{Limit: atoi(t, args[0]), Duration: ms(atoi(t, args[1]))}
	if len(args) == 4 {
		r.ID = args[3]
	}
	return r
}

// atoi reads a step's integer argument.
func atoi(t *testing.T, b []byte) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
