// Package policy decides requests against rate-limit policies written in
// envoyproxy/ratelimit's YAML format (with rlserver's extensions): YAML -> descriptors
// -> store requests. It speaks no protocol; the gRPC, HTTP and RESP fronts call Decide.
package policy

import (
	"errors"
	"time"
)

// Entry is one descriptor entry, a key and its value.
type Entry struct{ Key, Value string }

// Unit is a rate limit's unit, numbered as RLS v3's RateLimitResponse.RateLimit.Unit.
type Unit int

// The units, with RLS v3's numbers. UnitUnknown is a rule given by `window`.
const (
	UnitUnknown Unit = iota
	UnitSecond
	UnitMinute
	UnitHour
	UnitDay
	UnitMonth
	UnitYear
	UnitWeek
)

// Override is a descriptor's own limit (RLS's RateLimitDescriptor.limit), which
// replaces the rule's limit and unit but keeps its key and algorithm.
type Override struct {
	RequestsPerUnit uint32
	Unit            Unit
}

// Descriptor is one descriptor of a request.
type Descriptor struct {
	Entries  []Entry
	Limit    *Override // nil: the policy's rule
	Hits     uint64    // this descriptor's hits_addend; 0 = the request's
	Negative bool      // is_negative_hits: give back Hits instead of spending
}

// Request is one decision asked of the engine: RLS's RateLimitRequest.
type Request struct {
	Domain      string
	Descriptors []Descriptor
	Hits        uint64 // the request's hits_addend; 0 means 1
}

// Code is a decision's code, with RLS v3's numbers.
type Code int

// The codes.
const (
	CodeUnknown   Code = 0
	CodeOK        Code = 1
	CodeOverLimit Code = 2
)

// Limit is the rule that decided a descriptor (RLS's current_limit).
type Limit struct {
	Name            string
	RequestsPerUnit uint32
	Unit            Unit          // UnitUnknown when the rule used `window`
	Window          time.Duration // the rule's window whatever way it was given
	Algorithm       string        // fixed, slide, log, token, gcra, leaky
}

// Status is one descriptor's answer.
type Status struct {
	Code       Code
	Limit      *Limit // nil: no rule matched, or the rule is unlimited (as envoyproxy/ratelimit)
	Remaining  uint32
	ResetAfter time.Duration // duration_until_reset
	RetryAfter time.Duration // for Retry-After headers; 0 when OK
}

// Response is a request's answer: the overall code and one Status per descriptor, in
// request order.
type Response struct {
	Overall  Code
	Statuses []Status
}

// ErrInvalidRequest is wrapped by every error Decide returns for a request it refuses
// to decide (empty domain, no descriptors, an empty key, too many descriptors, a value
// too long...); nothing is spent.
var ErrInvalidRequest = errors.New("policy: invalid request")
