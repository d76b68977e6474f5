package middleware

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/rlserver/rlserver/client"
)

// A Policy middleware with a Slicer keeps each descriptor set's rules (RL.RESOLVE)
// for resolvedTTL, so that a policy reloaded at the server is in force here within
// about a second, at one round trip per set per second; and at most resolvedMax
// sets, so that a flood of distinct clients costs bounded memory.
const (
	resolvedTTL = time.Second
	resolvedMax = 4096
)

// resolutions are the descriptor sets' rules last resolved, by setKey.
type resolutions struct {
	mu sync.RWMutex
	m  map[string]resolution
}

// resolution is a set's rules and when they were resolved.
type resolution struct {
	res client.PolicyResolution
	at  time.Time
}

// get is the rules of key, whether they were resolved within resolvedTTL of now, and
// whether there are any.
func (c *resolutions) get(key []byte, now time.Time) (client.PolicyResolution, bool, bool) {
	c.mu.RLock()
	r, ok := c.m[string(key)] // no copy of key: the compiler looks up the bytes
	c.mu.RUnlock()
	return r.res, ok && now.Sub(r.at) < resolvedTTL, ok
}

// put records the rules of key as resolved at at.
func (c *resolutions) put(key []byte, res client.PolicyResolution, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[string(key)]; !ok && len(c.m) >= resolvedMax {
		// Full: one entry goes, whichever the map yields first (Go randomizes it),
		// an O(1) eviction that a hot set survives almost always and, when not,
		// costs it one RL.RESOLVE.
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[string(key)] = resolution{res, at}
}

// setKey names a descriptor set in resolutions: each entry's key and value with
// their lengths, so that no two sets share a name.
func setKey(descs []client.Descriptor) []byte {
	b := make([]byte, 0, 64)
	for _, d := range descs {
		b = strconv.AppendInt(b, int64(len(d.Entries)), 10)
		for _, e := range d.Entries {
			b = strconv.AppendInt(append(b, ':'), int64(len(e.Key)), 10)
			b = append(append(b, ':'), e.Key...)
			b = strconv.AppendInt(b, int64(len(e.Value)), 10)
			b = append(append(b, ':'), e.Value...)
		}
		b = append(b, ';')
	}
	return b
}

// resolve is the rules of descs: cached, or asked of the server. With the server
// unreachable the rules last resolved stay in force for another resolvedTTL, so that
// the slices held are spent (then the Slicer fails, and the Limiter's Fallback
// applies) without a timeout per request.
func (l *Limiter) resolve(ctx context.Context, descs []client.Descriptor) (client.PolicyResolution, error) {
	p := l.policy
	key, now := setKey(descs), l.now()
	res, fresh, found := p.resolved.get(key, now)
	if fresh {
		return res, nil
	}
	got, err := l.client.ResolvePolicy(ctx, p.domain, descs...)
	switch {
	case err == nil:
		res = got
	case !found || !errors.Is(err, client.ErrUnavailable):
		return client.PolicyResolution{}, err
	}
	p.resolved.put(key, res, now)
	return res, nil
}

// policySliced decides descs as RL.POLICY would, from the Slicer's slices of the
// state keys RL.POLICY charges: all or nothing for an all_or_nothing domain (its
// shadow and quota rules charged only if the others passed), each rule on its own
// otherwise; shadow and quota rules never refuse. A request with a rule a Slicer
// cannot take (Log, Leaky, a window finer than a millisecond) is decided by
// RL.POLICY. A decision of the Client's Fallback (the server down) is
// ErrUnavailable: a Policy Limiter fails open or closed.
func (l *Limiter) policySliced(ctx context.Context, descs []client.Descriptor) (client.PolicyResult, error) {
	pr, err := l.resolve(ctx, descs)
	if err != nil {
		return client.PolicyResult{}, err
	}
	for _, r := range pr.Rules {
		if charged(r) && !r.Sliceable() {
			return l.client.Policy(ctx, l.policy.domain, descs...)
		}
	}
	res := client.PolicyResult{Allowed: true, Statuses: make([]client.PolicyStatus, len(pr.Rules))}
	enforced := true // under all_or_nothing, whether the enforcing rules passed
	if pr.AllOrNothing {
		var rules []client.Rule
		var at []int
		for i, r := range pr.Rules {
			if r.Mode == client.RuleEnforce {
				rules, at = append(rules, client.Rule{Key: r.Key, Limit: r.Limit}), append(at, i)
			}
		}
		if len(rules) > 0 {
			all, err := l.slicer.AllowAll(ctx, rules...)
			if err = fellBack(err, all.Degraded); err != nil {
				return client.PolicyResult{}, err
			}
			for j, i := range at {
				res.Statuses[i] = slicedStatus(pr.Rules[i], all.Results[j])
			}
			enforced, res.Allowed = all.Allowed, all.Allowed
		}
	}
	for i, r := range pr.Rules {
		st := &res.Statuses[i]
		switch {
		case r.Mode == client.RuleUnlimited:
			*st = client.PolicyStatus{Allowed: true, Remaining: math.MaxUint32}
		case r.Mode == client.RuleNone:
			*st = client.PolicyStatus{Allowed: true}
		case pr.AllOrNothing && r.Mode == client.RuleEnforce: // decided above
		case pr.AllOrNothing && !enforced:
			// Not charged: RL.POLICY only looks at them then, and its figures for
			// them are shown by no header of a refusal.
			*st = client.PolicyStatus{Allowed: true}
		default:
			one, err := l.slicer.Allow(ctx, r.Key, r.Limit)
			if err = fellBack(err, one.Degraded); err != nil {
				return client.PolicyResult{}, err
			}
			*st = slicedStatus(r, one)
			res.Allowed = res.Allowed && st.Allowed
		}
	}
	return res, nil
}

// fellBack is a Slicer call's error, or ErrUnavailable for an answer of the Client's
// Fallback (degraded): a Policy Limiter falls back open or closed instead.
func fellBack(err error, degraded bool) error {
	if err == nil && degraded {
		return fmt.Errorf("%w: decided by the Client's Fallback", client.ErrUnavailable)
	}
	return err
}

// charged reports whether RL.POLICY charges r's key: an enforcing, shadow or quota rule.
func charged(r client.ResolvedRule) bool {
	return r.Mode == client.RuleEnforce || r.Mode == client.RuleShadow || r.Mode == client.RuleQuota
}

// slicedStatus is the status RL.POLICY answers for rule r decided res: a shadow or
// quota rule over its limit is allowed, and a quota rule's shows no reset.
func slicedStatus(r client.ResolvedRule, res client.Result) client.PolicyStatus {
	st := client.PolicyStatus{Allowed: true, Limit: r.Requests, Window: r.Window, Name: r.Name,
		Remaining: min(max(res.Remaining, 0), math.MaxUint32), ResetAfter: res.ResetAfter}
	if res.Allowed {
		return st
	}
	st.Remaining = 0
	switch r.Mode {
	case client.RuleShadow:
	case client.RuleQuota:
		st.ResetAfter = 0
	default:
		st.Allowed, st.RetryAfter = false, res.RetryAfter
	}
	return st
}
