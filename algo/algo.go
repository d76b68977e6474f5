// Package algo is the math of rlserver's rate-limiting algorithms and nothing else.
//
// Every algorithm is a pure function of (stored state, request, now) that returns the
// new state and a Decision. Nothing here reads a clock, locks, or does I/O: time is
// passed in as microseconds since the Unix epoch, as golang.org/x/time/rate passes it,
// so tests never sleep. The wire contract is ../shared/spec/COMMANDS.md.
package algo

// Kind names an algorithm. A key holds the state of exactly one kind.
type Kind uint8

// The algorithms, one per command.
const (
	KindFixed    Kind = iota + 1 // RL.FIXED: fixed window
	KindSlide                    // RL.SLIDE: sliding window counter
	KindLog                      // RL.LOG: sliding window log
	KindToken                    // RL.TOKEN: token bucket
	KindGCRA                     // RL.GCRA: generic cell rate algorithm
	KindLeaky                    // RL.LEAKY: leaky bucket as a queue
	KindThrottle                 // CL.THROTTLE: redis-cell's GCRA
)

// Request is one parsed call. Durations are in microseconds.
type Request struct {
	Kind   Kind
	Limit  int64 // L: the limit, the bucket's capacity (TOKEN), or max_burst (CL.THROTTLE)
	Window int64 // W in µs: window_ms·1000, or period_s·1e6 for CL.THROTTLE
	Rate   int64 // TOKEN: tokens refilled per window; CL.THROTTLE: count_per_period
	Burst  int64 // GCRA: burst b
	Queue  int64 // LEAKY: queue q
	Cost   int64 // c: COST, or CL.THROTTLE's quantity
	Peek   bool  // decide, but write nothing
}

// Decision is the answer to one call: the five wire fields, and what the store must do.
type Decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64 // ms (CL.THROTTLE: s); see the contract for 0 and -1
	ResetAfter int64 // ms (CL.THROTTLE: s)

	// Write is true when the state changed and must be stored: an allowed call with
	// cost > 0 that is not PEEK. A limited call consumes nothing and writes nothing.
	Write bool
	// FreshAt is the moment (µs) the written state is fresh again, when the key can be
	// removed. FreshAt <= now means the new state is already fresh: delete the key.
	FreshAt int64
}
