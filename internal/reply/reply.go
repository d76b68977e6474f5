// Package reply holds the error replies with which rlserver refuses a rate-limiting
// request as given (its arguments, its key, its rules), in the words of
// docs/commands.md: package resp writes them, and package client recognises them
// (BadRequest), so both read one list and cannot drift apart.
//
// The wire keeps Redis's convention, an "ERR" prefix for every such reply, so that any
// Redis client reads them; but Redis also answers "ERR" for conditions of the server
// (max number of clients reached, unknown command on a plain Redis). The reply's
// leading word cannot tell the two apart, a word search in the text ("must be") is
// fooled by new wordings, and a new prefix would break Redis clients: the exact set is
// the one robust test.
package reply

import "strings"

// Error is an error whose text is an error reply, whole and without its '-': the
// server writes Text as it is. A pointer, so that storing one in an error allocates
// nothing: parsers pick one of the package-level errors on the hot path.
type Error struct {
	Text string // the reply, e.g. "ERR syntax error"
}

// Error returns the reply's text.
func (e *Error) Error() string { return e.Text }

// Replies with a fixed text.
const (
	Syntax      = "ERR syntax error"
	Limit       = "ERR limit must be an integer between 1 and 1000000000"
	Window      = "ERR window_ms must be an integer between 1 and 31536000000"
	Rate        = "ERR rate must be an integer between 1 and 1000000000"
	Burst       = "ERR burst must be an integer between 1 and 1000000000"
	Queue       = "ERR queue must be an integer between 0 and 1000000000"
	MaxBurst    = "ERR max_burst must be an integer between 0 and 1000000000"
	Count       = "ERR count_per_period must be an integer between 1 and 1000000000"
	Period      = "ERR period_s must be an integer between 1 and 31536000"
	Quantity    = "ERR quantity must be an integer between 0 and 1000000000"
	UnknownKind = "ERR unknown rate limiter kind"
	AllTooMany  = "ERR RL.ALL takes at most 64 rules"
	AllUnknown  = "ERR unknown algorithm in RL.ALL: " + AllExpected
	LeaseMs     = "ERR lease_ms must be an integer between 1 and 31536000000"
	LeaseID     = "ERR lease id must be 1 to 128 bytes"
	RefundAlone = "ERR REFUND takes neither COST nor PEEK"
	// RefundReserve: a refund always admits, so a reserve would say nothing.
	RefundReserve = "ERR REFUND takes no RESERVE"

	// RL.SLICE's grammar: the kinds it refuses say why.
	SliceUnknown = "ERR unknown algorithm in RL.SLICE: expected FIXED, SLIDE, TOKEN or GCRA"
	SliceLog     = "ERR RL.SLICE takes no LOG: a log entry's time is its request's, and a slice is spent before its requests come"
	SliceLeaky   = "ERR RL.SLICE takes no LEAKY: its queue's order is the point, and a slice's requests would jump it"
	SliceOption  = "ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give back with the limiter's REFUND"

	// RL.POLICY's grammar.
	NoDescriptor  = "ERR RL.POLICY needs at least one DESCRIPTOR"
	EntryPairs    = "ERR a descriptor's entries are key value pairs"
	NoEntries     = "ERR a DESCRIPTOR needs at least one key value pair"
	PolicyLimit   = "ERR requests_per_unit must be an integer between 1 and 4294967295"
	PolicyUnit    = "ERR unit must be second, minute, hour, day, week, month or year"
	HitsAndRefund = "ERR a DESCRIPTOR takes HITS or REFUND, not both"

	// RL.RESOLVE's grammar: RL.POLICY's, less what spends.
	ResolveNoDescriptor = "ERR RL.RESOLVE needs at least one DESCRIPTOR"
	ResolveHits         = "ERR RL.RESOLVE spends nothing: it takes no HITS or REFUND"

	// The 100-year bound on a schedule (algo.CheckSchedule), in each command's terms.
	BurstSpan    = "ERR burst × window_ms / limit must be at most 100 years"
	QueueSpan    = "ERR queue × window_ms / limit must be at most 100 years"
	CostSpan     = "ERR cost × window_ms / limit must be at most 100 years"
	MaxBurstSpan = "ERR (max_burst + 1) × period_s / count_per_period must be at most 100 years"

	// Redis 8.8's GCRA, in Redis's words (src/gcra.c and the argument helpers of
	// src/object.c it calls), so that code written against Redis reads the same text;
	// then rlserver's own bound on the tolerance.
	GCRAMaxBurst  = "ERR value is out of range, must be positive"
	GCRANotInt    = "ERR value is not an integer or out of range"
	GCRAPositive  = "ERR value is out of range, value must between 1 and 9223372036854775807"
	GCRAFloat     = "ERR value is not a valid float"
	GCRAPeriod    = "ERR period must be > 0 and < 1e12"
	GCRAMissing   = "ERR Missing TOKENS value"
	GCRATokensOvf = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"
	GCRABurstOvf  = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"

	// The store's refusals of a key or of rules.
	KeyTooLong = "ERR key is longer than 268435455 bytes"
	LogLimit   = "ERR RL.LOG limit is above the server's max-log-limit"
	SameKey    = "ERR RL.ALL names the same key in two rules"

	// AllExpected ends the replies to an unknown RL.ALL algorithm.
	AllExpected = "expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"
)

// The starts of the replies that name a computed bound, an argument or a command.
const (
	limitUpTo   = "ERR limit must be an integer between 1 and "
	costUpTo    = "ERR cost must be an integer between 0 and "
	refundUpTo  = "ERR refund must be an integer between 1 and "
	reserveUpTo = "ERR reserve must be an integer between 0 and "
	countUpTo   = "ERR count must be an integer between 1 and "
	hitsBetween = "ERR hits must be an integer between "
	invalid     = "ERR invalid request: "
	arityOf     = "ERR wrong number of arguments for '"
	unknownAlgo = "ERR unknown algorithm '"
)

// LimitUpTo is the reply to a limit out of 1..most (RL.LOG, RL.ACQUIRE: the server's
// max-log-limit).
func LimitUpTo(most string) string { return limitUpTo + most }

// CostUpTo is the reply to a COST out of 0..most (limit·1000).
func CostUpTo(most string) string { return costUpTo + most }

// RefundUpTo is the reply to a REFUND out of 1..most (COST's bound).
func RefundUpTo(most string) string { return refundUpTo + most }

// ReserveUpTo is the reply to a RESERVE out of 0..most (the limit).
func ReserveUpTo(most string) string { return reserveUpTo + most }

// CountUpTo is the reply to an RL.SLICE count out of 1..most (the limit).
func CountUpTo(most string) string { return countUpTo + most }

// HitsBetween is the reply to an RL.POLICY HITS out of lo..most.
func HitsBetween(lo, most string) string { return hitsBetween + lo + " and " + most }

// InvalidRequest is the reply to an RL.POLICY request the policy engine refuses
// (policy.ErrInvalidRequest), with its reason.
func InvalidRequest(reason string) string { return invalid + reason }

// Arity is Redis's reply to a wrong argument count for command, lower case.
func Arity(command string) string { return arityOf + command + "' command" }

// UnknownAlgorithm is the reply to an RL.ALL whose first word is no algorithm, echoed
// as Redis echoes an unknown command's name.
func UnknownAlgorithm(word string) string {
	return unknownAlgo + word + "' in RL.ALL: " + AllExpected
}

// fixed is every reply with a fixed text, for BadRequest.
var fixed = map[string]bool{
	Syntax: true, Limit: true, Window: true, Rate: true, Burst: true, Queue: true, MaxBurst: true,
	Count: true, Period: true, Quantity: true, UnknownKind: true, AllTooMany: true, AllUnknown: true,
	LeaseMs: true, LeaseID: true, RefundAlone: true, RefundReserve: true,
	SliceUnknown: true, SliceLog: true, SliceLeaky: true, SliceOption: true, NoDescriptor: true, EntryPairs: true, NoEntries: true,
	PolicyLimit: true, PolicyUnit: true, HitsAndRefund: true, ResolveNoDescriptor: true, ResolveHits: true, BurstSpan: true, QueueSpan: true, CostSpan: true, MaxBurstSpan: true,
	GCRAMaxBurst: true, GCRANotInt: true, GCRAPositive: true, GCRAFloat: true, GCRAPeriod: true,
	GCRAMissing: true, GCRATokensOvf: true, GCRABurstOvf: true,
	KeyTooLong: true, LogLimit: true, SameKey: true,
}

// BadRequest reports whether msg, an error reply without its '-', is one of these:
// rlserver refusing the request as given, which the same request will meet again,
// rather than a condition of the server.
func BadRequest(msg string) bool {
	switch {
	case fixed[msg]:
		return true
	case strings.HasPrefix(msg, limitUpTo), strings.HasPrefix(msg, costUpTo), strings.HasPrefix(msg, refundUpTo),
		strings.HasPrefix(msg, reserveUpTo), strings.HasPrefix(msg, countUpTo),
		strings.HasPrefix(msg, hitsBetween), strings.HasPrefix(msg, invalid):
		return true
	case strings.HasPrefix(msg, arityOf) && strings.HasSuffix(msg, "' command"):
		return true
	}
	return strings.HasPrefix(msg, unknownAlgo) && strings.HasSuffix(msg, "' in RL.ALL: "+AllExpected)
}
