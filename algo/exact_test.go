package algo

import (
	"math/big"
	"testing"
)

// exactPasses decides, in exact rational arithmetic, whether request r passes at t
// against m's state: the contract's test without any rounding (the float state values
// taken as the exact numbers they are). Tests use it to tell a retry_after that is
// genuinely too long from one where float64 merely rounds in the caller's favour.
func exactPasses(tb testing.TB, m machine, r Request, t int64) bool {
	if r.Cost == 0 {
		return true
	}
	c := rat(r.Cost)
	now := rat(t)
	switch r.Kind {
	case KindSlide:
		v := viewSlide(m.slide, r.Window, t)
		// cur + prev·(W - elapsed)/W + c <= L
		est := new(big.Rat).SetFrac(big.NewInt(v.prev*(r.Window-v.elapsed)), big.NewInt(r.Window))
		est.Add(est, rat(v.cur))
		return est.Add(est, c).Cmp(rat(r.Limit)) <= 0
	case KindToken:
		b := newBucket(r)
		tokens := rat(r.Limit)
		if m.token.TS != 0 {
			// min(capacity, tokens + max(0, t - ts)·rate/W)
			rate := big.NewRat(int64(b.rate), 1)
			refill := new(big.Rat).Mul(rat(max(0, t-m.token.TS)), rate)
			refill.Quo(refill, rat(r.Window))
			refill.Add(refill, new(big.Rat).SetFloat64(m.token.Tokens))
			if refill.Cmp(tokens) < 0 {
				tokens = refill
			}
		}
		return tokens.Cmp(c) >= 0
	case KindGCRA, KindThrottle, KindLeaky:
		// T = round(W/L) (CL.THROTTLE: period/count); allowed iff max(tat, t) + T·c - τ <= t,
		// τ = T·b (CL.THROTTLE: T·(max_burst+1)); LEAKY: max(tat, t) - t <= T·q.
		interval := rat(r.interval())
		bound := r.burst()
		if r.Kind == KindLeaky {
			bound = r.Queue
		}
		tolerance := new(big.Rat).Mul(interval, rat(bound))
		start := rat(m.tat)
		if start.Cmp(now) < 0 {
			start = now
		}
		wait := new(big.Rat).Sub(start, now)
		if r.Kind == KindLeaky {
			return wait.Cmp(tolerance) <= 0
		}
		if r.Cost > bound {
			return false
		}
		wait.Add(wait, new(big.Rat).Mul(interval, c))
		return wait.Cmp(tolerance) <= 0
	}
	// FIXED and LOG are integer math: the algorithm is its own exact oracle.
	_, d := m.decide(tb, r, t)
	return d.Allowed
}

func rat(v int64) *big.Rat { return new(big.Rat).SetInt64(v) }
