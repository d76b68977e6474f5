package client

import (
	"fmt"
	"time"

	"github.com/rlserver/rlserver/algo"
)

// The ranges the wire contract accepts (algo.Request.Range, as the server checks them),
// checked here so that every backend refuses the same limits with the same message,
// before any I/O.
var (
	_, maxCount          = algo.Request{}.Range(algo.ArgLimit) // limit, capacity, rate, burst, queue
	minWindow, maxWindow = windowRange(algo.Request{})         // a window or a lease's TTL
)

// minWindowUnit is the grain of a window: the wire takes whole milliseconds.
const minWindowUnit = time.Millisecond

// windowRange is r's window range as durations.
func windowRange(r algo.Request) (lo, hi time.Duration) {
	l, h := r.Range(algo.ArgWindow)
	return time.Duration(l) * time.Microsecond, time.Duration(h) * time.Microsecond
}

// Limit is one rate limit: an algorithm and its parameters. Build it with Fixed, Slide,
// Log, Token, TokenRate, GCRA or Leaky; the zero Limit is invalid. A Limit is a small
// value, safe to share and to build per call. Windows are whole milliseconds from 1 ms
// to 365 days, counts are 1 to 1e9; Validate says what is wrong, and every call
// validates its Limit before any I/O.
//
// Calling a key with another Limit of the same algorithm is not an error: the stored
// state is read under the new parameters. Calling it with another algorithm is
// (ErrWrongType).
type Limit struct {
	kind    algo.Kind
	n       int64         // the command's limit argument: limit, capacity or rate
	per     time.Duration // window
	option  int64         // the token bucket's rate, GCRA's burst, Leaky's queue
	reserve int64         // RESERVE: units left to calls without it (WithReserve)
}

// Fixed allows limit requests per window, counted in windows aligned to multiples of
// per since the Unix epoch (RL.FIXED). Simple and cheap, but a burst straddling a
// boundary passes twice the limit within one window's length.
func Fixed(limit int, per time.Duration) Limit {
	return Limit{kind: algo.KindFixed, n: int64(limit), per: per}
}

// Slide allows about limit requests in any window of length per, estimated from the
// current and the previous fixed window, the previous one weighted by its share still
// inside the sliding window (RL.SLIDE).
func Slide(limit int, per time.Duration) Limit {
	return Limit{kind: algo.KindSlide, n: int64(limit), per: per}
}

// Log allows exactly limit requests in any window of length per, keeping the time of
// every admitted request (RL.LOG). Exact, but its memory grows with the limit, and the
// backend caps the limit: rlserver's -max-log-limit, or the MaxLogLimit of LuaOptions
// and EmbeddedOptions (default 100,000).
func Log(limit int, per time.Duration) Limit {
	return Limit{kind: algo.KindLog, n: int64(limit), per: per}
}

// Token is a token bucket of capacity tokens, starting full and refilled continuously
// at capacity tokens per per (RL.TOKEN). Bursts of up to capacity pass at once.
func Token(capacity int, per time.Duration) Limit {
	return TokenRate(capacity, per, capacity)
}

// TokenRate is a token bucket refilled at rate tokens per per, holding up to capacity
// (RL.TOKEN ... RATE rate): a sustained rate and a burst size set apart. Its arguments
// are in GCRA's and Leaky's order: the rate, per what, then how much may pass at once.
func TokenRate(rate int, per time.Duration, capacity int) Limit {
	return Limit{kind: algo.KindToken, n: int64(capacity), per: per, option: int64(rate)}
}

// GCRA allows rate requests per per, evenly spaced, with bursts of up to burst
// requests (RL.GCRA ... BURST burst): the generic cell rate algorithm, one number
// stored per key. Result.Limit is burst.
func GCRA(rate int, per time.Duration, burst int) Limit {
	return Limit{kind: algo.KindGCRA, n: int64(rate), per: per, option: int64(burst)}
}

// Leaky is a leaky bucket as a queue, a shaper like nginx's limit_req without nodelay
// (RL.LEAKY ... QUEUE queue): requests leave evenly, rate per per, and up to queue of
// them may wait their turn. An allowed Result's RetryAfter is how long the caller must
// wait before proceeding (0 if not at all); a request that would wait longer than
// queue turns is denied.
func Leaky(rate int, per time.Duration, queue int) Limit {
	return Limit{kind: algo.KindLeaky, n: int64(rate), per: per, option: int64(queue)}
}

// Quota is the count per window the Limit was built with: Fixed, Slide and Log's
// limit, Token's capacity, TokenRate's, GCRA's and Leaky's rate; that is the
// sustained rate (the burst is Result.Limit). The HTTP middleware advertises it as
// the RateLimit-Policy quota.
func (l Limit) Quota() (n int, per time.Duration) {
	if l.kind == algo.KindToken {
		return int(l.option), l.per
	}
	return int(l.n), l.per
}

// WithReserve is l keeping n units for calls without a reserve (RESERVE n): a call
// under it is allowed only if n units would remain after it, and a denied call's
// RetryAfter is the time until it fits with its reserve (Never when cost + n never
// fits). n is 0 (none) to the limit; Validate refuses others. Priorities names the
// reserves. rlserver and the embedded backend decide it; NewLua's refuses it.
func (l Limit) WithReserve(n int) Limit {
	l.reserve = int64(n)
	return l
}

// Validate reports what is wrong with l, wrapping ErrBadLimit, or nil.
func (l Limit) Validate() error {
	if l.kind == 0 {
		return fmt.Errorf("%w: the zero Limit; build one with Fixed, Slide, Log, Token, TokenRate, GCRA or Leaky", ErrBadLimit)
	}
	name := l.kind.Command()
	r := l.request(0, false)
	if lo, hi := r.Range(algo.ArgLimit); l.n < lo || l.n > hi {
		return fmt.Errorf("%w: %s %s must be between %d and %d, got %d", ErrBadLimit, name, countName[l.kind], lo, hi, l.n)
	}
	if lo, hi := windowRange(r); l.per < lo || l.per > hi || l.per%minWindowUnit != 0 {
		return fmt.Errorf("%w: %s window must be a whole number of milliseconds from %v to %v (365 days), got %v",
			ErrBadLimit, name, lo, hi, l.per)
	}
	if lo, hi := r.Range(algo.ArgReserve); l.reserve < lo || l.reserve > hi {
		return fmt.Errorf("%w: %s reserve must be between %d and %d, got %d", ErrBadLimit, name, lo, hi, l.reserve)
	}
	var arg algo.Arg
	switch l.kind {
	case algo.KindToken:
		arg = algo.ArgRate
	case algo.KindGCRA:
		arg = algo.ArgBurst
	case algo.KindLeaky:
		arg = algo.ArgQueue
	default:
		return nil
	}
	if lo, hi := r.Range(arg); l.option < lo || l.option > hi {
		return fmt.Errorf("%w: %s %s must be between %d and %d, got %d", ErrBadLimit, name, optionName[l.kind], lo, hi, l.option)
	}
	if err := l.request(0, false).CheckSchedule(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadLimit, name, err)
	}
	return nil
}

// countName and optionName name a Limit's numbers in messages, per algorithm.
var (
	countName = [...]string{algo.KindFixed: "limit", algo.KindSlide: "limit", algo.KindLog: "limit",
		algo.KindToken: "capacity", algo.KindGCRA: "rate", algo.KindLeaky: "rate"}
	optionName = [...]string{algo.KindToken: "rate", algo.KindGCRA: "burst", algo.KindLeaky: "queue"}
)

// request is the call of l at cost n, with PEEK if peek: what every backend decides.
func (l Limit) request(n int64, peek bool) algo.Request {
	r := algo.Request{Kind: l.kind, Limit: l.n, Window: l.per.Microseconds(), Cost: n, Peek: peek, Reserve: l.reserve}
	switch l.kind {
	case algo.KindToken:
		r.Rate = l.option
	case algo.KindGCRA:
		r.Burst = l.option
	case algo.KindLeaky:
		r.Queue = l.option
	}
	return r
}

// checkCost reports a cost out of the contract's range for l, wrapping ErrBadLimit.
func (l Limit) checkCost(n int) error {
	if lo, hi := l.request(0, false).Range(algo.ArgCost); int64(n) < lo || int64(n) > hi {
		return fmt.Errorf("%w: %s cost must be between %d and %d, got %d", ErrBadLimit, l.kind.Command(), lo, hi, n)
	}
	if err := l.request(int64(n), false).CheckSchedule(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadLimit, l.kind.Command(), err)
	}
	return nil
}
