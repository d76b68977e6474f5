package store

import (
	"math"

	"github.com/rlserver/rlserver/algo"
)

// decide unpacks the state of every kind but RL.LOG from an entry's two words, runs
// the algorithm and packs the new state. Two zero words are each kind's fresh state.
//
//	RL.FIXED     a = window index, b = count
//	RL.SLIDE     a = window index, b = prev<<32 | cur (counts never exceed the limit, ≤ 1e9 < 2^32)
//	RL.TOKEN     a = float64 bits of tokens, b = time of the last refill (µs)
//	RL.GCRA, RL.LEAKY, CL.THROTTLE, Redis's GCRA
//	             a = tat, integer µs, b unused
//
// The one error is Redis's GCRA's overflow of its tat (algo.RedisGCRA).
func decide(r algo.Request, a, b uint64, now int64) (uint64, uint64, algo.Decision, error) {
	switch r.Kind {
	case algo.KindFixed:
		s, d := algo.Fixed(algo.FixedState{Window: int64(a), Count: int64(b)}, r, now)
		return uint64(s.Window), uint64(s.Count), d, nil
	case algo.KindSlide:
		s, d := algo.Slide(algo.SlideState{Window: int64(a), Cur: int64(uint32(b)), Prev: int64(b >> 32)}, r, now)
		return uint64(s.Window), uint64(s.Prev)<<32 | uint64(uint32(s.Cur)), d, nil
	case algo.KindToken:
		s, d := algo.Token(algo.TokenState{Tokens: math.Float64frombits(a), TS: int64(b)}, r, now)
		return math.Float64bits(s.Tokens), uint64(s.TS), d, nil
	case algo.KindGCRA, algo.KindThrottle:
		tat, d := algo.GCRA(int64(a), r, now)
		return uint64(tat), 0, d, nil
	case algo.KindRedisGCRA:
		tat, d, err := algo.RedisGCRA(int64(a), r, now)
		return uint64(tat), 0, d, err
	case algo.KindLeaky:
		tat, d := algo.Leaky(int64(a), r, now)
		return uint64(tat), 0, d, nil
	}
	panic("store: no state codec for " + r.Kind.String())
}
