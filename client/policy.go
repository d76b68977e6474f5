package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Entry is one entry of a descriptor, as Envoy's rate limit service has them.
type Entry struct{ Key, Value string }

// Descriptor is one descriptor of a policy request: its entries, matched against the
// domain's policy in order (generic_key, remote_address, header_match, ...).
type Descriptor struct {
	Entries []Entry
	// Hits is what the descriptor spends; 0 means 1.
	Hits int
	// Refund gives Hits back instead of spending them (RLS's is_negative_hits):
	// the way a gateway returns the tokens an answer did not use.
	Refund bool
}

// D is a descriptor of key value pairs: D("user", "alice", "path", "/api").
// An odd count leaves the last key without a value, which Policy refuses.
func D(kv ...string) Descriptor {
	d := Descriptor{Entries: make([]Entry, 0, (len(kv)+1)/2)}
	for i := 0; i < len(kv); i += 2 {
		e := Entry{Key: kv[i]}
		if i+1 < len(kv) {
			e.Value = kv[i+1]
		} else {
			d.Entries = nil // marks the odd pair for Policy
			break
		}
		d.Entries = append(d.Entries, e)
	}
	return d
}

// PolicyResult is the decision on a policy request.
type PolicyResult struct {
	// Allowed is true when no descriptor is over its limit (RLS's overall code OK).
	Allowed bool
	// Statuses are the descriptors' answers, in request order.
	Statuses []PolicyStatus
}

// PolicyStatus is one descriptor's answer.
type PolicyStatus struct {
	// Allowed is false when the descriptor is over its limit.
	Allowed bool
	// Limit is the rule's requests per Window; 0 when no rule matched or the rule is
	// unlimited.
	Limit  int
	Window time.Duration
	// Name is the rule's name, empty when it has none or there is no rule.
	Name string
	// Remaining is how many more hits the rule allows now (4294967295 for an
	// unlimited rule, as envoyproxy/ratelimit).
	Remaining int
	// ResetAfter is how long until the rule's state is fresh again, rounded up to the ms.
	ResetAfter time.Duration
	// RetryAfter is, when over the limit, how long until the same request could pass;
	// 0 when allowed.
	RetryAfter time.Duration
}

// Policy decides a request of domain against the policy rlserver runs with
// (-limits, RL.POLICY): the same decision and the same counts as Envoy's gateways get
// from its gRPC front. Each descriptor spends its Hits on the rule it matches, or
// gives them back. A descriptor without entries or with an odd pair is ErrBadLimit
// before any I/O, as is an empty domain; errors.Is(err, ErrUnavailable) when no
// decision came back (a Fallback cannot decide a policy it does not have), and
// ErrNoPolicy from a Client made by NewLua or NewEmbedded.
//
//	res, err := c.Policy(ctx, "api", client.D("user", "alice"), client.D("path", "/login"))
func (c *Client) Policy(ctx context.Context, domain string, descriptors ...Descriptor) (PolicyResult, error) {
	s, ok := c.backend.(serverBackend)
	if !ok {
		return PolicyResult{}, ErrNoPolicy
	}
	args, err := policyArgs(domain, descriptors)
	if err != nil {
		return PolicyResult{}, err
	}
	ctx, cancel, err := c.start(ctx)
	if err != nil {
		return PolicyResult{}, err
	}
	defer cancel()
	cmd := s.send.send(ctx, domain, redis.NewCmd(ctx, args...))
	res, err := policyResult(cmd, len(descriptors))
	return res, withContext(ctx, err)
}

// policyArgs is RL.POLICY's command for domain and ds, or ErrBadLimit.
func policyArgs(domain string, ds []Descriptor) ([]any, error) {
	if domain == "" || len(ds) == 0 {
		return nil, fmt.Errorf("%w: a policy request needs a domain and at least one descriptor", ErrBadLimit)
	}
	args := []any{"RL.POLICY", domain}
	for i, d := range ds {
		if len(d.Entries) == 0 {
			return nil, fmt.Errorf("%w: descriptor %d has no entries, or a key without a value", ErrBadLimit, i)
		}
		if d.Hits < 0 || d.Refund && d.Hits == 0 {
			return nil, fmt.Errorf("%w: descriptor %d: hits %d", ErrBadLimit, i, d.Hits)
		}
		args = append(args, "DESCRIPTOR")
		switch {
		case d.Refund:
			args = append(args, "REFUND", d.Hits)
		case d.Hits > 0:
			args = append(args, "HITS", d.Hits)
		}
		for _, e := range d.Entries {
			args = append(args, e.Key, e.Value)
		}
	}
	return args, nil
}

// policyResult reads RL.POLICY's reply: the overall code, then n statuses of seven
// fields.
func policyResult(cmd *redis.Cmd, n int) (PolicyResult, error) {
	v, err := cmd.Slice()
	if err != nil {
		return PolicyResult{}, classify(err)
	}
	bad := func(what string) (PolicyResult, error) {
		return PolicyResult{}, fmt.Errorf("%w: RL.POLICY answered %s", ErrUnavailable, what)
	}
	if len(v) != 1+n {
		return bad(strconv.Itoa(len(v)) + " elements for " + strconv.Itoa(n) + " descriptors")
	}
	overall, ok := v[0].(int64)
	if !ok {
		return bad("a non-integer code")
	}
	res := PolicyResult{Allowed: overall == 1, Statuses: make([]PolicyStatus, n)}
	for i, s := range v[1:] {
		f, ok := s.([]any)
		if !ok || len(f) != 7 {
			return bad("a status that is not seven fields")
		}
		var ints [6]int64
		for j := range ints {
			if ints[j], ok = f[j].(int64); !ok {
				return bad("a non-integer field")
			}
		}
		name, _ := f[6].(string) // nil: no rule
		ms := func(x int64) time.Duration { return time.Duration(x) * time.Millisecond }
		res.Statuses[i] = PolicyStatus{Allowed: ints[0] != 2, Limit: int(ints[1]), Remaining: int(ints[2]),
			ResetAfter: ms(ints[3]), RetryAfter: ms(ints[4]), Window: ms(ints[5]), Name: name}
	}
	return res, nil
}
