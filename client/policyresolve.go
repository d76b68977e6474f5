package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
)

// RuleMode is how a descriptor's rule applies to it (RL.RESOLVE's mode).
type RuleMode uint8

// The modes.
const (
	RuleNone      RuleMode = iota // no rule: none matched, the domain is unknown, or another descriptor's rule replaces it
	RuleEnforce                   // refuses what is over its limit
	RuleShadow                    // charged, never refuses (shadow_mode)
	RuleQuota                     // charged, never refuses, no reset shown (quota_mode)
	RuleUnlimited                 // allowed, nothing charged
)

// ruleModes are the modes by RL.RESOLVE's names.
var ruleModes = map[string]RuleMode{"none": RuleNone, "enforce": RuleEnforce, "shadow": RuleShadow, "quota": RuleQuota, "unlimited": RuleUnlimited}

// resolvedKinds are the algorithms by RL.RESOLVE's names.
var resolvedKinds = map[string]algo.Kind{"fixed": algo.KindFixed, "slide": algo.KindSlide, "log": algo.KindLog,
	"token": algo.KindToken, "gcra": algo.KindGCRA, "leaky": algo.KindLeaky}

// ResolvedRule is one descriptor's rule, as RL.POLICY would charge it.
type ResolvedRule struct {
	Mode RuleMode
	// Key is the state RL.POLICY charges for the descriptor; "" for RuleNone and
	// RuleUnlimited.
	Key string
	// Limit is the rule as a Limit on Key, with the reserve of the descriptor's
	// priority class: AllowN on Key under it spends what RL.POLICY spends, and a
	// Slicer takes its slices. The zero Limit (Validate fails) when no Limit can
	// express the rule: a window finer than a millisecond, a fixed limit of 0 or
	// above the contract's range.
	Limit Limit
	// Requests, Window and Name are the rule's requests_per_unit, window and name,
	// as PolicyStatus has them.
	Requests int
	Window   time.Duration
	Name     string
}

// Sliceable reports whether a Slicer can decide the rule: it has a valid Limit of
// Fixed, Slide, Token or GCRA.
func (r ResolvedRule) Sliceable() bool { return r.Limit.kind.Sliceable() }

// PolicyResolution is what ResolvePolicy found for a request.
type PolicyResolution struct {
	// Known is whether rlserver's policy has the domain; without it every rule is
	// RuleNone, as Policy answers an unknown domain allowed.
	Known bool
	// AllOrNothing is the domain's all_or_nothing: its RuleEnforce rules are charged
	// all or none, and its shadow and quota ones only if they were.
	AllOrNothing bool
	// Rules are the descriptors' rules, in request order.
	Rules []ResolvedRule
}

// ResolvePolicy finds, spending nothing, the rule and state key RL.POLICY would
// charge for each descriptor of a request of domain (RL.RESOLVE): what a caller
// deciding the request in-process, from a Slicer, decides it by. Descriptors are
// checked as Policy checks them and take no Hits or Refund (ErrBadLimit); a Client
// made by NewLua or NewEmbedded returns ErrNoPolicy; errors.Is(err, ErrUnavailable)
// when no answer came back.
func (c *Client) ResolvePolicy(ctx context.Context, domain string, descriptors ...Descriptor) (PolicyResolution, error) {
	s, ok := c.backend.(serverBackend)
	if !ok {
		return PolicyResolution{}, ErrNoPolicy
	}
	for i, d := range descriptors {
		if d.Hits != 0 || d.Refund {
			return PolicyResolution{}, fmt.Errorf("%w: descriptor %d: resolving spends nothing: no Hits or Refund", ErrBadLimit, i)
		}
	}
	args, err := policyArgs(domain, descriptors)
	if err != nil {
		return PolicyResolution{}, err
	}
	args[0] = "RL.RESOLVE"
	ctx, cancel, err := c.start(ctx)
	if err != nil {
		return PolicyResolution{}, err
	}
	defer cancel()
	cmd := s.send.send(ctx, domain, redis.NewCmd(ctx, args...))
	res, err := resolution(cmd, len(descriptors))
	return res, withContext(ctx, err)
}

// resolution reads RL.RESOLVE's reply: the domain's mode, then n rules of nine
// fields.
func resolution(cmd *redis.Cmd, n int) (PolicyResolution, error) {
	v, err := cmd.Slice()
	if err != nil {
		return PolicyResolution{}, classify(err)
	}
	bad := func(what string) (PolicyResolution, error) {
		return PolicyResolution{}, fmt.Errorf("%w: RL.RESOLVE answered %s", ErrUnavailable, what)
	}
	if len(v) != 1+n {
		return bad(strconv.Itoa(len(v)) + " elements for " + strconv.Itoa(n) + " descriptors")
	}
	var res PolicyResolution
	switch v[0] {
	case "each":
		res.Known = true
	case "all_or_nothing":
		res.Known, res.AllOrNothing = true, true
	case "unknown":
	default:
		return bad(fmt.Sprintf("domain mode %v", v[0]))
	}
	res.Rules = make([]ResolvedRule, n)
	for i, s := range v[1:] {
		f, ok := s.([]any)
		if !ok || len(f) != 9 {
			return bad("a rule that is not nine fields")
		}
		mode, _ := f[0].(string)
		r := &res.Rules[i]
		if r.Mode, ok = ruleModes[mode]; !ok {
			return bad("mode " + strconv.Quote(mode))
		}
		if r.Mode == RuleNone || r.Mode == RuleUnlimited {
			continue
		}
		var ints [5]int64 // limit, window_us, option, reserve, requests_per_unit
		for j := range ints {
			if ints[j], ok = f[3+j].(int64); !ok {
				return bad("a non-integer field")
			}
		}
		kindName, _ := f[2].(string)
		kind, ok := resolvedKinds[kindName]
		r.Key, _ = f[1].(string)
		if !ok || r.Key == "" {
			return bad("a rule without a key or an algorithm")
		}
		r.Name, _ = f[8].(string)
		r.Requests, r.Window = int(ints[4]), time.Duration(ints[1])*time.Microsecond
		r.Limit = resolvedLimit(kind, ints[0], ints[1], ints[2], ints[3])
	}
	return res, nil
}

// resolvedLimit is the Limit of a rule of kind with RL.RESOLVE's numbers, or the zero
// Limit when none can express it.
func resolvedLimit(kind algo.Kind, limit, windowUs, option, reserve int64) Limit {
	l := Limit{kind: kind, n: limit, per: time.Duration(windowUs) * time.Microsecond, option: option, reserve: reserve}
	if l.Validate() != nil {
		return Limit{}
	}
	return l
}
