package policy

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/store"
)

// Engine decides requests against the policy in force, on a store.
type Engine struct {
	st  *store.Store
	pol atomic.Pointer[Policy]

	mu      sync.Mutex // guards stats' map; each ruleStats counts atomically
	stats   map[statsKey]*ruleStats
	loadsOK atomic.Uint64
	loadErr atomic.Uint64
	unknown atomic.Uint64 // requests of a domain the policy does not have
	refused *topk.Window  // descriptors refused most, over the last minute
}

// NewEngine returns an engine deciding on st under p (nil: no domains).
func NewEngine(st *store.Store, p *Policy) *Engine {
	e := &Engine{st: st, stats: map[statsKey]*ruleStats{}, refused: topk.NewWindow(refusedCapacity, refusedSpan, refusedBuckets)}
	e.SetPolicy(p)
	return e
}

// Policy is the policy in force.
func (e *Engine) Policy() *Policy { return e.pol.Load() }

// SetPolicy puts p (nil: no domains) in force, as one atomic swap: a request reads the
// policy once, so it is decided wholly by the old one or wholly by the new.
func (e *Engine) SetPolicy(p *Policy) {
	if p == nil {
		p = &Policy{domains: map[string]*domain{}}
	}
	for _, d := range p.domains {
		d.root.walk("", func(_ string, r *rule) {
			// A store that has interned store.MaxPrefixes already keeps these keys
			// whole: they cost memory, nothing else.
			if r.keyPrefix != "" {
				_ = e.st.InternPrefix([]byte(r.keyPrefix))
			}
		})
	}
	e.pol.Store(p)
}

// planned is one descriptor's part of a decision.
type planned struct {
	r         *rule
	entries   []Entry // the descriptor's entries, less its priority entry
	class     int     // its priority class (domain.priorities)
	unlimited bool
	shared    []string
	from, to  int // the state key: keys[from:to] (offsets, so the key buffer stays on the stack)
	req       algo.Request
	hits      uint64
	refund    bool // Negative: the hits are given back
	d         algo.Decision
}

// Decide decides req at now (µs since the epoch, the server's clock) as
// envoyproxy/ratelimit does (see docs/policies.md): each descriptor is matched to a
// rule, replaced rules dropped, and each remaining one charged on its own; a domain
// with all_or_nothing charges them all or none. A request Decide refuses to decide
// (ErrInvalidRequest) spends nothing; a store error (memory) after some descriptors
// were charged leaves them charged, as a Redis error does theirs.
func (e *Engine) Decide(req Request, now int64) (Response, error) {
	if err := check(req); err != nil {
		return Response{}, err
	}
	if now <= 0 || now >= 1<<53 {
		return Response{}, fmt.Errorf("%w: time %d µs out of range", ErrInvalidRequest, now)
	}
	p := e.pol.Load()
	resp := Response{Overall: CodeOK, Statuses: make([]Status, len(req.Descriptors))}
	d := p.domains[req.Domain]
	if d == nil {
		e.unknown.Add(1)
		for i := range resp.Statuses {
			resp.Statuses[i].Code = CodeOK
		}
		return resp, nil
	}
	var buf [8]planned
	plan := buf[:0]
	if len(req.Descriptors) > len(buf) {
		plan = make([]planned, 0, len(req.Descriptors))
	}
	var classed []Entry // the entries less their priority entries, all descriptors'
	if d.priorities != nil {
		n := 0
		for _, desc := range req.Descriptors {
			n += len(desc.Entries)
		}
		classed = make([]Entry, 0, n)
	}
	replacing := false
	for _, desc := range req.Descriptors {
		pl := planned{hits: hitsOf(req, desc), entries: desc.Entries}
		if d.priorities != nil {
			var err error
			if pl.entries, pl.class, err = d.priorities.class(desc.Entries, classed[len(classed):]); err != nil {
				return Response{}, err
			}
			classed = classed[:len(classed)+len(pl.entries)]
		}
		r, shared := d.match(pl.entries)
		if desc.Limit != nil {
			var err error
			if r, err = override(d.name, r, *desc.Limit); err != nil {
				return Response{}, err
			}
		}
		if r != nil && r.unlimited {
			r, pl.unlimited = nil, true
		}
		pl.r, pl.shared = r, shared
		replacing = replacing || r != nil && len(r.replaces) > 0
		plan = append(plan, pl)
	}
	if replacing {
		dropReplaced(plan)
	}
	// Every request is checked before any is charged, so a bad one spends nothing.
	var kb [512]byte
	keys := kb[:0]
	for i := range plan {
		pl := &plan[i]
		if pl.r == nil {
			continue
		}
		pl.req = pl.r.req
		pl.req.Cost = int64(pl.hits)
		pl.req.Spend = pl.r.kind == algo.KindFixed && !d.allOrNothing
		if d.priorities != nil {
			pl.req.Reserve = d.priorities.reserveOf(pl.class, pl.req)
		}
		if req.Descriptors[i].Negative {
			// Give back what earlier calls spent (algo's refunds), never past a
			// fresh key's room.
			pl.req.Refund, pl.req.Cost, pl.req.Reserve, pl.refund = pl.req.Cost, 0, 0, true
		}
		if err := checkSchedule(pl.req); err != nil {
			return Response{}, fmt.Errorf("%w: descriptor %d: hits %d: %v", ErrInvalidRequest, i, pl.hits, err)
		}
		pl.from = len(keys)
		keys = appendKey(keys, d.name, pl.entries, pl.shared, pl.r.kind.String()[3:], pl.r.window)
		pl.to = len(keys)
	}
	var err error
	if d.allOrNothing {
		err = e.decideAll(plan, keys, now)
	} else {
		err = e.decideEach(plan, keys, now)
	}
	if err != nil {
		return Response{}, err
	}
	for i := range plan {
		resp.Statuses[i] = e.status(&plan[i], plan[i].entries, now)
		if resp.Statuses[i].Code == CodeOverLimit {
			resp.Overall = CodeOverLimit
		}
	}
	return resp, nil
}

// hitsOf is a descriptor's hits as envoyproxy/ratelimit's GetHitsAddends has them: its
// own when given (0 included), else the request's, and at least 1.
func hitsOf(req Request, d Descriptor) uint64 {
	if d.Hits != 0 || d.HitsSet {
		return d.Hits
	}
	return max(1, req.Hits)
}

// override is a descriptor's own limit as envoyproxy/ratelimit applies it: in place of
// whatever rule matched (or none), with no name, replaces, shadow or quota mode; here
// it keeps the matched rule's algorithm when that is not fixed.
func override(domain string, matched *rule, o Override) (*rule, error) {
	w := o.Unit.Duration()
	if w == 0 {
		return nil, fmt.Errorf("%w: limit override with unit %d", ErrInvalidRequest, o.Unit)
	}
	r := &rule{domain: domain, path: overridePath, requests: o.RequestsPerUnit, unit: o.Unit, window: w, kind: algo.KindFixed}
	if matched != nil && !matched.unlimited {
		r.kind = matched.kind
		r.path = matched.path
		r.stats.Store(matched.stats.Load())
	}
	if err := r.checkAlgorithm(0); err != nil {
		return nil, fmt.Errorf("%w: limit override: %v", ErrInvalidRequest, err)
	}
	return r, nil
}

// overridePath is the metrics path of a limit override no rule matched.
const overridePath = "(override)"

// dropReplaced drops the rules a matched rule's replaces names, as theirs does.
func dropReplaced(plan []planned) {
	for i := range plan {
		r := plan[i].r
		if r == nil || r.name == "" {
			continue
		}
		for j := range plan {
			if rj := plan[j].r; rj != nil {
				for _, name := range rj.replaces {
					if name == r.name {
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
		d, err := e.st.Do(keys[pl.from:pl.to], pl.req, now)
		if err != nil {
			return err
		}
		pl.d = d
	}
	return nil
}

// decideAll charges every enforcing descriptor or none, by store.DoAll, RL.ALL's
// atomic path; then the shadow and quota ones, which never refuse a request, are
// charged if the others were and only looked at (PEEK) if not.
func (e *Engine) decideAll(plan []planned, keys []byte, now int64) error {
	var rules [algo.MaxRules]algo.Rule
	var ds [algo.MaxRules]algo.Decision
	var idx [algo.MaxRules]int
	n := 0
	for i := range plan {
		if pl := &plan[i]; pl.r != nil && !pl.r.shadow && !pl.r.quota {
			rules[n], idx[n] = algo.Rule{Key: keys[pl.from:pl.to:pl.to], Req: pl.req}, i
			n++
		}
	}
	all := true
	if n > 0 {
		var err error
		all, err = e.st.DoAll(rules[:n], ds[:n], now)
		if errors.Is(err, store.ErrSameKey) {
			return fmt.Errorf("%w: two descriptors of an all_or_nothing domain name one state", ErrInvalidRequest)
		}
		if err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			plan[idx[j]].d = ds[j]
		}
	}
	for i := range plan {
		if pl := &plan[i]; pl.r != nil && (pl.r.shadow || pl.r.quota) {
			r := pl.req
			r.Peek = !all
			d, err := e.st.Do(keys[pl.from:pl.to], r, now)
			if err != nil {
				return err
			}
			pl.d = d
		}
	}
	return nil
}

// status turns a descriptor's decision into its Status, as envoyproxy/ratelimit's
// GetResponseDescriptorStatus does, and counts it.
func (e *Engine) status(pl *planned, entries []Entry, now int64) Status {
	switch {
	case pl.unlimited:
		return Status{Code: CodeOK, Remaining: math.MaxUint32}
	case pl.r == nil:
		return Status{Code: CodeOK}
	}
	r, d, hits := pl.r, pl.d, pl.hits
	if pl.refund {
		// A refund is never refused, and counts in no hit counter.
		return Status{Code: CodeOK, Limit: r.limit(), Remaining: uint32(min(max(d.Remaining, 0), int64(r.requests))),
			ResetAfter: resetAfter(r, d, now)}
	}
	limit := uint64(r.requests)
	var before, after uint64
	over := !d.Allowed
	if r.kind == algo.KindFixed {
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
	s := Status{Code: CodeOK, Limit: r.limit(), Remaining: uint32(min(max(d.Remaining, 0), math.MaxUint32))}
	if over {
		s.Remaining = 0
	}
	s.ResetAfter = resetAfter(r, d, now)
	e.count(r, entries, over, before, after, hits, now)
	switch {
	case !over || r.shadow:
	case r.quota:
		s.ResetAfter = 0 // as theirs: a quota-mode status carries no duration
	default:
		s.Code = CodeOverLimit
		s.RetryAfter = s.ResetAfter
		if r.kind != algo.KindFixed && d.RetryAfter > 0 {
			s.RetryAfter = time.Duration(algo.Millis(d.RetryAfter)) * time.Millisecond
		}
	}
	return s
}

// resetAfter is duration_until_reset: for a fixed window envoyproxy/ratelimit's
// CalculateReset, the window's length in whole seconds less the seconds into it
// (whole-second windows, any decision); for the other algorithms the time until the
// key is fresh.
func resetAfter(r *rule, d algo.Decision, now int64) time.Duration {
	if r.kind != algo.KindFixed {
		return time.Duration(algo.Millis(d.ResetAfter)) * time.Millisecond
	}
	w := r.window.Microseconds()
	if w%1e6 == 0 {
		sec := w / 1e6
		return time.Duration(sec-(now/1e6)%sec) * time.Second
	}
	return time.Duration(w-now%w) * time.Microsecond
}

// checkSchedule is algo's CheckSchedule for the kinds it bounds (it divides by the
// limit, which a fixed window may have 0).
func checkSchedule(r algo.Request) error {
	if r.Kind == algo.KindGCRA || r.Kind == algo.KindLeaky {
		return r.CheckSchedule()
	}
	return nil
}
