package rlcmd

import (
	"bytes"

	"github.com/rlserver/rlserver/algo"
)

// ParseRequest reads the arguments of an RL.* command or CL.THROTTLE that follow the
// key (positional, then options in any order, case-insensitive, the last of a repeated
// option winning) and validates them. Errors are Redis error replies, whole, e.g.
// "ERR limit must be an integer between 1 and 1000000000".
//
// RL.* take limit and window_ms, then COST n, PEEK, REFUND n and RESERVE n (0 to the
// limit: algo.Request.Reserve), plus RATE r (RL.TOKEN), BURST b
// (RL.GCRA) or QUEUE q (RL.LEAKY); any other option is "ERR syntax error". RL.LOG's limit
// is at most maxLogLimit (capped at 1e9). CL.THROTTLE takes max_burst (0..1e9),
// count_per_period (1..1e9), period_s (1..31536000, a year) and an optional quantity
// (0..1e9, default 1), and no options: like redis-cell, any other count of arguments is
// an arity error, but REFUND n may follow period_s instead of a quantity. REFUND n
// (1 to COST's bound; CL.THROTTLE: 1 to 1e9) gives back instead of spending
// (algo.Request.Refund, Cost 0) and takes neither COST nor PEEK, nor RESERVE. Integers are spelled
// as Redis reads them: optional '-', no '+', no leading zeros, no spaces.
func ParseRequest(kind algo.Kind, args [][]byte, maxLogLimit int64) (algo.Request, error) {
	switch {
	case kind == algo.KindThrottle:
		return parseThrottle(args)
	case kind < algo.KindFixed || kind > algo.KindThrottle:
		return algo.Request{}, errUnknownKind
	case len(args) < 2:
		return algo.Request{}, arityError(kind)
	}
	r := algo.Request{Kind: kind, Cost: 1}
	minL, maxL := r.Range(algo.ArgLimit) // every bound is algo's (Request.Range)
	if kind == algo.KindLog {
		maxL = min(maxLogLimit, maxL)
	}
	var ok bool
	if r.Limit, ok = ParseIntIn(args[0], minL, maxL); !ok {
		if kind == algo.KindLog {
			return algo.Request{}, limitError(maxL)
		}
		return algo.Request{}, errLimit
	}
	minW, maxW := r.Range(algo.ArgWindow)
	ms, ok := ParseIntIn(args[1], minW/1000, maxW/1000)
	if !ok {
		return algo.Request{}, errWindow
	}
	r.Window = ms * 1000

	costGiven := false
	for i := 2; i < len(args); i++ {
		opt := args[i]
		if bytes.EqualFold(opt, []byte("PEEK")) {
			r.Peek = true
			continue
		}
		var dst *int64
		var arg algo.Arg
		var bad error
		switch {
		case bytes.EqualFold(opt, []byte("COST")):
			dst, arg, costGiven = &r.Cost, algo.ArgCost, true
		case bytes.EqualFold(opt, []byte("REFUND")):
			dst, arg = &r.Refund, algo.ArgRefund
		case bytes.EqualFold(opt, []byte("RESERVE")):
			dst, arg = &r.Reserve, algo.ArgReserve
		case kind == algo.KindToken && bytes.EqualFold(opt, []byte("RATE")):
			dst, arg, bad = &r.Rate, algo.ArgRate, errRate
		case kind == algo.KindGCRA && bytes.EqualFold(opt, []byte("BURST")):
			dst, arg, bad = &r.Burst, algo.ArgBurst, errBurst
		case kind == algo.KindLeaky && bytes.EqualFold(opt, []byte("QUEUE")):
			dst, arg, bad = &r.Queue, algo.ArgQueue, errQueue
		default:
			return algo.Request{}, ErrSyntax
		}
		lo, hi := r.Range(arg)
		if i+1 == len(args) {
			return algo.Request{}, ErrSyntax // the option's value is missing
		}
		i++
		if *dst, ok = ParseIntIn(args[i], lo, hi); !ok {
			switch {
			case dst == &r.Refund:
				return algo.Request{}, refundError(hi)
			case dst == &r.Reserve:
				return algo.Request{}, reserveError(hi)
			case bad == nil:
				return algo.Request{}, costError(hi)
			}
			return algo.Request{}, bad
		}
	}
	if r.Refund > 0 {
		if costGiven || r.Peek {
			return algo.Request{}, errRefundAlone
		}
		if r.Reserve > 0 {
			return algo.Request{}, errRefundReserve
		}
		r.Cost = 0 // the schedule's bound is on what is spent: a refund spends nothing
	}
	return r, scheduleError(r, r.CheckSchedule())
}

// parseThrottle reads CL.THROTTLE's max_burst count_per_period period_s [quantity].
func parseThrottle(args [][]byte) (algo.Request, error) {
	refund := len(args) == 5 && bytes.EqualFold(args[3], []byte("REFUND"))
	if len(args) == 6 && bytes.EqualFold(args[4], []byte("REFUND")) {
		return algo.Request{}, errRefundAlone // a quantity and a refund
	}
	if len(args) != 3 && len(args) != 4 && !refund {
		return algo.Request{}, arityError(algo.KindThrottle)
	}
	r := algo.Request{Kind: algo.KindThrottle, Cost: 1, Cell: true}
	var ok bool
	lo, hi := r.Range(algo.ArgLimit) // every bound is algo's (Request.Range)
	if r.Limit, ok = ParseIntIn(args[0], lo, hi); !ok {
		return algo.Request{}, errMaxBurst
	}
	lo, hi = r.Range(algo.ArgRate)
	if r.Rate, ok = ParseIntIn(args[1], lo, hi); !ok {
		return algo.Request{}, errCount
	}
	lo, hi = r.Range(algo.ArgWindow)
	period, ok := ParseIntIn(args[2], lo/1_000_000, hi/1_000_000)
	if !ok {
		return algo.Request{}, errPeriod
	}
	r.Window = period * 1_000_000
	switch {
	case refund:
		lo, hi = r.Range(algo.ArgRefund)
		if r.Refund, ok = ParseIntIn(args[4], lo, hi); !ok {
			return algo.Request{}, refundError(hi)
		}
		r.Cost = 0
	case len(args) == 4:
		lo, hi = r.Range(algo.ArgCost)
		if r.Cost, ok = ParseIntIn(args[3], lo, hi); !ok {
			return algo.Request{}, errQuantity
		}
	}
	return r, scheduleError(r, r.CheckSchedule())
}

// ParseGCRA reads the arguments after the key of Redis 8.8's native command,
// GCRA key max_burst tokens_per_period period [TOKENS n], and checks them as Redis's
// gcraCommand does, in its order and with its error texts: max_burst 0 to 2^63-1,
// tokens_per_period and n 1 to 2^63-1 (integers as Redis reads them, see ParseIntIn),
// period a float as Redis reads one (parseRedisDouble), 0 < period < 1e12 seconds, the
// one option TOKENS (any case; any other word is a syntax error). The request, with
// Redis's overflow checks, is algo.NativeGCRA's.
func ParseGCRA(args [][]byte) (algo.Request, error) {
	if len(args) < 3 || len(args) > 5 {
		return algo.Request{}, errGCRAArity
	}
	r := algo.Request{Kind: algo.KindGCRA, Cost: 1, Cell: true}
	var ok bool
	if r.Limit, ok = ParseInt(args[0]); !ok || r.Limit < 0 {
		return algo.Request{}, errGCRAMaxBurst
	}
	if r.Rate, ok = ParseInt(args[1]); !ok {
		return algo.Request{}, errGCRANotInt
	} else if r.Rate < 1 {
		return algo.Request{}, errGCRAPositive
	}
	if r.Period, ok = parseRedisDouble(args[2]); !ok {
		return algo.Request{}, errGCRAFloat
	}
	if !(r.Period > 0 && r.Period < 1e12) {
		return algo.Request{}, errGCRAPeriod
	}
	if len(args) > 3 {
		switch {
		case !bytes.EqualFold(args[3], []byte("TOKENS")):
			return algo.Request{}, ErrSyntax
		case len(args) == 4:
			return algo.Request{}, errGCRAMissing
		}
		if r.Cost, ok = ParseInt(args[4]); !ok {
			return algo.Request{}, errGCRANotInt
		} else if r.Cost < 1 {
			return algo.Request{}, errGCRAPositive
		}
	}
	native, err := algo.NativeGCRA(r.Limit, r.Rate, r.Period, r.Cost)
	if err != nil {
		return algo.Request{}, scheduleError(r, err)
	}
	return native, nil
}
