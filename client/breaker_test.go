package client

import (
	"context"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
)

// TestBreaker walks the circuit through its states on a fake clock: K failures open
// it, one probe goes out per pause, failed probes double the pause up to the cap, a
// success closes it, and an abandoned probe frees the next.
func TestBreaker(t *testing.T) {
	f, err := newFallback(&Fallback{Replicas: 1, Failures: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}, 100)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	b := &f.breaker
	b.now = func() time.Time { return now }
	step := func(what string, want bool) {
		t.Helper()
		if got := b.allow(); got != want {
			t.Fatalf("%s: allow = %v, want %v", what, got, want)
		}
	}
	for range 2 {
		step("closed", true)
		b.failure()
	}
	step("2 failures", true)
	b.success() // a success in between starts the count again
	b.failure()
	b.failure()
	step("2 failures after a success", true)
	b.failure()
	step("open", false)
	now = now.Add(99 * time.Millisecond)
	step("99 ms into a 100 ms pause", false)
	now = now.Add(time.Millisecond)
	step("the probe", true)
	step("a second caller while the probe is out", false)
	b.failure()
	now = now.Add(199 * time.Millisecond)
	step("199 ms into the doubled pause", false)
	now = now.Add(time.Millisecond)
	step("the second probe", true)
	b.failure()
	now = now.Add(300 * time.Millisecond)
	step("the pause capped at 300 ms", true)
	b.abandon()
	step("the next probe, the last abandoned", true)
	b.success()
	step("closed again", true)
	step("closed again, a second caller", true)
}

// TestShare divides every count of a limit by the replicas, rounding down to at
// least 1 (a queue to 0), and leases rounding up.
func TestShare(t *testing.T) {
	f, err := newFallback(&Fallback{Replicas: 3}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in, want Limit
	}{
		{Token(100, time.Second), TokenRate(33, time.Second, 33)},
		{TokenRate(2, time.Second, 10), TokenRate(1, time.Second, 3)},
		{Fixed(1000, time.Hour), Fixed(333, time.Hour)},
		{Slide(2, time.Minute), Slide(1, time.Minute)},
		{Log(7, time.Second), Log(2, time.Second)},
		{GCRA(20, time.Second, 40), GCRA(6, time.Second, 13)},
		{Leaky(10, time.Second, 5), Leaky(3, time.Second, 1)},
		{Leaky(10, time.Second, 2), Leaky(3, time.Second, 0)},
	} {
		if got, want := f.share(c.in.request(1, false)), c.want.request(1, false); got != want {
			t.Errorf("share(%+v) = %+v, want %+v", c.in, got, want)
		}
	}
	for limit, want := range map[int64]int64{1: 1, 3: 1, 4: 2, 10: 4} {
		if d := f.acquire("lease", algo.LeaseRequest{Limit: limit, Duration: 1e6}); d.Limit != want {
			t.Errorf("a lease limit of %d is %d locally, want %d", limit, d.Limit, want)
		}
		f.local.reset(context.Background(), "lease")
	}
}
