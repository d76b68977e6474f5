// Package algo is the math of rlserver's rate-limiting algorithms and nothing else.
//
// Every algorithm is a pure function of (stored state, request, now) that returns the
// new state and a Decision. Nothing here reads a clock, locks, or does I/O: time is
// passed in as microseconds since the Unix epoch, as golang.org/x/time/rate passes it,
// so tests never sleep. The wire contract is docs/commands.md.
//
// RL.ALL's rules (Rule) are each one such Request on its own key; the store decides
// them together. RL.ACQUIRE's state is a set of leases with deadlines, decided by
// Acquire, Release and Renew in the same pure style.
//
// The Lua reference scripts must reproduce every reply bit for bit. The GCRA family and
// RL.LEAKY are integer µs throughout (gcra.go). RL.SLIDE and RL.TOKEN evaluate each
// float64 formula in the order its comment writes, one rounding per operation.
// A product that feeds an addition or subtraction is wrapped in float64(...): the Go
// spec lets the compiler fuse x*y+z into one FMA (one rounding) unless an explicit
// conversion forces the product's rounding, and Lua never fuses.
//
// now must lie in (0, 2^53): times and integer durations then convert to float64
// exactly, and floor(now/W) computed in doubles (Lua) equals the integer division here.
package algo

import "math"

// Kind names an algorithm. A key holds the state of exactly one kind.
type Kind uint8

// The algorithms, one per command.
const (
	KindFixed     Kind = iota + 1 // RL.FIXED: fixed window
	KindSlide                     // RL.SLIDE: sliding window counter
	KindLog                       // RL.LOG: sliding window log
	KindToken                     // RL.TOKEN: token bucket
	KindGCRA                      // RL.GCRA: generic cell rate algorithm
	KindLeaky                     // RL.LEAKY: leaky bucket as a queue
	KindThrottle                  // CL.THROTTLE: redis-cell's GCRA
	KindLease                     // RL.ACQUIRE, RL.RELEASE, RL.RENEW: concurrency leases
	KindRedisGCRA                 // GCRA: Redis 8.8's own command, on Redis's clock (RedisGCRA)
)

// LastKind is the highest Kind: loops over every kind run from KindFixed to it.
const LastKind = KindRedisGCRA

// Request is one call, as the server parses it from the wire (rlcmd.ParseRequest).
// Durations are in microseconds. The numbers mean what each command's arguments mean,
// so they read differently by Kind; this table is the one place that says how ("-":
// unused, 0):
//
//	Kind               Limit       Window     Rate               Burst          Queue  Cost
//	FIXED, SLIDE, LOG  limit       window     -                  -              -      COST
//	TOKEN              capacity    window     RATE (0: Limit)    -              -      COST
//	GCRA (RL.GCRA)     rate        window     -                  BURST (0: L)   -      COST
//	GCRA (Redis GCRA)  max_burst   -          tokens_per_period  max_burst+1    -      TOKENS
//	LEAKY              rate        window     -                  -              QUEUE  COST
//	THROTTLE           max_burst   period     count_per_period   -              -      quantity
//
// Redis's GCRA command also sets Interval and Period (below); the other commands'
// bounds are Range's.
type Request struct {
	Kind   Kind  // the command
	Limit  int64 // L, by Kind as the table says
	Window int64 // W in µs: window_ms·1000, or period_s·1e6
	Rate   int64 // by Kind as the table says
	Burst  int64 // by Kind as the table says
	Queue  int64 // RL.LEAKY's queue q
	Cost   int64 // c: what the call spends, by Kind as the table says
	Peek   bool  // decide and reply as usual, but write nothing
	// Refund n > 0 gives back n of what earlier calls spent instead of spending Cost
	// (refund.go): Cost is then 0 and Peek false, and the reply is the one a PEEK of
	// cost 0 would get right after the refund.
	Refund int64
	// Reserve n > 0 admits the call only if n units would remain after it (reserve.go),
	// so that callers without it keep the last n: capacity kept for a higher priority.
	// A refused call spends nothing and its RetryAfter is the time until it would fit
	// with its reserve. 0 to Limit; Refund takes none.
	Reserve int64
	// Slice n > 0 takes up to n units now instead of spending Cost (slice.go): the
	// call of the largest cost c <= n that passes, which the Decision's Granted says,
	// with the time it may be used for. RL.FIXED, RL.SLIDE, RL.TOKEN and RL.GCRA only;
	// Cost is then 0 and Refund 0.
	Slice int64

	// Interval is the emission interval T in µs of Redis's GCRA command, which derives
	// it from a float period; 0 (every other command) derives it from Window and Limit.
	Interval int64
	// Period is Redis's GCRA's period in seconds, as NativeGCRA took it, and
	// 0 for every other command. The decision reads only Interval; Period is kept for
	// the Lua twin, which derives Interval from it in doubles, as Redis does.
	Period float64
	// Cell selects redis-cell's reply, for CL.THROTTLE and Redis's GCRA (see GCRA).
	// It is always set on KindRedisGCRA.
	Cell bool
	// Spend makes RL.FIXED count a refused call's cost too, and refuse any call, one
	// of cost 0 included, whose count would then be past the limit: envoyproxy/
	// ratelimit's INCRBY-then-compare, which package policy's default mode reproduces.
	// Remaining is then the limit minus the count after the call, negative past the
	// limit, so that the caller knows the count. No command sets it.
	Spend bool
}

// Decision is the answer to one call: the five wire fields, and what the store must do.
// Its times are µs, as every time in algo, whatever unit the command answers in: each
// front converts them once, the RESP reply to ms (Millis) or, for redis-cell's reply,
// to seconds.
type Decision struct {
	Allowed   bool  // field 1 (CL.THROTTLE answers its inverse, "limited")
	Limit     int64 // field 2: L, b for RL.GCRA, max_burst+1 for CL.THROTTLE
	Remaining int64 // field 3: cost-1 requests that would pass right after this call
	// RetryAfter is field 4 in µs, at least 0, or -1: never (a cost above the limit),
	// or, in redis-cell's reply, allowed. RL.TOKEN's and RL.SLIDE's are whole ms, the
	// contract's formula settled against the algorithm's test (settleRetry).
	RetryAfter int64
	// ResetAfter is field 5 in µs: until the key is fresh again. Redis's GCRA answers
	// a tat behind now as a negative time (RedisGCRA); every other kind's is at least 0.
	ResetAfter int64

	// Write is true when the state changed and must be stored: an allowed call with
	// cost > 0 that is not PEEK. A limited call consumes nothing and writes nothing,
	// and then the returned state is the input state.
	Write bool
	// FreshAt is the moment (µs) the state the reply describes is fresh again: now plus
	// reset_after, exact (not rounded to ms), rounded up to a whole µs. When Write is true
	// that is the written state, and the key can be removed at FreshAt. FreshAt <= now
	// means the state is already fresh: nothing to keep.
	FreshAt int64

	// Granted is what a Slice request took, 0 to its n (Allowed is Granted > 0), and
	// ValidFor the µs from now it may be used for (sliceLife); both 0 otherwise.
	Granted, ValidFor int64
}

// maxDuration (µs, about 285 years) caps every float duration before it becomes an
// integer: GCRA's tolerance or a token bucket's refill can reach 1e9 windows of a year
// (3e22 µs), past int64 µs. Lua must clamp the same way: math.min(x, 2^53).
const maxDuration = 1 << 53

// msCeil is the contract's ms(x) = ceil(x/1000) for a duration x in µs, negative
// durations as 0 and long ones capped at maxDuration.
// Lua: math.ceil(math.min(math.max(x, 0), 2^53) / 1000).
func msCeil(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	return int64(math.Ceil(min(x, maxDuration) / 1000))
}

// Millis is a Decision's time x in µs as the wire's whole ms, the contract's
// ms(x) = ceil(x/1000), and -1 (RetryAfter's never) as -1. For 0 <= x < 2^53 it is the
// float64 msCeil: x/1000 is then at least 0.001 away from the next integer when x is
// not a multiple of 1000, more than half an ulp (<= 2^-10) of x/1000, so the division
// never rounds onto the integer that ceil would keep.
func Millis(x int64) int64 {
	if x < 0 {
		return -1
	}
	ms := x / 1000
	if x%1000 > 0 {
		ms++
	}
	return ms
}

// freshAt is the first whole µs at or after t, the moment a float state is fresh: now
// if t is past, so that every state already fresh answers alike, and capped at
// now+maxDuration like the durations the reply shows.
func freshAt(t float64, now int64) int64 {
	switch x := t - float64(now); {
	case x <= 0:
		return now
	case x > maxDuration:
		return now + maxDuration
	}
	return int64(math.Ceil(t))
}

// settleRetry moves a wait of ms milliseconds, computed by a contract formula, by one ms
// where the algorithm's own test (passesAt, at a moment in µs) disagrees with it:
// formula and test round differently, and where the exact answer is a whole ms that
// left the wait one ms early or late; the result is in µs, a whole number of ms. Lua:
// if not passes(now + R*1000) then R = R + 1 elseif R > 1 and passes(now + (R-1)*1000) then R = R - 1 end
func settleRetry(ms, now int64, passesAt func(int64) bool) int64 {
	switch {
	case !passesAt(now + ms*1000):
		ms++
	case ms > 1 && passesAt(now+(ms-1)*1000):
		ms--
	}
	return ms * 1000
}
