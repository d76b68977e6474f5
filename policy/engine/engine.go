// Package engine decides rate-limit requests (package policy's words) against the
// policy in force (policy/config) on a store, as envoyproxy/ratelimit's service does
// on Redis, and counts its decisions in envoyproxy/ratelimit's per-rule metrics. It
// speaks no protocol: the gRPC, HTTP and RESP fronts call Decide.
package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/store"
)

// Engine decides requests against the policy in force, on a store.
type Engine struct {
	st     *store.Store
	up     Upstream // nil: every rule on st (upstream.go)
	loaded atomic.Pointer[loaded]

	mu      sync.Mutex // guards stats' map; each ruleStats counts atomically
	stats   map[statsKey]*ruleStats
	loadsOK atomic.Uint64
	loadErr atomic.Uint64
	unknown atomic.Uint64 // requests of a domain the policy does not have
	refused *topk.Window  // descriptors refused most, over the last minute
}

// loaded is a policy in force and its rules' counters, found on first use and
// indexed by config.Rule.Index, so that a decision finds them without the lock.
type loaded struct {
	pol   *config.Policy
	stats []atomic.Pointer[ruleStats]
}

// New returns an engine deciding on st under p (nil: no domains).
func New(st *store.Store, p *config.Policy) *Engine {
	e := &Engine{st: st, stats: map[statsKey]*ruleStats{}, refused: topk.NewWindow(refusedCapacity, refusedSpan, refusedBuckets)}
	e.SetPolicy(p)
	return e
}

// Policy is the policy in force.
func (e *Engine) Policy() *config.Policy { return e.loaded.Load().pol }

// SetPolicy puts p (nil: no domains) in force, as one atomic swap: a request reads the
// policy once, so it is decided wholly by the old one or wholly by the new.
func (e *Engine) SetPolicy(p *config.Policy) {
	if p == nil {
		p = &config.Policy{}
	}
	for r := range p.Rules() {
		// A store that has interned store.MaxPrefixes already keeps these keys
		// whole: they cost memory, nothing else.
		if r.KeyPrefix != "" {
			_ = e.st.InternPrefix([]byte(r.KeyPrefix))
		}
	}
	e.loaded.Store(&loaded{pol: p, stats: make([]atomic.Pointer[ruleStats], p.NumRules())})
}

// planned is one descriptor's part of a decision.
type planned struct {
	r         *config.Rule
	entries   []policy.Entry // the descriptor's entries, less its priority entry
	class     int            // its priority class (domain.priorities)
	unlimited bool
	shared    []string
	from, to  int // the state key: keys[from:to] (offsets, so the key buffer stays on the stack)
	req       algo.Request
	hits      uint64
	refund    bool // Negative: the hits are given back
	d         algo.Decision
	upstream  bool // d is the Upstream's, its times of its own making (resetAfter)
}

// Decide decides req at now (µs since the epoch, the server's clock) as
// envoyproxy/ratelimit does (see docs/policies.md): each descriptor is matched to a
// rule, replaced rules dropped, and each remaining one charged on its own; a domain
// with all_or_nothing charges them all or none. A request Decide refuses to decide
// (policy.ErrInvalidRequest) spends nothing; a store error (memory), or an Upstream's
// (SetUpstream), after some descriptors were charged leaves them charged, as a Redis
// error does theirs.
func (e *Engine) Decide(req policy.Request, now int64) (policy.Response, error) {
	if err := req.Check(); err != nil {
		return policy.Response{}, err
	}
	if now <= 0 || now >= 1<<53 {
		return policy.Response{}, fmt.Errorf("%w: time %d µs out of range", policy.ErrInvalidRequest, now)
	}
	l := e.loaded.Load()
	resp := policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, len(req.Descriptors))}
	d := l.pol.Domain(req.Domain)
	if d == nil {
		e.unknown.Add(1)
		for i := range resp.Statuses {
			resp.Statuses[i].Code = policy.CodeOK
		}
		return resp, nil
	}
	var buf [8]planned
	var kb [512]byte
	plan, keys, err := planRequest(d, req, buf[:0], kb[:0])
	if err != nil {
		return policy.Response{}, err
	}
	if d.AllOrNothing() {
		err = e.decideAll(plan, keys, now)
	} else {
		err = e.decideEach(plan, keys, now)
	}
	if err != nil {
		return policy.Response{}, err
	}
	for i := range plan {
		resp.Statuses[i] = e.status(l, &plan[i], plan[i].entries, now)
		if resp.Statuses[i].Code == policy.CodeOverLimit {
			resp.Overall = policy.CodeOverLimit
		}
	}
	return resp, nil
}

// hitsOf is a descriptor's hits as envoyproxy/ratelimit's GetHitsAddends has them: its
// own when given (0 included), else the request's, and at least 1.
func hitsOf(req policy.Request, d policy.Descriptor) uint64 {
	if d.Hits != 0 || d.HitsSet {
		return d.Hits
	}
	return max(1, req.Hits)
}

// dropReplaced drops the rules a matched rule's replaces names, as theirs does.
func dropReplaced(plan []planned) {
	for i := range plan {
		r := plan[i].r
		if r == nil || r.Name == "" {
			continue
		}
		for j := range plan {
			if rj := plan[j].r; rj != nil {
				for _, name := range rj.Replaces {
					if name == r.Name {
						plan[i].r = nil
					}
				}
			}
		}
	}
}

// decideEach charges each descriptor on its own.
func (e *Engine) decideEach(plan []planned, keys []byte, now int64) error {
	for i := range plan {
		pl := &plan[i]
		if pl.r == nil {
			continue
		}
		d, up, err := e.do(keys[pl.from:pl.to], &pl.req, now)
		if err != nil {
			return err
		}
		pl.d, pl.upstream = d, up
	}
	return nil
}

// decideAll charges every enforcing descriptor or none, by store.DoAll, RL.ALL's
// atomic path, or the Upstream's DecideAll; then the shadow and quota ones, which
// never refuse a request, are charged if the others were and only looked at (PEEK)
// if not.
func (e *Engine) decideAll(plan []planned, keys []byte, now int64) error {
	var rules [algo.MaxRules]algo.Rule
	var ds [algo.MaxRules]algo.Decision
	var idx [algo.MaxRules]int
	n := 0
	for i := range plan {
		if pl := &plan[i]; pl.r != nil && !pl.r.Shadow && !pl.r.Quota {
			rules[n], idx[n] = algo.Rule{Key: keys[pl.from:pl.to:pl.to], Req: pl.req}, i
			n++
		}
	}
	all := true
	if n > 0 {
		var up bool
		var err error
		all, up, err = e.doAll(rules[:n], ds[:n], now)
		if errors.Is(err, store.ErrSameKey) {
			return fmt.Errorf("%w: two descriptors of an all_or_nothing domain name one state", policy.ErrInvalidRequest)
		}
		if err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			plan[idx[j]].d, plan[idx[j]].upstream = ds[j], up
		}
	}
	for i := range plan {
		if pl := &plan[i]; pl.r != nil && (pl.r.Shadow || pl.r.Quota) {
			r := pl.req
			r.Peek = !all
			d, up, err := e.do(keys[pl.from:pl.to], &r, now)
			if err != nil {
				return err
			}
			pl.d, pl.upstream = d, up
		}
	}
	return nil
}

// status turns a descriptor's decision into its Status, as envoyproxy/ratelimit's
// GetResponseDescriptorStatus does, and counts it.
func (e *Engine) status(l *loaded, pl *planned, entries []policy.Entry, now int64) policy.Status {
	switch {
	case pl.unlimited:
		return policy.Status{Code: policy.CodeOK, Remaining: math.MaxUint32}
	case pl.r == nil:
		return policy.Status{Code: policy.CodeOK}
	}
	r, d, hits := pl.r, pl.d, pl.hits
	if pl.refund {
		// A refund is never refused, and counts in no hit counter.
		return policy.Status{Code: policy.CodeOK, Limit: r.Limit(), Remaining: uint32(min(max(d.Remaining, 0), int64(r.Requests))),
			ResetAfter: resetAfter(r, d, now, pl.upstream)}
	}
	limit := uint64(r.Requests)
	var before, after uint64
	over := !d.Allowed
	if r.Request.Kind == algo.KindFixed {
		rem := d.Remaining
		switch {
		case pl.req.Spend && (d.Allowed || rem < 0):
			// rem = limit - count after, negative past the limit
			after = uint64(int64(limit) - rem)
			before = after - hits
			over = after > limit
		case pl.req.Spend: // refused by its reserve alone: nothing spent (algo.Fixed)
			before = limit - uint64(rem)
			after = before + hits
		case d.Allowed:
			after = limit - uint64(rem)
			before = after - hits
		default:
			before = limit - uint64(rem)
			after = before + hits
		}
	} else {
		// The other algorithms have no count; their decision says over or not.
		before, after = limit-uint64(min(max(d.Remaining, 0), int64(limit))), limit
		if !over {
			after = before
		}
	}
	s := policy.Status{Code: policy.CodeOK, Limit: r.Limit(), Remaining: uint32(min(max(d.Remaining, 0), math.MaxUint32))}
	if over {
		s.Remaining = 0
	}
	s.ResetAfter = resetAfter(r, d, now, pl.upstream)
	e.count(l, r, entries, over, before, after, hits, now)
	switch {
	case !over || r.Shadow:
	case r.Quota:
		s.ResetAfter = 0 // as theirs: a quota-mode status carries no duration
	default:
		s.Code = policy.CodeOverLimit
		s.RetryAfter = s.ResetAfter
		if r.Request.Kind != algo.KindFixed && d.RetryAfter > 0 {
			s.RetryAfter = time.Duration(algo.Millis(d.RetryAfter)) * time.Millisecond
		}
	}
	return s
}

// resetAfter is duration_until_reset: for a fixed window envoyproxy/ratelimit's
// CalculateReset, the window's length in whole seconds less the seconds into it
// (whole-second windows, any decision); for the other algorithms the time until the
// key is fresh. An Upstream's decision (upstream) may be made in a later window than
// now's, a call waiting for a slice past a window's end: its fixed window's reset is
// the decision's own, in whole seconds rounded up for a whole-second window.
func resetAfter(r *config.Rule, d algo.Decision, now int64, upstream bool) time.Duration {
	own := time.Duration(algo.Millis(d.ResetAfter)) * time.Millisecond
	w := r.Window.Microseconds()
	switch {
	case r.Request.Kind != algo.KindFixed:
		return own
	case upstream && w%1e6 == 0:
		return (own + time.Second - 1).Truncate(time.Second)
	case upstream:
		return own
	case w%1e6 == 0:
		sec := w / 1e6
		return time.Duration(sec-(now/1e6)%sec) * time.Second
	}
	return time.Duration(w-now%w) * time.Microsecond
}
