package engine

import (
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
)

// Mode is how a resolved descriptor's rule applies to it.
type Mode uint8

// The modes, as Decide applies them.
const (
	ModeNone      Mode = iota // no rule: none matched, the domain is unknown, or another descriptor's rule replaces it
	ModeEnforce               // the rule refuses what is over its limit
	ModeShadow                // shadow_mode: charged, never refuses
	ModeQuota                 // quota_mode: charged, never refuses, and its status shows no reset
	ModeUnlimited             // unlimited: allowed, nothing charged
)

// modeNames are the modes as RL.RESOLVE answers them.
var modeNames = [...]string{ModeNone: "none", ModeEnforce: "enforce", ModeShadow: "shadow", ModeQuota: "quota", ModeUnlimited: "unlimited"}

// String is the mode's name: "none", "enforce", "shadow", "quota" or "unlimited".
func (m Mode) String() string {
	if int(m) >= len(modeNames) {
		return "unknown"
	}
	return modeNames[m]
}

// Resolved is one descriptor's rule as Decide would charge it.
type Resolved struct {
	Mode Mode
	// Rule is the rule in force (a descriptor's limit override included); nil for
	// ModeNone and ModeUnlimited.
	Rule *config.Rule
	// Key is the state key Decide charges, nil without a rule.
	Key []byte
	// Request is what Decide charges Key with: the rule's algorithm and parameters,
	// the descriptor's hits as Cost, its priority class's Reserve, and Spend for a
	// fixed window outside all_or_nothing. Zero without a rule.
	Request algo.Request
}

// Resolution is what Resolve found for a request.
type Resolution struct {
	// Known is whether the policy has the request's domain: without it every
	// descriptor is ModeNone, as Decide answers OK with no limits.
	Known bool
	// AllOrNothing is the domain's all_or_nothing: Decide charges its enforcing
	// descriptors all or none, and its shadow and quota ones only if they were.
	AllOrNothing bool
	// Rules are the descriptors' rules, in request order.
	Rules []Resolved
}

// Resolve finds, spending nothing, the rules and state keys Decide would charge for
// req under the policy in force (the same matching: planRequest), so that a caller
// holding slices of those keys' quotas (RL.SLICE) can decide the request in-process
// and stay in step with every RL.POLICY and ShouldRateLimit charging them. It
// refuses what Decide refuses (policy.ErrInvalidRequest); a domain the policy lacks,
// which Decide answers OK, resolves to ModeNone throughout.
func (e *Engine) Resolve(req policy.Request) (Resolution, error) {
	if err := req.Check(); err != nil {
		return Resolution{}, err
	}
	res := Resolution{Rules: make([]Resolved, len(req.Descriptors))}
	d := e.loaded.Load().pol.Domain(req.Domain)
	if d == nil {
		return res, nil
	}
	res.Known, res.AllOrNothing = true, d.AllOrNothing()
	plan, keys, err := planRequest(d, req, make([]planned, 0, len(req.Descriptors)), nil)
	if err != nil {
		return Resolution{}, err
	}
	for i := range plan {
		pl, out := &plan[i], &res.Rules[i]
		switch r := pl.r; {
		case pl.unlimited:
			out.Mode = ModeUnlimited
		case r == nil:
			out.Mode = ModeNone
		default:
			out.Mode = ModeEnforce
			if r.Shadow {
				out.Mode = ModeShadow
			} else if r.Quota {
				out.Mode = ModeQuota
			}
			out.Rule, out.Key, out.Request = r, keys[pl.from:pl.to:pl.to], pl.req
		}
	}
	return res, nil
}
