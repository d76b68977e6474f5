package region

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/client"
)

// maxDebts bounds the keys whose outage admissions wait to be counted at the home,
// so that an outage with many keys costs bounded memory: past it, further keys'
// admissions are not recorded, and not counted at the home.
const maxDebts = 100_000

// debtID names what a region admitted by its fallback: one key under one Limit.
type debtID struct {
	key string
	l   client.Limit
}

// debt is the units a region admitted on one key while its home did not answer.
type debt struct {
	units  int64
	limit  int64 // the most one slice takes: the limiter's limit
	window int64 // Fixed and Slide: the window's length in µs; 0 for Token and GCRA
	index  int64 // Fixed and Slide: which window (time / window) the units were in
}

// debts are the admissions a region's fallback made, until the home counts them
// (settle). Only the units of the window the home is still in can be counted for a
// Fixed or Slide key: the home's count of an ended window is gone.
type debts struct {
	mu sync.Mutex
	m  map[debtID]debt
	n  atomic.Int64 // len(m): read on every call decided from the home, without mu

	settling atomic.Bool
	dropped  atomic.Int64 // units add dropped since the last settle: a window ended, too many keys

	counted, unmet atomic.Int64 // units settled since the start: counted at the home, or not (INFO)
}

func newDebts() debts { return debts{m: map[debtID]debt{}} }

// pending reports whether admissions wait to be counted at the home.
func (d *debts) pending() bool { return d.n.Load() > 0 }

// add records that req was admitted on key under l by the fallback at now.
func (d *debts) add(key string, l client.Limit, req algo.Request, now time.Time) {
	next := debt{units: req.Cost, limit: req.Limit}
	if req.Kind == algo.KindFixed || req.Kind == algo.KindSlide {
		next.window, next.index = req.Window, now.UnixMicro()/req.Window
	}
	id := debtID{key, l}
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.m[id]
	switch {
	case !ok && len(d.m) >= maxDebts:
		d.dropped.Add(req.Cost)
		return
	case ok && old.index == next.index:
		next.units += old.units
	case ok: // a window ended: its units can no longer be counted
		d.dropped.Add(old.units)
	}
	d.m[id] = next
	d.n.Store(int64(len(d.m)))
}

// settle counts at the home what the region's fallback admitted, once the home
// answers again: a slice of the units admitted (RL.SLICE takes what fits, never
// more than the limit), spent and never used. One settle runs at a time; a home
// that fails again keeps the rest for the next.
func (r *Region) settle() {
	d := &r.debts
	if !d.settling.CompareAndSwap(false, true) {
		return
	}
	defer d.settling.Store(false)
	d.mu.Lock()
	m := d.m
	d.m = map[debtID]debt{}
	d.n.Store(0)
	d.mu.Unlock()
	counted, unmet := int64(0), d.dropped.Swap(0)
	for id, dt := range m {
		now := time.Now()
		if dt.window > 0 && now.UnixMicro()/dt.window != dt.index {
			unmet += dt.units
			continue
		}
		s, err := r.c.TakeSlice(context.Background(), id.key, id.l, int(min(dt.units, dt.limit)))
		if errors.Is(err, client.ErrUnavailable) {
			r.keep(id, dt)
			continue
		}
		counted += int64(s.Granted)
		unmet += dt.units - int64(s.Granted)
	}
	d.counted.Add(counted)
	d.unmet.Add(unmet)
	if counted+unmet > 0 {
		r.opts.Logger.Info("region: the home counted what this region admitted while it did not answer",
			"counted", counted, "not counted", unmet)
	}
}

// owed is the keys and units that wait to be counted at the home.
func (d *debts) owed() (keys, units int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dt := range d.m {
		units += dt.units
	}
	return int64(len(d.m)), units
}

// keep puts back a debt the home could not take, added to what came since.
func (r *Region) keep(id debtID, dt debt) {
	d := &r.debts
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.m[id]; ok {
		if cur.index != dt.index { // a newer window's: dt's can no longer be counted
			d.dropped.Add(dt.units)
			return
		}
		dt.units += cur.units
	}
	d.m[id] = dt
	d.n.Store(int64(len(d.m)))
}
