package algo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Argument ranges. Every bound keeps the arithmetic far from overflow: limit·1000 and
// window_ms·1000 fit easily in int64, and CL.THROTTLE's period_s·1e6 stays a year.
const (
	maxLimit    = 1_000_000_000  // limit, RATE, BURST, QUEUE, max_burst, count_per_period, quantity
	maxWindowMs = 31_536_000_000 // window_ms: one year
	maxPeriodS  = 31_536_000     // period_s: one year
	costPerUnit = 1000           // COST may reach limit·1000
)

// Errors with a fixed text; those naming a computed bound are built where they occur.
var (
	errSyntax      = errors.New("ERR syntax error")
	errLimit       = errors.New("ERR limit must be an integer between 1 and 1000000000")
	errWindow      = errors.New("ERR window_ms must be an integer between 1 and 31536000000")
	errRate        = errors.New("ERR rate must be an integer between 1 and 1000000000")
	errBurst       = errors.New("ERR burst must be an integer between 1 and 1000000000")
	errQueue       = errors.New("ERR queue must be an integer between 0 and 1000000000")
	errMaxBurst    = errors.New("ERR max_burst must be an integer between 0 and 1000000000")
	errCount       = errors.New("ERR count_per_period must be an integer between 1 and 1000000000")
	errPeriod      = errors.New("ERR period_s must be an integer between 1 and 31536000")
	errQuantity    = errors.New("ERR quantity must be an integer between 0 and 1000000000")
	errUnknownKind = errors.New("ERR unknown rate limiter kind")
	errArity       = arityErrors()
	errAllArity    = errors.New("ERR wrong number of arguments for 'rl.all' command")
	errAllTooMany  = fmt.Errorf("ERR RL.ALL takes at most %d rules", MaxRules)
	errAllUnknown  = errors.New("ERR unknown algorithm in RL.ALL: " + allExpected)
	errLeaseMs     = errors.New("ERR lease_ms must be an integer between 1 and 31536000000")
	errLeaseID     = errors.New("ERR lease id must be 1 to 128 bytes")
	errRenewArity  = errors.New("ERR wrong number of arguments for 'rl.renew' command")

	errBurstSpan    = errors.New("ERR burst × window_ms / limit must be at most 100 years")
	errQueueSpan    = errors.New("ERR queue × window_ms / limit must be at most 100 years")
	errCostSpan     = errors.New("ERR cost × window_ms / limit must be at most 100 years")
	errMaxBurstSpan = errors.New("ERR (max_burst + 1) × period_s / count_per_period must be at most 100 years")
)

// The errors of Redis 8.8's GCRA, in Redis's words (src/gcra.c and the argument helpers of
// src/object.c it calls), so that code written against Redis reads the same text; then
// rlserver's own bound on the tolerance.
var (
	errGCRAArity     = errors.New("ERR wrong number of arguments for 'gcra' command")
	errGCRAMaxBurst  = errors.New("ERR value is out of range, must be positive")
	errGCRANotInt    = errors.New("ERR value is not an integer or out of range")
	errGCRAPositive  = errors.New("ERR value is out of range, value must between 1 and 9223372036854775807")
	errGCRAFloat     = errors.New("ERR value is not a valid float")
	errGCRAPeriod    = errors.New("ERR period must be > 0 and < 1e12")
	errGCRAMissing   = errors.New("ERR Missing TOKENS value")
	errGCRATokensOvf = errors.New("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow")
	errGCRABurstOvf  = errors.New("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow")
	errGCRASpan      = errors.New("ERR (max_burst + 1) × period / tokens_per_period must be at most 100 years")
)

// arityErrors builds, per Kind, the error Redis gives for a wrong argument count.
func arityErrors() [len(kindNames)]error {
	var errs [len(kindNames)]error
	for k := range errs {
		errs[k] = fmt.Errorf("ERR wrong number of arguments for '%s' command", Kind(k).Command())
	}
	return errs
}

// Parse reads the arguments that follow the key (positional, then options in any order,
// case-insensitive, the last of a repeated option winning) and validates them. Errors are
// complete Redis error lines, e.g. "ERR limit must be an integer between 1 and 1000000000".
//
// RL.* take limit and window_ms, then COST n and PEEK, plus RATE r (RL.TOKEN), BURST b
// (RL.GCRA) or QUEUE q (RL.LEAKY); any other option is "ERR syntax error". RL.LOG's limit
// is at most maxLogLimit (capped at 1e9). CL.THROTTLE takes max_burst (0..1e9),
// count_per_period (1..1e9), period_s (1..31536000, a year) and an optional quantity
// (0..1e9, default 1), and no options: like redis-cell, any other count of arguments is
// an arity error. Integers are spelled as Redis reads them: optional '-', no '+', no
// leading zeros, no spaces.
func Parse(kind Kind, args [][]byte, maxLogLimit int64) (Request, error) {
	switch {
	case kind == KindThrottle:
		return parseThrottle(args)
	case kind < KindFixed || kind > KindThrottle:
		return Request{}, errUnknownKind
	case len(args) < 2:
		return Request{}, errArity[kind]
	}
	r := Request{Kind: kind, Cost: 1}
	maxL := int64(maxLimit)
	if kind == KindLog {
		maxL = min(maxLogLimit, maxLimit)
	}
	var ok bool
	if r.Limit, ok = parseRange(args[0], 1, maxL); !ok {
		if kind == KindLog {
			return Request{}, fmt.Errorf("ERR limit must be an integer between 1 and %d", maxL)
		}
		return Request{}, errLimit
	}
	ms, ok := parseRange(args[1], 1, maxWindowMs)
	if !ok {
		return Request{}, errWindow
	}
	r.Window = ms * 1000

	for i := 2; i < len(args); i++ {
		opt := args[i]
		if bytes.EqualFold(opt, []byte("PEEK")) {
			r.Peek = true
			continue
		}
		var dst *int64
		var lo, hi int64
		var bad error
		switch {
		case bytes.EqualFold(opt, []byte("COST")):
			dst, lo, hi = &r.Cost, 0, r.Limit*costPerUnit
		case kind == KindToken && bytes.EqualFold(opt, []byte("RATE")):
			dst, lo, hi, bad = &r.Rate, 1, maxLimit, errRate
		case kind == KindGCRA && bytes.EqualFold(opt, []byte("BURST")):
			dst, lo, hi, bad = &r.Burst, 1, maxLimit, errBurst
		case kind == KindLeaky && bytes.EqualFold(opt, []byte("QUEUE")):
			dst, lo, hi, bad = &r.Queue, 0, maxLimit, errQueue
		default:
			return Request{}, errSyntax
		}
		if i+1 == len(args) {
			return Request{}, errSyntax // the option's value is missing
		}
		i++
		if *dst, ok = parseRange(args[i], lo, hi); !ok {
			if bad == nil {
				return Request{}, fmt.Errorf("ERR cost must be an integer between 0 and %d", hi)
			}
			return Request{}, bad
		}
	}
	return r, r.CheckSchedule()
}

// CheckSchedule reports a request whose schedule would run more than 100 years ahead
// of now, which the integer state of the GCRA family and RL.LEAKY does not hold (see
// gcra.go): the tolerance T·b of RL.GCRA and CL.THROTTLE, the queue T·q and a cost's
// share T·c of RL.LEAKY. Parse checks it; it is for requests built otherwise.
func (r Request) CheckSchedule() error {
	t := r.interval()
	over := func(n int64) bool { return n > maxSchedule/t }
	switch r.Kind {
	case KindGCRA:
		switch {
		case !over(r.burst()):
		case r.Cell:
			return errGCRASpan
		default:
			return errBurstSpan
		}
	case KindThrottle:
		if over(r.burst()) {
			return errMaxBurstSpan
		}
	case KindLeaky:
		if over(r.Queue) {
			return errQueueSpan
		}
		if over(r.Cost) {
			return errCostSpan
		}
	}
	return nil
}

// parseThrottle reads CL.THROTTLE's max_burst count_per_period period_s [quantity].
func parseThrottle(args [][]byte) (Request, error) {
	if len(args) != 3 && len(args) != 4 {
		return Request{}, errArity[KindThrottle]
	}
	r := Request{Kind: KindThrottle, Cost: 1, Cell: true}
	var ok bool
	if r.Limit, ok = parseRange(args[0], 0, maxLimit); !ok {
		return Request{}, errMaxBurst
	}
	if r.Rate, ok = parseRange(args[1], 1, maxLimit); !ok {
		return Request{}, errCount
	}
	period, ok := parseRange(args[2], 1, maxPeriodS)
	if !ok {
		return Request{}, errPeriod
	}
	r.Window = period * 1_000_000
	if len(args) == 4 {
		if r.Cost, ok = parseRange(args[3], 0, maxLimit); !ok {
			return Request{}, errQuantity
		}
	}
	return r, r.CheckSchedule()
}

// ParseGCRA reads the arguments after the key of Redis 8.8's native command,
// GCRA key max_burst tokens_per_period period [TOKENS n], and checks them as Redis's
// gcraCommand does, in its order and with its error texts: max_burst 0 to 2^63-1,
// tokens_per_period and n 1 to 2^63-1 (integers as Redis reads them, see parseRange),
// period a float as Redis reads one (parseRedisDouble), 0 < period < 1e12 seconds, the
// one option TOKENS (any case; any other word is a syntax error), and Redis's overflow
// checks on T·n and T·(max_burst+1). Then rlserver's own bound: the tolerance
// T·(max_burst+1) must be at most 100 years (CheckSchedule), where Redis would go on to
// 292,000 years of int64 µs.
//
// The request is a KindGCRA one, so that GCRA and RL.GCRA share a key's state:
// Burst = max_burst+1 (Redis keeps 2^63-1 as it is), Interval = T, Cost = n, Cell set
// (Redis's reply is redis-cell's), Limit = max_burst, Rate = tokens_per_period and
// Period = period as given, for the Lua twin, which derives T as Redis does.
func ParseGCRA(args [][]byte) (Request, error) {
	if len(args) < 3 || len(args) > 5 {
		return Request{}, errGCRAArity
	}
	r := Request{Kind: KindGCRA, Cost: 1, Cell: true}
	var ok bool
	if r.Limit, ok = parseInt64(args[0]); !ok || r.Limit < 0 {
		return Request{}, errGCRAMaxBurst
	}
	if r.Rate, ok = parseInt64(args[1]); !ok {
		return Request{}, errGCRANotInt
	} else if r.Rate < 1 {
		return Request{}, errGCRAPositive
	}
	if r.Period, ok = parseRedisDouble(args[2]); !ok {
		return Request{}, errGCRAFloat
	}
	if !(r.Period > 0 && r.Period < 1e12) {
		return Request{}, errGCRAPeriod
	}
	if len(args) > 3 {
		switch {
		case !bytes.EqualFold(args[3], []byte("TOKENS")):
			return Request{}, errSyntax
		case len(args) == 4:
			return Request{}, errGCRAMissing
		}
		if r.Cost, ok = parseInt64(args[4]); !ok {
			return Request{}, errGCRANotInt
		} else if r.Cost < 1 {
			return Request{}, errGCRAPositive
		}
	}
	r.Burst = r.Limit
	if r.Burst < math.MaxInt64 {
		r.Burst++
	}
	// Redis: (long long)(period * 1000000. / tokens_per_period + 0.5), at least 1. The
	// product feeds a division, never an addition, so no fused multiply-add can change it.
	r.Interval = max(1, int64(r.Period*1e6/float64(r.Rate)+0.5))
	switch {
	case r.Interval > math.MaxInt64/r.Cost:
		return Request{}, errGCRATokensOvf
	case r.Interval > math.MaxInt64/r.Burst:
		return Request{}, errGCRABurstOvf
	}
	return r, r.CheckSchedule()
}

// parseInt64 parses b as Redis's string2ll does: an optional '-', then decimal digits
// without a leading zero ("0" alone excepted), within int64; no '+', no spaces.
func parseInt64(b []byte) (int64, bool) {
	digits := bytes.TrimPrefix(b, []byte("-"))
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || digits[0] == '0' && len(b) > 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// parseRedisDouble parses b as Redis's string2d does: C's strtod over the whole
// argument, refusing an empty one, leading white space, anything left over, overflow
// to ±Inf, underflow to 0 and NaN. strtod's syntax is Go's but for two things that
// are handled here: a hexadecimal number needs no binary exponent ("0x10" is 16), and
// Go's digit separators ("1_000") are not numbers to C. "inf" and "infinity" (any case,
// signed) are numbers to both.
func parseRedisDouble(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || strings.ContainsRune(s, '_') {
		return 0, false
	}
	unsigned := strings.TrimLeft(s, "+-")
	hex := len(unsigned) > 1 && unsigned[0] == '0' && (unsigned[1] == 'x' || unsigned[1] == 'X')
	mantissa, exp := unsigned, "eE"
	if hex {
		mantissa, exp = unsigned[2:], "pP"
		if !strings.ContainsAny(mantissa, exp) {
			s += "p0"
		}
	}
	if i := strings.IndexAny(mantissa, exp); i >= 0 {
		mantissa = mantissa[:i]
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil, math.IsNaN(v): // overflow is an error here too
		return 0, false
	case v == 0 && strings.Trim(mantissa, "0.") != "":
		return 0, false // a nonzero number that underflowed: strtod's ERANGE with 0
	}
	return v, true
}

// parseRange parses b as Redis parses an integer argument and reports whether it is
// one within [lo, hi]. hi must be below 1e18, so 18 digits never overflow.
func parseRange(b []byte, lo, hi int64) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	// No digit, a leading zero ("0" alone excepted) or more digits than any bound has.
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, v >= lo && v <= hi
}
