package algo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kinds lists every algorithm, for tests that run them all.
var kinds = []Kind{KindFixed, KindSlide, KindLog, KindToken, KindGCRA, KindLeaky, KindThrottle}

// logUniform draws an integer in [lo, hi], every order of magnitude equally likely.
func logUniform(rng *rand.Rand, lo, hi int64) int64 {
	l, h := math.Log(float64(lo)+1), math.Log(float64(hi)+1)
	v := int64(math.Exp(l+rng.Float64()*(h-l))) - 1
	return min(max(v, lo), hi)
}

// pick draws from the edges and typical values in list half of the time, else logUniform.
func pick(rng *rand.Rand, lo, hi int64, list ...int64) int64 {
	if rng.IntN(2) == 0 {
		return list[rng.IntN(len(list))]
	}
	return logUniform(rng, lo, hi)
}

// randomArgs draws a command's arguments after the key that the contract accepts:
// drawArgs also draws schedules over 100 years, which CheckSchedule refuses.
func randomArgs(rng *rand.Rand, kind Kind) string {
	for {
		s := drawArgs(rng, kind)
		if _, err := parse(kind, s); err == nil {
			return s
		}
	}
}

// drawArgs draws a command's arguments after the key; RL.LOG's limit stays at 2000 so
// its log stays short enough to test quickly.
func drawArgs(rng *rand.Rand, kind Kind) string {
	if kind == KindThrottle {
		return fmt.Sprint(pick(rng, 0, 1e9, 0, 1, 4, 15, 99, 1e9),
			" ", pick(rng, 1, 1e9, 1, 3, 30, 1000, 1e6, 1e9),
			" ", pick(rng, 1, maxPeriodS, 1, 60, 3600, maxPeriodS))
	}
	maxL := int64(1e9)
	if kind == KindLog {
		maxL = 2000
	}
	s := fmt.Sprint(pick(rng, 1, maxL, 1, 2, 3, 7, 10, 100, 1000, maxL),
		" ", pick(rng, 1, maxWindowMs, 1, 3, 7, 1000, 1001, 60000, 86_400_000, maxWindowMs))
	if rng.IntN(2) == 0 {
		switch kind {
		case KindToken:
			s += fmt.Sprint(" RATE ", pick(rng, 1, 1e9, 1, 3, 10, 1e9))
		case KindGCRA:
			s += fmt.Sprint(" BURST ", pick(rng, 1, 1e9, 1, 3, 10, 1e9))
		case KindLeaky:
			s += fmt.Sprint(" QUEUE ", pick(rng, 0, 1e9, 0, 1, 3, 10, 1e9))
		}
	}
	return s
}

// capacity is the largest cost a request can ever pass with (LEAKY: a queue's worth).
func capacity(r Request) int64 {
	switch r.Kind {
	case KindGCRA:
		if r.Burst > 0 {
			return r.Burst
		}
	case KindThrottle:
		return r.Limit + 1
	}
	return r.Limit
}

// randomCost draws a cost that fills the limit in a few calls, or a small one.
func randomCost(rng *rand.Rand, r Request) int64 {
	c := capacity(r)
	if rng.IntN(4) == 0 {
		return min(c, 1+rng.Int64N(3))
	}
	return max(1, c/(1+rng.Int64N(6)))
}

// randomGap draws a pause between calls: up to about a window, or nothing.
func randomGap(rng *rand.Rand, r Request) int64 {
	if rng.IntN(3) == 0 {
		return 0
	}
	return logUniform(rng, 1, min(2*r.Window, ms(86_400_000)))
}

// horizon is the longest duration (µs) r's parameters can produce: the tolerance,
// the queue, or a full refill. Property tests stay below 2^52 µs (142 years), where
// now + horizon stays below 2^53 and every time of the day is an exact float64.
func horizon(r Request) float64 {
	switch r.Kind {
	case KindToken:
		b := newBucket(r)
		return b.capacity * b.window / b.rate
	case KindGCRA:
		return float64(r.Window) / float64(r.Limit) * float64(max(r.Burst, r.Limit))
	case KindLeaky:
		return float64(r.Window) / float64(r.Limit) * float64(r.Queue+r.Limit)
	case KindThrottle:
		return float64(r.Window) / float64(r.Rate) * float64(r.Limit+1)
	}
	return float64(2 * r.Window)
}

// TestRetryAfterProperty checks, over random parameters and histories, that a limited
// call told to retry after N ms (CL.THROTTLE: s) passes when repeated exactly N ms
// later, and is still limited 1 ms earlier; for RL.LEAKY, N is the time until the
// queue has room. Where float64 lets the call through 1 ms early, the same test in
// exact arithmetic must still refuse it: the answer was right, and the rounding
// favoured the caller.
func TestRetryAfterProperty(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(kind), 42))
			unit := int64(1000)
			if kind == KindThrottle {
				unit = 1_000_000
			}
			checked, lenient := 0, 0
			for iter := 0; iter < 20000; iter++ {
				args := randomArgs(rng, kind)
				r := mustParse(t, kind, args)
				if horizon(r) >= 1<<52 {
					continue
				}
				var m machine
				now := base + rng.Int64N(ms(86_400_000))
				for range rng.IntN(8) {
					h := r
					h.Cost = randomCost(rng, r)
					m.do(t, h, now)
					now += randomGap(rng, r)
				}
				probe := r
				probe.Cost = randomCost(rng, r)
				var d Decision
				for range 12 {
					if d = m.do(t, probe, now); !d.Allowed {
						break
					}
				}
				retry := wire(kind, d)[3]
				if d.Allowed || retry < 0 {
					continue
				}
				checked++
				wait := retry * unit
				if _, late := m.decide(t, probe, now+wait); !late.Allowed {
					t.Errorf("%s %s COST %d at %d, state %+v: retry_after %d, still limited then: %+v",
						kind, args, probe.Cost, now, m, retry, late)
				}
				if _, early := m.decide(t, probe, now+wait-unit); early.Allowed {
					lenient++
					if exactPasses(t, m, probe, now+wait-unit) {
						t.Errorf("%s %s COST %d at %d, state %+v: retry_after %d, allowed 1 unit earlier",
							kind, args, probe.Cost, now, m, retry)
					}
				}
			}
			t.Logf("%d limited calls checked; %d passed 1 unit early by float rounding", checked, lenient)
			if checked < 5000 {
				t.Errorf("only %d limited calls checked", checked)
			}
		})
	}
}

// TestFreshAtProperty checks, over random parameters and histories, that after each
// write the state behaves exactly as a fresh key from FreshAt on (same Decision, same
// state written), that reset_after is FreshAt - now rounded up, and, for the integer
// algorithms, that FreshAt is not late: one µs before it the key is not fresh yet.
func TestFreshAtProperty(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(kind), 7))
			unit := int64(1000)
			if kind == KindThrottle {
				unit = 1_000_000
			}
			checked := 0
			for iter := 0; iter < 5000; iter++ {
				r := mustParse(t, kind, randomArgs(rng, kind))
				if horizon(r) >= 1<<52 {
					continue
				}
				var m machine
				now := base + rng.Int64N(ms(86_400_000))
				for range 1 + rng.IntN(6) {
					h := r
					h.Cost = randomCost(rng, r)
					d := m.do(t, h, now)
					if d.Write {
						checked++
						checkFresh(t, rng, m, h, d, now, unit)
					}
					now += randomGap(rng, r)
				}
			}
			if checked < 5000 {
				t.Errorf("only %d writes checked", checked)
			}
		})
	}
}

// checkFresh checks one written state m, the answer d to request r at now.
func checkFresh(t *testing.T, rng *rand.Rand, m machine, r Request, d Decision, now, unit int64) {
	t.Helper()
	if d.FreshAt <= now && r.Cost > 0 {
		t.Fatalf("%+v at %d wrote a state already fresh: %+v", r, now, d)
	}
	if want, reset := (d.FreshAt-now+unit-1)/unit, wire(r.Kind, d)[4]; reset != want {
		t.Errorf("%+v at %d: reset_after %d, but FreshAt is %d µs away", r, now, reset, d.FreshAt-now)
	}
	probe := r
	probe.Cost = randomCost(rng, r) * int64(rng.IntN(2)) // sometimes COST 0
	probe.Peek = rng.IntN(4) == 0
	for _, at := range []int64{d.FreshAt, d.FreshAt + 1 + rng.Int64N(r.Window)} {
		gotState, got := m.decide(t, probe, at)
		wantState, want := machine{}.decide(t, probe, at)
		if got != want || (got.Write && !sameState(r.Kind, gotState, wantState)) {
			t.Errorf("%+v, state %+v at FreshAt+%d: %+v, a fresh key answers %+v", probe, m, at-d.FreshAt, got, want)
		}
	}
	if !heldAt(m, r, d.FreshAt-1) {
		t.Errorf("%+v, state %+v: nothing held 1µs before FreshAt %d", r, m, d.FreshAt)
	}
}

// heldAt reports whether m's state still counts something at t, for the integer
// algorithms (the float ones report true): FreshAt must not be late.
func heldAt(m machine, r Request, t int64) bool {
	switch r.Kind {
	case KindFixed:
		return m.fixed.Window == t/r.Window && m.fixed.Count > 0
	case KindSlide:
		v := viewSlide(m.slide, r.Window, t)
		return v.cur > 0 || v.prev > 0
	case KindLog:
		return len(m.log) > 0 && m.log[len(m.log)-1].TS > t-r.Window
	}
	return true
}

// sameState compares the states of one kind held by two machines.
func sameState(kind Kind, a, b machine) bool {
	switch kind {
	case KindFixed:
		return a.fixed == b.fixed
	case KindSlide:
		return a.slide == b.slide
	case KindLog:
		return slices.Equal(a.log, b.log)
	case KindToken:
		return a.token == b.token
	}
	return a.tat == b.tat
}

// TestRemainingProperty checks, over random parameters and histories, that remaining
// is how many cost-1 calls pass right after, at the same moment, exactly.
func TestRemainingProperty(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(kind), 9))
			checked := 0
			for iter := 0; iter < 4000; iter++ {
				r := mustParse(t, kind, randomArgs(rng, kind))
				if capacity(r) > 1000 || r.Queue > 1000 {
					continue
				}
				var m machine
				now := base + rng.Int64N(ms(86_400_000))
				for range rng.IntN(8) {
					h := r
					h.Cost = randomCost(rng, r)
					m.do(t, h, now)
					now += randomGap(rng, r)
				}
				h := r
				h.Cost = randomCost(rng, r) * int64(rng.IntN(3)) // COST 0 a third of the time
				d := m.do(t, h, now)
				one := r
				one.Cost = 1
				passed := int64(0)
				for passed <= d.Remaining+2 && m.do(t, one, now).Allowed {
					passed++
				}
				checked++
				if passed != d.Remaining {
					t.Errorf("%+v at %d: remaining %d, but %d cost-1 calls pass", h, now, d.Remaining, passed)
				}
			}
			if checked < 1000 {
				t.Errorf("only %d checked", checked)
			}
		})
	}
}
