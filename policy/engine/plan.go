package engine

import (
	"fmt"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
)

// planRequest matches each descriptor of req, a checked request of domain d, to the
// rule that charges it, as Decide and Resolve share it: its priority class taken
// out, a descriptor limit overriding the rule, an unlimited rule and the rules
// another's replaces names dropped, and each remaining one's request (hits as cost)
// checked and its state key appended to keys. It appends to plan, and returns both
// grown (a caller passes buffers on its stack); a request it refuses
// (policy.ErrInvalidRequest) is refused before anything is spent.
func planRequest(d *config.Domain, req policy.Request, plan []planned, keys []byte) ([]planned, []byte, error) {
	var classed []policy.Entry // the entries less their priority entries, all descriptors'
	if d.HasPriorities() {
		n := 0
		for _, desc := range req.Descriptors {
			n += len(desc.Entries)
		}
		classed = make([]policy.Entry, 0, n)
	}
	replacing := false
	for _, desc := range req.Descriptors {
		pl := planned{hits: hitsOf(req, desc), entries: desc.Entries}
		if d.HasPriorities() {
			var err error
			if pl.entries, pl.class, err = d.Class(desc.Entries, classed[len(classed):]); err != nil {
				return nil, nil, err
			}
			classed = classed[:len(classed)+len(pl.entries)]
		}
		r, shared := d.Match(pl.entries)
		if desc.Limit != nil {
			var err error
			if r, err = d.Override(r, *desc.Limit); err != nil {
				return nil, nil, err
			}
		}
		if r != nil && r.Unlimited {
			r, pl.unlimited = nil, true
		}
		pl.r, pl.shared = r, shared
		replacing = replacing || r != nil && len(r.Replaces) > 0
		plan = append(plan, pl)
	}
	if replacing {
		dropReplaced(plan)
	}
	// Every request is checked before any is charged, so a bad one spends nothing.
	for i := range plan {
		pl := &plan[i]
		if pl.r == nil {
			continue
		}
		pl.req = pl.r.Request
		pl.req.Cost = int64(pl.hits)
		pl.req.Spend = pl.r.Request.Kind == algo.KindFixed && !d.AllOrNothing()
		if d.HasPriorities() {
			pl.req.Reserve = d.Reserve(pl.class, pl.req)
		}
		if req.Descriptors[i].Negative {
			// Give back what earlier calls spent (algo's refunds), never past a
			// fresh key's room.
			pl.req.Refund, pl.req.Cost, pl.req.Reserve, pl.refund = pl.req.Cost, 0, 0, true
		}
		if err := config.CheckSchedule(pl.req); err != nil {
			return nil, nil, fmt.Errorf("%w: descriptor %d: hits %d: %v", policy.ErrInvalidRequest, i, pl.hits, err)
		}
		pl.from = len(keys)
		keys = pl.r.AppendKey(keys, pl.entries, pl.shared)
		pl.to = len(keys)
	}
	return plan, keys, nil
}
