package algo

import (
	"math/big"
	"testing"
)

// sliceRequest is the request of a slice of n with the arguments after the key (no
// COST), as rlcmd.ParseSlice builds it.
func sliceRequest(t testing.TB, kind Kind, args string, n int64) Request {
	t.Helper()
	r := mustParse(t, kind, args)
	r.Cost, r.Slice = 0, n
	return r
}

// TestSlice plays slices and plain calls on one key of each kind: a slice takes what
// fits of n (all, a part, none), counts as a call of that cost, and may be used to the
// window's end (RL.FIXED, RL.SLIDE) or for the bucket's refill from empty (RL.TOKEN,
// RL.GCRA); a slice of none writes nothing and answers a cost-1 call's retry_after.
func TestSlice(t *testing.T) {
	type sliceStep struct {
		at      int64  // µs after base
		args    string // after the key
		n       int64  // the slice's n; 0: a plain call
		want    [5]int64
		granted int64
		valid   int64 // µs
	}
	for _, tc := range []struct {
		name  string
		kind  Kind
		steps []sliceStep
	}{
		{"fixed", KindFixed, []sliceStep{
			{0, "10 60000", 4, [5]int64{1, 10, 6, 0, 60000}, 4, ms(60000)},
			{ms(1), "10 60000 COST 5", 0, [5]int64{1, 10, 1, 0, 59999}, 0, 0},
			{ms(2), "10 60000", 4, [5]int64{1, 10, 0, 0, 59998}, 1, ms(59998)}, // 1 of 4 left
			{ms(3), "10 60000", 4, [5]int64{0, 10, 0, 59997, 59997}, 0, 0},
			{ms(60000), "10 60000", 3, [5]int64{1, 10, 7, 0, 60000}, 3, ms(60000)},
		}},
		{"slide", KindSlide, []sliceStep{
			{0, "10 60000", 7, [5]int64{1, 10, 3, 0, 120000}, 7, ms(60000)},
			{ms(90000), "10 60000", 10, [5]int64{1, 10, 0, 0, 90000}, 6, ms(30000)}, // 7 weigh 3.5
			{ms(90001), "10 60000", 1, [5]int64{0, 10, 0, 4285, 89999}, 0, 0},       // once 7 weigh 3
		}},
		{"token", KindToken, []sliceStep{
			{0, "10 1000", 4, [5]int64{1, 10, 6, 0, 400}, 4, ms(1000)},
			{0, "10 1000", 8, [5]int64{1, 10, 0, 0, 1000}, 6, ms(1000)},
			{0, "10 1000", 1, [5]int64{0, 10, 0, 100, 1000}, 0, 0},
			{ms(250), "10 1000 RATE 5", 3, [5]int64{1, 10, 0, 0, 1950}, 1, ms(2000)}, // 1.25 tokens back, 0.25 left
		}},
		{"gcra", KindGCRA, []sliceStep{
			{0, "10 1000", 4, [5]int64{1, 10, 6, 0, 400}, 4, ms(1000)},
			{0, "10 1000", 8, [5]int64{1, 10, 0, 0, 1000}, 6, ms(1000)},
			{0, "10 1000", 1, [5]int64{0, 10, 0, 100, 1000}, 0, 0},
			{ms(2000), "10 1000 BURST 4", 9, [5]int64{1, 4, 0, 0, 400}, 4, ms(400)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m machine
			for i, s := range tc.steps {
				r := mustParse(t, tc.kind, s.args)
				if s.n > 0 {
					r = sliceRequest(t, tc.kind, s.args, s.n)
				}
				d := m.do(t, r, base+s.at)
				if got := wire(tc.kind, d); got != s.want || d.Granted != s.granted || d.ValidFor != s.valid {
					t.Errorf("step %d: %s SLICE %d at +%dµs = %v granted %d valid %d, want %v granted %d valid %d",
						i, s.args, s.n, s.at, got, d.Granted, d.ValidFor, s.want, s.granted, s.valid)
				}
				if d.Write != (d.Granted > 0 || s.n == 0 && d.Allowed && r.Cost > 0) {
					t.Errorf("step %d: Write %v", i, d.Write)
				}
			}
		})
	}
}

// sliceFamilies are the kinds a slice is for.
var sliceFamilies = []ospec{{kind: KindFixed}, {kind: KindSlide}, {kind: KindToken}, {kind: KindGCRA}}

// TestOracleSlice plays random histories of plain calls (as TestOracleReserve), then a
// slice of n, and checks it against the definition: it grants the largest c <= n for
// which a call of cost c passes (for RL.SLIDE and RL.TOKEN, float64 by contract, up to
// a test that misses by float rounding), leaves the state and remaining of that call
// of cost c, or, granting none, writes nothing and answers a cost-1 call's
// retry_after. Then a refund of what it granted leaves as much room as before it,
// never more than a fresh key.
func TestOracleSlice(t *testing.T) {
	for _, f := range sliceFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			partial := 0
			for i := 0; i < *oracleN/6; i++ {
				sp := drawSpec(rng, f)
				var m machine
				o := &oracle{sp: sp}
				now := drawNow(rng)
				for range rng.IntN(12) {
					cost := drawCost(rng, sp)
					m.do(t, sp.request(t, cost, false), now)
					if integral(kind) {
						o.call(cost, false, now)
					} else {
						o.adopt(m)
					}
					now += drawGap(rng, sp, [5]int64{}, false)
				}
				if !integral(kind) {
					o.adopt(m)
				}
				n := 1 + logUniform(rng, 0, sp.limit-1)
				if checkSlice(t, seed, sp, m, o, n, now) < n {
					partial++
				}
			}
			t.Logf("%d slices, %d partial", *oracleN/6, partial)
		})
	}
}

// checkSlice decides a slice of n at now on a copy of m, checks it against o, which
// holds the same state, and returns what it granted.
func checkSlice(t *testing.T, seed uint64, sp ospec, m machine, o *oracle, n, now int64) int64 {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d, %v SLICE %d at %d: "+format, append([]any{seed, sp, n, now}, a...)...)
	}
	r := sliceRequest(t, sp.kind, sp.args(1, false), n)
	r.Cost = 0
	got, d := m.decide(t, r, now)
	c := d.Granted
	rounding := func(c int64) bool {
		return !integral(sp.kind) && near(o.margin(c, now), slack(sp, c))
	}
	if c < 0 || c > n || d.Allowed != (c > 0) {
		fail("granted %d, allowed %v", c, d.Allowed)
	}
	if c > 0 && !o.passes(c, now) && !rounding(c) {
		fail("granted %d, which the definition refuses", c)
	}
	if c < n && o.passes(c+1, now) && !rounding(c+1) {
		fail("granted %d, but the definition admits %d", c, c+1)
	}
	if c == 0 {
		_, d1 := m.decide(t, sp.request(t, 1, true), now)
		if d.Write || wire(sp.kind, d) != wire(sp.kind, d1) || d.ValidFor != 0 {
			fail("none granted: write %v, %v, a PEEK of cost 1 %v", d.Write, wire(sp.kind, d), wire(sp.kind, d1))
		}
		return 0
	}
	want, dc := m.decide(t, sp.request(t, c, false), now)
	if !sameState(sp.kind, got, want) || wire(sp.kind, d) != wire(sp.kind, dc) || !d.Write {
		fail("granted %d: %v, a call of cost %d %v; same state %v", c, wire(sp.kind, d), c, wire(sp.kind, dc), sameState(sp.kind, got, want))
	}
	if d.ValidFor <= 0 {
		fail("granted %d, valid for %d µs", c, d.ValidFor)
	}
	// The give-back: REFUND c restores the room the key had before the slice.
	back := sp.request(t, 0, false)
	back.Cost, back.Refund = 0, c
	_, before := m.decide(t, sp.request(t, 0, true), now)
	_, after := got.decide(t, back, now)
	if after.Remaining != before.Remaining && !(sp.kind == KindToken && absDiff(after.Remaining, before.Remaining) <= 1) {
		fail("REFUND %d of the slice: remaining %d, before the slice %d", c, after.Remaining, before.Remaining)
	}
	if after.Remaining > sp.capacity() {
		fail("REFUND %d of the slice: remaining %d, above a fresh key's %d", c, after.Remaining, sp.capacity())
	}
	return c
}

func absDiff(a, b int64) int64 { return max(a-b, b-a) }

// TestSliceOverTime: slices of random sizes taken at random moments on one key never
// grant more than the algorithm admits: per window at most the limit (RL.FIXED, and
// RL.SLIDE, whose estimate holds the window's whole count), and over any stretch from
// a fresh bucket at most capacity + rate × elapsed (RL.TOKEN, RL.GCRA: rate 1/T); and
// RL.FIXED's partial slices are exact: each window grants min(limit, what was asked).
func TestSliceOverTime(t *testing.T) {
	for _, f := range sliceFamilies {
		t.Run(f.name(), func(t *testing.T) {
			rng, seed := oracleRand(t)
			sp := ospec{kind: f.kind, limit: 1 + rng.Int64N(1000), windowMs: 1 + rng.Int64N(10000)}
			var m machine
			start, now := base, base
			granted, asked := map[int64]int64{}, map[int64]int64{}
			var total int64
			for range 2000 {
				n := 1 + rng.Int64N(sp.limit)
				d := m.do(t, sliceRequest(t, sp.kind, sp.args(1, false), n), now)
				w := now / sp.windowUs()
				total += d.Granted
				granted[w] += d.Granted
				asked[w] += n
				var bound *big.Rat
				switch sp.kind {
				case KindFixed, KindSlide:
					bound = rat(sp.limit)
					total = granted[w]
				case KindToken:
					bound = new(big.Rat).Add(rat(sp.limit), big.NewRat((now-start)*sp.limit, sp.windowUs()))
				case KindGCRA:
					bound = new(big.Rat).Add(rat(sp.limit), big.NewRat(now-start, sp.emission()))
				}
				if rat(total).Cmp(bound) > 0 {
					t.Fatalf("seed %d, %v: %d granted at +%d µs, bound %s", seed, sp, total, now-start, bound.FloatString(3))
				}
				now += logUniform(rng, 0, sp.windowUs()/4)
			}
			if sp.kind != KindFixed {
				return
			}
			for w, g := range granted {
				if g != min(sp.limit, asked[w]) {
					t.Fatalf("seed %d, %v: window %d granted %d of %d asked", seed, sp, w, g, asked[w])
				}
			}
		})
	}
}
