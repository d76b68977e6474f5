// Package policy decides requests against rate-limit policies written in
// envoyproxy/ratelimit's YAML format (with rlserver's extensions): YAML -> descriptors
// -> store requests. It speaks no protocol; the gRPC, HTTP and RESP fronts call Decide.
package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/algo"
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
	Hits     uint64    // this descriptor's hits_addend; 0 = the request's unless HitsSet
	HitsSet  bool      // Hits is given even when 0 (RLS's hits_addend wrapper is set): 0 checks without spending
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

// The bounds of a request; past them Decide answers ErrInvalidRequest.
const (
	MaxDescriptors = algo.MaxRules // descriptors in a request, so all_or_nothing can lock them all
	MaxEntries     = 32            // entries in a descriptor, and levels of nesting in a policy
	MaxNameLen     = 256           // bytes of a domain or an entry's key
	MaxValueLen    = 4096          // bytes of an entry's value (a URL path fits)
	MaxHits        = 1 << 40       // hits of a descriptor
)

// check refuses a request Decide does not decide, before anything is spent.
func check(req Request) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	switch {
	case req.Domain == "":
		return bad("rate limit domain must not be empty")
	case len(req.Domain) > MaxNameLen:
		return bad("domain longer than %d bytes", MaxNameLen)
	case len(req.Descriptors) == 0:
		return bad("rate limit descriptor list must not be empty")
	case len(req.Descriptors) > MaxDescriptors:
		return bad("%d descriptors, more than %d", len(req.Descriptors), MaxDescriptors)
	case req.Hits > MaxHits:
		return bad("hits_addend %d above %d", req.Hits, uint64(MaxHits))
	}
	for i, d := range req.Descriptors {
		switch {
		case len(d.Entries) == 0:
			return bad("descriptor %d has no entries", i)
		case len(d.Entries) > MaxEntries:
			return bad("descriptor %d has %d entries, more than %d", i, len(d.Entries), MaxEntries)
		case d.Hits > MaxHits:
			return bad("descriptor %d: hits_addend %d above %d", i, d.Hits, uint64(MaxHits))
		}
		for j, e := range d.Entries {
			switch {
			case e.Key == "":
				return bad("descriptor %d entry %d has an empty key", i, j)
			case len(e.Key) > MaxNameLen:
				return bad("descriptor %d entry %d: key longer than %d bytes", i, j, MaxNameLen)
			case len(e.Value) > MaxValueLen:
				return bad("descriptor %d entry %d: value longer than %d bytes", i, j, MaxValueLen)
			}
		}
	}
	return nil
}
