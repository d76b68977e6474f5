package algo

// API skeleton fixed by the lead; the algo owner replaces this file with one file per
// algorithm (fixed.go, slide.go, log.go, token.go, gcra.go, leaky.go, throttle.go, parse.go)
// keeping these exact signatures.

// String is the name TYPE answers: "rl.fixed", "rl.slide", "rl.log", "rl.token",
// "rl.gcra", "rl.leaky", "cl.throttle".
func (k Kind) String() string { panic("todo") }

// Command is the command's name in lower case as Redis spells it in errors: "rl.fixed", ..., "cl.throttle".
func (k Kind) Command() string { panic("todo") }

// Parse reads the arguments that follow the key (positional, then options in any order,
// case-insensitive) and validates them. Errors are complete Redis error lines, e.g.
// "ERR limit must be an integer between 1 and 1000000000".
func Parse(kind Kind, args [][]byte, maxLogLimit int64) (Request, error) { panic("todo") }

// FixedState is RL.FIXED's state. The zero value is a fresh key.
type FixedState struct{ Window, Count int64 }

// Fixed decides one RL.FIXED call.
func Fixed(s FixedState, r Request, now int64) (FixedState, Decision) { panic("todo") }

// SlideState is RL.SLIDE's state. The zero value is a fresh key.
type SlideState struct{ Window, Cur, Prev int64 }

// Slide decides one RL.SLIDE call.
func Slide(s SlideState, r Request, now int64) (SlideState, Decision) { panic("todo") }

// LogEntry is one admitted request of RL.LOG.
type LogEntry struct{ TS, Cost int64 }

// Log decides one RL.LOG call; entries are oldest first and may be reused for the result.
func Log(entries []LogEntry, r Request, now int64) ([]LogEntry, Decision) { panic("todo") }

// TokenState is RL.TOKEN's state. The zero value is a fresh (full) bucket.
type TokenState struct {
	Tokens float64
	TS     int64
}

// Token decides one RL.TOKEN call.
func Token(s TokenState, r Request, now int64) (TokenState, Decision) { panic("todo") }

// GCRA decides one RL.GCRA call; tat is the theoretical arrival time in µs (0 = fresh).
func GCRA(tat float64, r Request, now int64) (float64, Decision) { panic("todo") }

// Leaky decides one RL.LEAKY call; tat as in GCRA.
func Leaky(tat float64, r Request, now int64) (float64, Decision) { panic("todo") }

// Throttle decides one CL.THROTTLE call; tat as in GCRA. Reply fields are in seconds.
func Throttle(tat float64, r Request, now int64) (float64, Decision) { panic("todo") }
