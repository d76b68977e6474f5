package engine

import (
	"bytes"
	"fmt"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/store"
)

// ErrMixedUpstream is wrapped by the error answered for an all_or_nothing request
// whose enforcing rules are some the Upstream's and some the store's: no single
// atomic call can decide both, and deciding them apart could admit one side of a
// refused request. It wraps policy.ErrInvalidRequest, and nothing is spent.
var ErrMixedUpstream = fmt.Errorf("%w: an all_or_nothing request's rules are some decided by the quota upstream "+
	"and some by this server's store: give the domain's keys one side (-quota-upstream-prefix)", policy.ErrInvalidRequest)

// Decider decides limiter calls on keys from somewhere other than the store: a
// region's home (-quota-upstream, package region). The RL.* commands use it as the
// policy engine does.
type Decider interface {
	// Decide decides req on key and answers taken true, or answers taken false to
	// leave the call to the store (a key or a kind it does not take). It may wait
	// for its source, within its own budget. It never spends a refused call:
	// req.Spend is not honoured.
	Decide(key []byte, req algo.Request) (d algo.Decision, taken bool, err error)
}

// Upstream is the engine's Decider (SetUpstream), which also decides all-or-nothing
// sets of rules.
type Upstream interface {
	Decider
	// Takes reports whether Decide would take req on key: what the engine asks
	// first of an all_or_nothing request's rules, which one atomic call decides.
	Takes(key []byte, req algo.Request) bool
	// DecideAll decides rules, every one of which it Takes on distinct keys, all or
	// nothing, as store.DoAll does: ds, of len(rules), gets each rule's answer, the
	// consuming one when all admit, each rule's own would-be answer when not.
	DecideAll(rules []algo.Rule, ds []algo.Decision) (allowed bool, err error)
}

// SetUpstream makes up decide the rules it takes, in place of the store: the
// policies of a region are decided from its home's quota, as its RL.* commands are.
// Call it before the engine decides anything. A rule decided by up spends nothing
// when refused (Decider), an envoyproxy/ratelimit fixed window's refused hits
// included; an all_or_nothing request answers ErrMixedUpstream when up takes some
// of its enforcing rules and not others.
func (e *Engine) SetUpstream(up Upstream) { e.up = up }

// do decides req on key: by the Upstream when it takes it (upstream true), else by
// the store. A decision of the Upstream clears req.Spend, which status reads: it
// spent nothing on a refusal.
func (e *Engine) do(key []byte, req *algo.Request, now int64) (d algo.Decision, upstream bool, err error) {
	if e.up != nil {
		if d, taken, err := e.up.Decide(key, *req); taken {
			req.Spend = false
			return d, true, err
		}
	}
	d, err = e.st.Do(key, *req, now)
	return d, false, err
}

// doAll decides rules all or nothing: by the Upstream when it takes every one
// (upstream true), by the store when it takes none.
func (e *Engine) doAll(rules []algo.Rule, ds []algo.Decision, now int64) (all, upstream bool, err error) {
	if e.up == nil {
		all, err = e.st.DoAll(rules, ds, now)
		return all, false, err
	}
	taken := 0
	for _, r := range rules {
		if e.up.Takes(r.Key, r.Req) {
			taken++
		}
	}
	switch taken {
	case 0:
		all, err = e.st.DoAll(rules, ds, now)
		return all, false, err
	case len(rules):
		for i := range rules {
			for j := range i {
				if bytes.Equal(rules[i].Key, rules[j].Key) {
					return false, true, store.ErrSameKey
				}
			}
		}
		all, err = e.up.DecideAll(rules, ds)
		return all, true, err
	}
	return false, false, ErrMixedUpstream
}
