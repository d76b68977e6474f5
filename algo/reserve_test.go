package algo

import (
	"math/rand/v2"
	"testing"
)

// admitsReserved is RESERVE's definition, brute force on the oracle: a call of cost c
// with RESERVE n is admitted at now iff the call and then n calls of cost 1, at the
// same instant, all pass.
func (o *oracle) admitsReserved(c, n, now int64) bool {
	x := o.clone()
	if !x.call(c, false, now).allowed {
		return false
	}
	for range n {
		if !x.call(1, false, now).allowed {
			return false
		}
	}
	return true
}

// drawReserve draws a reserve the contract accepts: 1, the limit, or between.
func drawReserve(rng *rand.Rand, sp ospec) int64 {
	switch rng.IntN(4) {
	case 0:
		return 1
	case 1:
		return sp.limit
	}
	return logUniform(rng, 1, sp.limit)
}

// TestOracleReserve plays random histories of plain calls (as TestOracleSequences),
// then a call with RESERVE n, and checks it against admitsReserved: the decision; a
// refusal writes nothing, its remaining is a PEEK of cost 0's less n and its
// retry_after is the definition's first ms at which the call would be admitted (never
// early), or -1 exactly when a fresh key would refuse it; an admission writes what the
// call without RESERVE writes and its remaining is that call's less n. RL.SLIDE and
// RL.TOKEN, float64 by contract, may differ from the exact definition only where its
// test of cost c+n misses by less than float rounding (slack).
func TestOracleReserve(t *testing.T) {
	for _, f := range oracleFamilies {
		if f.kind == KindThrottle { // CL.THROTTLE takes no RESERVE
			continue
		}
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			checked, refused := 0, 0
			for checked < *oracleN/6 {
				sp := drawSpec(rng, f)
				var m machine
				o := &oracle{sp: sp}
				now := drawNow(rng)
				for range rng.IntN(12) { // a history of plain calls
					cost := drawCost(rng, sp)
					m.do(t, sp.request(t, cost, false), now)
					if integral(kind) {
						o.call(cost, false, now) // integer: production's own replies (TestOracleSequences)
					} else {
						o.adopt(m) // float: the state production stored, taken exactly
					}
					now += drawGap(rng, sp, [5]int64{}, false)
				}
				c, n := drawCost(rng, sp), drawReserve(rng, sp)
				if c > sp.capacity() && kind != KindLeaky {
					c = rng.Int64N(sp.capacity() + 1)
				}
				checkReserve(t, seed, sp, m, o, c, n, now)
				checked++
				if !o.admitsReserved(c, n, now) {
					refused++
				}
			}
			t.Logf("%d reserve calls, %d refused", checked, refused)
		})
	}
}

// checkReserve decides COST c RESERVE n at now on a copy of m and checks it against o,
// which holds the same state.
func checkReserve(t *testing.T, seed uint64, sp ospec, m machine, o *oracle, c, n, now int64) {
	t.Helper()
	r := sp.request(t, c, false)
	r.Reserve = n
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d, %v COST %d RESERVE %d at %d: "+format, append([]any{seed, sp, c, n, now}, a...)...)
	}
	got, d := m.decide(t, r, now)
	want := o.admitsReserved(c, n, now)
	float := !integral(sp.kind)
	rounding := func(at int64) bool { return float && near(o.margin(c+n, at), slack(sp, c+n)) }
	if d.Allowed != want && !rounding(now) {
		fail("allowed %v, the definition %v", d.Allowed, want)
	}
	plain := r
	plain.Reserve = 0
	if d.Allowed {
		next, dp := m.decide(t, plain, now)
		if !sameState(sp.kind, got, next) || d.Remaining != max(0, dp.Remaining-n) {
			fail("admitted: remaining %d, without RESERVE %d; same state %v", d.Remaining, dp.Remaining, sameState(sp.kind, got, next))
		}
		return
	}
	peek := sp.request(t, 0, true)
	if _, dz := m.decide(t, peek, now); d.Write || d.Remaining != max(0, dz.Remaining-n) {
		fail("refused: write %v, remaining %d, a PEEK of cost 0 %d", d.Write, d.Remaining, dz.Remaining)
	}
	retry := Millis(d.RetryAfter)
	never := !(&oracle{sp: sp}).admitsReserved(c, n, now)
	switch {
	case never != (retry < 0):
		fail("retry_after %d, but a fresh key admits: %v", retry, !never)
	case never:
		return
	}
	at := now + retry*1000
	if !prodPasses(t, m, r, at) || !o.admitsReserved(c, n, at) && !rounding(at) {
		fail("refused after waiting retry_after %d ms", retry)
	}
	if early := at - 1000; retry > 0 && o.admitsReserved(c, n, early) && !rounding(early) {
		fail("retry_after %d ms, but the definition admits 1 ms earlier", retry)
	}
}

// TestReserveShare checks the capacity each kind's share is taken of, and the
// rounding up.
func TestReserveShare(t *testing.T) {
	for _, tc := range []struct {
		r    Request
		pct  int64
		want int64
	}{
		{Request{Kind: KindFixed, Limit: 10}, 20, 2},
		{Request{Kind: KindFixed, Limit: 10}, 25, 3}, // 2.5 rounds up
		{Request{Kind: KindFixed, Limit: 10}, 0, 0},
		{Request{Kind: KindFixed, Limit: 10}, 100, 10},
		{Request{Kind: KindToken, Limit: 40, Rate: 10}, 50, 20}, // the bucket's size
		{Request{Kind: KindGCRA, Limit: 10, Burst: 4}, 50, 2},   // the burst
		{Request{Kind: KindGCRA, Limit: 10}, 50, 5},
		{Request{Kind: KindLeaky, Limit: 10, Queue: 3}, 50, 2}, // 4 places
		{Request{Kind: KindLeaky, Limit: 1, Queue: 9}, 100, 1}, // at most the limit
	} {
		if got := tc.r.ReserveShare(tc.pct); got != tc.want {
			t.Errorf("%v %d%%: %d, want %d", tc.r, tc.pct, got, tc.want)
		}
	}
}
