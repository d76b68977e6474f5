package algo

import (
	"errors"
	"math"
)

// Errors of a request whose arithmetic would leave the integer state's range. They
// name the quantity at fault in the algorithm's terms; package resp words them for
// each command.
var (
	// ErrBurstSpan is a tolerance T·b (RL.GCRA's burst, CL.THROTTLE's and GCRA's
	// max_burst+1) over 100 years ahead of now.
	ErrBurstSpan = errors.New("algo: burst × emission interval over 100 years")
	// ErrQueueSpan is RL.LEAKY's queue T·q over 100 years.
	ErrQueueSpan = errors.New("algo: queue × emission interval over 100 years")
	// ErrCostSpan is RL.LEAKY's share of a cost T·c over 100 years.
	ErrCostSpan = errors.New("algo: cost × emission interval over 100 years")
	// ErrCostOverflow is Redis's GCRA's T·cost past int64 µs (NativeGCRA).
	ErrCostOverflow = errors.New("algo: cost × emission interval overflows int64 µs")
	// ErrBurstOverflow is Redis's GCRA's T·(max_burst+1) past int64 µs (NativeGCRA).
	ErrBurstOverflow = errors.New("algo: burst × emission interval overflows int64 µs")
)

// CheckSchedule reports a request whose schedule would run more than 100 years ahead
// of now, which the integer state of the GCRA family and RL.LEAKY does not hold (see
// gcra.go): the tolerance T·b of RL.GCRA, CL.THROTTLE and GCRA (ErrBurstSpan), the
// queue T·q (ErrQueueSpan) and a cost's share T·c (ErrCostSpan) of RL.LEAKY.
func (r Request) CheckSchedule() error {
	t := r.interval()
	over := func(n int64) bool { return n > maxSchedule/t }
	switch r.Kind {
	case KindGCRA, KindThrottle:
		if over(r.burst()) {
			return ErrBurstSpan
		}
	case KindLeaky:
		if over(r.Queue) {
			return ErrQueueSpan
		}
		if over(r.Cost) {
			return ErrCostSpan
		}
	}
	return nil
}

// NativeGCRA is the request of Redis 8.8's GCRA command, GCRA key max_burst
// tokens_per_period period [TOKENS tokens], from arguments already in Redis's ranges
// (max_burst >= 0, tokens_per_period >= 1, 0 < period < 1e12 s, tokens >= 1): a
// KindRedisGCRA request (RedisGCRA decides it). Burst = max_burst+1 (Redis keeps
// 2^63-1 as it is), Interval = T as Redis derives it, Cost = tokens, Cell set (Redis's
// reply is redis-cell's), and Limit = max_burst, Rate = tokens_per_period and Period =
// period as given, for the Lua twin, which derives T as Redis does. Errors are Redis's
// own checks, in its order: ErrCostOverflow and ErrBurstOverflow where T·tokens or
// T·(max_burst+1) pass int64 µs. No 100-year bound: Redis has none.
func NativeGCRA(maxBurst, tokensPerPeriod int64, period float64, tokens int64) (Request, error) {
	r := Request{Kind: KindRedisGCRA, Limit: maxBurst, Rate: tokensPerPeriod, Period: period, Cost: tokens, Cell: true}
	r.Burst = r.Limit
	if r.Burst < math.MaxInt64 {
		r.Burst++
	}
	// Redis: (long long)(period * 1000000. / tokens_per_period + 0.5), at least 1. The
	// product feeds a division, never an addition, so no fused multiply-add can change it.
	// Below 1e12 s, period·1e6 stays below 2^63, so the conversion is defined.
	r.Interval = max(1, int64(r.Period*1e6/float64(r.Rate)+0.5))
	switch {
	case r.Interval > math.MaxInt64/r.Cost:
		return Request{}, ErrCostOverflow
	case r.Interval > math.MaxInt64/r.Burst:
		return Request{}, ErrBurstOverflow
	}
	return r, nil
}
