package client

import (
	"context"
	"fmt"

	"github.com/rlserver/rlserver/algo"
)

// Rule is one limit of an AllowAll call: a key, its Limit, and the request's cost
// under it.
type Rule struct {
	Key   string // the rule's key: distinct from the other rules' keys
	Limit Limit  // the limit that applies to Key
	// Cost is the request's cost under this rule; 0 means 1. (A rule of cost 0 would
	// always admit and change nothing: leave it out instead.)
	Cost int
}

// AllResult is the decision on an AllowAll call.
type AllResult struct {
	// Allowed is true if every rule admitted the request: then every rule consumed
	// its cost. If any rule refused, none consumed anything.
	Allowed bool
	// Results holds each rule's answer, in the order of the rules. When Allowed, each
	// is what that rule consumed and left; when not, each is what the rule alone would
	// answer (as Peek does): a refusing rule has Allowed false and its RetryAfter, an
	// admitting one the Remaining it would leave.
	Results []Result
	// Degraded is true when the rules were decided in-process (Options.Fallback).
	Degraded bool
}

// AllowAll decides one request under several limits at once, all or nothing: if
// every rule admits, all consume; if one refuses, none does (RL.ALL). A request
// denied by its third limit has then not used up anything of the first two. The keys
// must differ, and there may be up to 64 rules; with none, the request is allowed and
// nothing is called.
//
// On a Redis Cluster (NewLua) the keys must hash to one slot, or the call fails with
// ErrBadLimit (CROSSSLOT): give them one hash tag, such as {user:42}:minute and
// {user:42}:day. On a Ring, the call goes to the shard of the first key, and the other
// keys are kept there.
func (c *Client) AllowAll(ctx context.Context, rules ...Rule) (AllResult, error) {
	if len(rules) == 0 {
		return AllResult{Allowed: true}, nil
	}
	if len(rules) > algo.MaxRules {
		return AllResult{}, fmt.Errorf("%w: AllowAll takes at most %d rules, got %d", ErrBadLimit, algo.MaxRules, len(rules))
	}
	reqs := make([]algo.Rule, len(rules))
	seen := make(map[string]bool, len(rules))
	for i, r := range rules {
		if err := r.Limit.Validate(); err != nil {
			return AllResult{}, fmt.Errorf("rule %d: %w", i, err)
		}
		cost := r.Cost
		if cost == 0 {
			cost = 1
		}
		if err := r.Limit.checkCost(cost); err != nil {
			return AllResult{}, fmt.Errorf("rule %d: %w", i, err)
		}
		if seen[r.Key] {
			return AllResult{}, fmt.Errorf("%w: AllowAll names the key %q in two rules", ErrBadLimit, r.Key)
		}
		seen[r.Key] = true
		reqs[i] = algo.Rule{Key: []byte(r.Key), Req: r.Limit.request(int64(cost), false)}
	}
	var allowed bool
	var ds []algo.Decision
	local, err := c.remote(ctx, func(ctx context.Context) (err error) {
		if len(reqs) == 1 {
			// One rule decides as its own command does (RL.TOKEN, ...): the same
			// answer, on the path every Allow takes.
			var d algo.Decision
			d, err = c.backend.decide(ctx, rules[0].Key, reqs[0].Req)
			allowed, ds = d.Allowed, []algo.Decision{d}
			return err
		}
		allowed, ds, err = c.backend.decideAll(ctx, reqs)
		return err
	})
	if err != nil {
		return AllResult{}, err
	}
	if local {
		allowed, ds = c.fallback.decideAll(reqs)
	}
	res := AllResult{Allowed: allowed, Results: make([]Result, len(ds)), Degraded: local}
	for i, d := range ds {
		res.Results[i] = resultOf(d)
		res.Results[i].Degraded = local
	}
	return res, nil
}
