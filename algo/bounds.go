package algo

// Arg names an argument of a rate-limiting request, for Range.
type Arg uint8

// The arguments whose range the wire contract fixes (docs/commands.md).
const (
	ArgLimit   Arg = iota // Request.Limit (what it means by Kind: Request's table)
	ArgWindow             // Request.Window, µs
	ArgRate               // Request.Rate
	ArgBurst              // Request.Burst
	ArgQueue              // Request.Queue
	ArgCost               // Request.Cost
	ArgRefund             // Request.Refund
	ArgReserve            // Request.Reserve, LeaseRequest.Reserve
	ArgSlice              // Request.Slice
)

// The contract's bounds. Each keeps the arithmetic far from overflow: a count·1000 and
// a year in µs fit easily in int64.
const (
	maxCount    = 1_000_000_000      // every count
	maxWindow   = 31_536_000_000_000 // µs: a window or period of one year
	costPerUnit = 1000               // COST may reach Limit·costPerUnit
)

// Range is the closed range [lo, hi] that argument a of a request of r.Kind may take,
// the one rule every front checks its arguments by (the RESP parser, the Go client).
// Counts are 1 to 1e9 (QUEUE and CL.THROTTLE's max_burst and quantity from 0); a window
// is 1 ms to a year of whole ms, CL.THROTTLE's period 1 s to a year of whole s; COST is
// 0 to Limit·1000, REFUND 1 to Limit·1000 (CL.THROTTLE's 1 to 1e9), RESERVE 0
// to Limit and a slice's count 1 to Limit, so they read r.Limit. RL.LOG's limit is capped lower by
// the store's MaxLogLimit, a setting of the server, not of the contract.
func (r Request) Range(a Arg) (lo, hi int64) {
	throttle := r.Kind == KindThrottle
	switch a {
	case ArgLimit:
		if throttle {
			return 0, maxCount
		}
		return 1, maxCount
	case ArgWindow:
		if throttle {
			return 1e6, maxWindow
		}
		return 1000, maxWindow
	case ArgQueue:
		return 0, maxCount
	case ArgCost:
		if throttle {
			return 0, maxCount
		}
		return 0, r.Limit * costPerUnit
	case ArgReserve:
		return 0, r.Limit
	case ArgSlice:
		return 1, r.Limit
	case ArgRefund:
		if throttle {
			return 1, maxCount
		}
		return 1, r.Limit * costPerUnit
	}
	return 1, maxCount // ArgRate, ArgBurst
}
