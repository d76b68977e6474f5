package client_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
)

// checkLease compares a lease's fields with want's (its ID only when want has one).
func checkLease(t *testing.T, what string, got *client.Lease, err error, want client.Lease) {
	t.Helper()
	switch {
	case err != nil || got == nil:
		t.Fatalf("%s: %v, %v", what, got, err)
	case got.Key != want.Key || got.Acquired != want.Acquired || got.Limit != want.Limit ||
		got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter || want.ID != "" && got.ID != want.ID:
		t.Fatalf("%s:\n got %+v\nwant %+v", what, *got, want)
	case got.Acquired == (got.ID == ""):
		t.Fatalf("%s: ID %q with Acquired %v", what, got.ID, got.Acquired)
	}
}

// TestLeases takes, retries, renews and releases leases on every backend on a frozen
// clock, and leaves one never released, as a crashed process would: its place comes
// back at its deadline.
func TestLeases(t *testing.T) {
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			ctx := context.Background()
			now := t0
			b.setNow(t, now)
			c := b.client
			crashed, err := c.Acquire(ctx, "jobs", 2, 10*sec)
			checkLease(t, "first", crashed, err, client.Lease{Key: "jobs", Acquired: true, Limit: 2, Remaining: 1})
			if !hex16.MatchString(crashed.ID) {
				t.Fatalf("generated id %q, want 16 hex digits", crashed.ID)
			}
			w2, err := c.AcquireID(ctx, "jobs", "w2", 2, 20*sec)
			checkLease(t, "w2", w2, err, client.Lease{Key: "jobs", ID: "w2", Acquired: true, Limit: 2})
			full, err := c.Acquire(ctx, "jobs", 2, 5*sec)
			checkLease(t, "full", full, err, client.Lease{Key: "jobs", Limit: 2, RetryAfter: 10 * sec})
			if err := full.Release(ctx); err != nil {
				t.Fatalf("Release of a lease not acquired: %v", err)
			}
			if ok, err := full.Renew(ctx, sec); ok || err != nil {
				t.Fatalf("Renew of a lease not acquired: %v, %v", ok, err)
			}
			// A retry with w2's id finds it live: the same place, no second one.
			retry, err := c.AcquireID(ctx, "jobs", "w2", 2, 20*sec)
			checkLease(t, "retry", retry, err, client.Lease{Key: "jobs", ID: "w2", Acquired: true, Limit: 2})

			now += (10 * sec).Microseconds() // the first lease's deadline: it has ended
			b.setNow(t, now)
			if ok, err := crashed.Renew(ctx, 10*sec); ok || err != nil {
				t.Fatalf("Renew of an ended lease: %v, %v; want false, not revived", ok, err)
			}
			next, err := c.Acquire(ctx, "jobs", 2, 5*sec)
			checkLease(t, "after the deadline", next, err, client.Lease{Key: "jobs", Acquired: true, Limit: 2})
			if ok, err := w2.Renew(ctx, 30*sec); !ok || err != nil {
				t.Fatalf("Renew w2: %v, %v; want true", ok, err)
			}
			if err := w2.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if ok, err := w2.Renew(ctx, sec); ok || err != nil {
				t.Fatalf("Renew after Release: %v, %v; want false", ok, err)
			}
			// next is never released either: 5 s on, no lease is left.
			now += (5 * sec).Microseconds()
			b.setNow(t, now)
			one, err := c.Acquire(ctx, "jobs", 1, sec)
			checkLease(t, "all ended", one, err, client.Lease{Key: "jobs", Acquired: true, Limit: 1})
			if b.rdb != nil && bk.name == "rlserver" {
				now += sec.Microseconds()
				b.setNow(t, now)
				if n, err := b.rdb.Exists(ctx, "jobs").Result(); n != 0 || err != nil {
					t.Fatalf("EXISTS jobs after every lease ended: %d, %v; want 0", n, err)
				}
			}
		})
	}
}

// TestLeaseErrors: bad arguments are ErrBadLimit before any I/O, a key of another
// algorithm ErrWrongType, on every backend.
func TestLeaseErrors(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			b.setNow(t, t0)
			ctx := context.Background()
			if _, err := b.client.Allow(ctx, "tok", client.Token(3, sec)); err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name string
				call func() (*client.Lease, error)
				want error
				says string
			}{
				{"limit 0", func() (*client.Lease, error) { return b.client.Acquire(ctx, "k", 0, sec) }, client.ErrBadLimit, "lease limit must be between 1"},
				{"limit above the cap", func() (*client.Lease, error) { return b.client.Acquire(ctx, "k", 100_001, sec) }, client.ErrBadLimit, "100000"},
				{"ttl 0", func() (*client.Lease, error) { return b.client.Acquire(ctx, "k", 1, 0) }, client.ErrBadLimit, "lease ttl must be"},
				{"sub-ms ttl", func() (*client.Lease, error) { return b.client.Acquire(ctx, "k", 1, 1500*time.Microsecond) }, client.ErrBadLimit, "whole number of milliseconds"},
				{"empty id", func() (*client.Lease, error) { return b.client.AcquireID(ctx, "k", "", 1, sec) }, client.ErrBadLimit, "1 to 128 bytes"},
				{"long id", func() (*client.Lease, error) {
					return b.client.AcquireID(ctx, "k", strings.Repeat("x", 129), 1, sec)
				}, client.ErrBadLimit, "1 to 128 bytes"},
				{"wrong type", func() (*client.Lease, error) { return b.client.Acquire(ctx, "tok", 1, sec) }, client.ErrWrongType, ""},
			}
			for _, tc := range cases {
				l, err := tc.call()
				if l != nil || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: %v, %v; want %v saying %q", tc.name, l, err, tc.want, tc.says)
				}
			}
			// Nothing above took a place: k is free.
			l, err := b.client.Acquire(ctx, "k", 1, sec)
			checkLease(t, "k", l, err, client.Lease{Key: "k", Acquired: true, Limit: 1})
			if _, err := b.client.Allow(ctx, "k", client.Fixed(1, sec)); !errors.Is(err, client.ErrWrongType) {
				t.Errorf("Allow on a lease key: %v, want ErrWrongType", err)
			}
		})
	}
}

// TestBackendsAgreeLeases replays seeded random lease calls on the three backends on
// one frozen clock (acquires with and without ids, retries, releases, renewals, limits
// changing under live leases, time passing deadlines) and requires the same answers.
func TestBackendsAgreeLeases(t *testing.T) {
	bs, rng, seed := agreeSetup(t, 13)
	held := make([][]*client.Lease, len(bs)) // per backend, the leases taken, alike in order
	now := t0
	ctx := context.Background()
	for i := range *agreeSteps / 3 {
		key := fmt.Sprintf("lease:%d", rng.IntN(3))
		limit := 1 + rng.IntN(4)
		ttl := time.Duration(1+rng.IntN(3000)) * ms
		call := rng.IntN(10)
		pick := -1
		if len(held[0]) > 0 {
			pick = rng.IntN(len(held[0]))
		}
		renewTTL := time.Duration(1+rng.IntN(3000)) * ms
		id := fmt.Sprintf("id%d", rng.IntN(6))
		switch rng.IntN(4) {
		case 0:
			now += rng.Int64N(4_000_000)
		case 1:
			now += rng.Int64N(2000)
		}
		outs := make([]string, len(bs))
		for j, b := range bs {
			b.setNow(t, now)
			var l *client.Lease
			var ok bool
			var err error
			switch {
			case call < 3:
				l, err = b.client.Acquire(ctx, key, limit, ttl)
			case call < 6:
				l, err = b.client.AcquireID(ctx, key, id, limit, ttl)
			case call < 8 && pick >= 0:
				err = held[j][pick].Release(ctx)
			case pick >= 0:
				ok, err = held[j][pick].Renew(ctx, renewTTL)
			}
			if l != nil && l.Acquired {
				held[j] = append(held[j], l)
			}
			shown := "no lease"
			if l != nil {
				if call < 3 { // a generated id differs from backend to backend
					shown = fmt.Sprintf("%v %d %d %v", l.Acquired, l.Limit, l.Remaining, l.RetryAfter)
				} else {
					shown = fmt.Sprintf("%v %d %d %v %s", l.Acquired, l.Limit, l.Remaining, l.RetryAfter, l.ID)
				}
			}
			outs[j] = fmt.Sprintf("%s %v %v", shown, ok, outcomeOf(client.Result{}, err).err)
		}
		for j := 1; j < len(bs); j++ {
			if outs[j] != outs[0] {
				t.Fatalf("-agree.seed=%d, step %d: call %d on %s (limit %d, ttl %v, id %s, pick %d) at %d µs:\n  %-9s %s\n  %-9s %s\n  %-9s %s",
					seed, i, call, key, limit, ttl, id, pick, now, bs[0].name, outs[0], bs[1].name, outs[1], bs[2].name, outs[2])
			}
		}
	}
}

// TestAcquireReserving: of 3 places, callers reserving 1 take 2 and are refused the
// third, which a caller without a reserve still takes; a reserve outside 0..limit is
// ErrBadLimit with nothing taken; the Lua backend, which has no RESERVE, says so.
func TestAcquireReserving(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			b.setNow(t, t0)
			ctx := context.Background()
			c := b.client
			if bk.name == "redis+lua" {
				if _, err := c.AcquireReserving(ctx, "pool", 3, 1, 10*sec); !errors.Is(err, client.ErrBadLimit) || !strings.Contains(err.Error(), "not Lua") {
					t.Fatalf("Lua: %v, want ErrBadLimit saying it needs rlserver", err)
				}
				return
			}
			for _, bad := range []int{-1, 4} {
				if l, err := c.AcquireReserving(ctx, "pool", 3, bad, 10*sec); l != nil || !errors.Is(err, client.ErrBadLimit) {
					t.Fatalf("reserve %d: %v, %v; want ErrBadLimit", bad, l, err)
				}
			}
			for i, want := range []bool{true, true, false} {
				l, err := c.AcquireReserving(ctx, "pool", 3, 1, 10*sec)
				if err != nil || l.Acquired != want {
					t.Fatalf("reserving call %d: %+v, %v; want acquired %v", i+1, l, err, want)
				}
			}
			if l, err := c.Acquire(ctx, "pool", 3, 10*sec); err != nil || !l.Acquired {
				t.Fatalf("the reserved place, without a reserve: %+v, %v", l, err)
			}
			if l, err := c.Acquire(ctx, "pool", 3, 10*sec); err != nil || l.Acquired {
				t.Fatalf("a fourth lease of 3: %+v, %v", l, err)
			}
		})
	}
}
