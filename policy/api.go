// Package policy holds the words of a rate-limit policy's decisions, as RLS v3 has
// them: a request's descriptors, each descriptor's status, the limit that decided it.
// The policy files (envoyproxy/ratelimit's YAML, package policy/config) and the
// engine that decides requests on a store (policy/engine) are packages of their own,
// so that code which only builds requests or reads answers, as the middleware and
// package httpdesc do, imports neither a YAML parser nor the store.
package policy

import (
	"errors"
	"fmt"
	"strings"
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

// unitNames are RLS v3's unit names, as envoyproxy/ratelimit reads them (upper-cased).
var unitNames = map[string]Unit{
	"SECOND": UnitSecond, "MINUTE": UnitMinute, "HOUR": UnitHour, "DAY": UnitDay,
	"WEEK": UnitWeek, "MONTH": UnitMonth, "YEAR": UnitYear,
}

// Duration is the unit's window as envoyproxy/ratelimit's UnitToDivider has it (a
// month is 30 days, a year 365), 0 for UnitUnknown.
func (u Unit) Duration() time.Duration {
	const day = 24 * time.Hour
	switch u {
	case UnitSecond:
		return time.Second
	case UnitMinute:
		return time.Minute
	case UnitHour:
		return time.Hour
	case UnitDay:
		return day
	case UnitWeek:
		return 7 * day
	case UnitMonth:
		return 30 * day
	case UnitYear:
		return 365 * day
	}
	return 0
}

// String is the unit's RLS name in lower case ("second"...), "unknown" otherwise.
func (u Unit) String() string {
	for name, v := range unitNames {
		if v == u {
			return strings.ToLower(name)
		}
	}
	return "unknown"
}

// ParseUnit is the unit an RLS unit name gives, in any case, as
// envoyproxy/ratelimit reads it; false for a name that is no unit.
func ParseUnit(name string) (Unit, bool) {
	u, ok := unitNames[strings.ToUpper(name)]
	return u, ok
}

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
	Limit      *Limit // nil: no rule matched, or the rule is unlimited (as envoyproxy/ratelimit); shared, read only
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

// ErrInvalidRequest is wrapped by every error an engine returns for a request it refuses
// to decide (empty domain, no descriptors, an empty key, too many descriptors, a value
// too long...); nothing is spent.
var ErrInvalidRequest = errors.New("policy: invalid request")

// The bounds of a request; past them an engine answers ErrInvalidRequest.
const (
	MaxDescriptors = algo.MaxRules // descriptors in a request, so all_or_nothing can lock them all
	MaxEntries     = 32            // entries in a descriptor, and levels of nesting in a policy
	MaxNameLen     = 256           // bytes of a domain or an entry's key
	MaxValueLen    = 4096          // bytes of an entry's value (a URL path fits)
	MaxHits        = 1 << 40       // hits of a descriptor
)

// Check is the error an engine answers a request it refuses to decide (wrapping
// ErrInvalidRequest), or nil: the bounds above, an empty domain or key, no
// descriptors or entries.
func (req Request) Check() error {
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
