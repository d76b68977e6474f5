package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/keyfamily"
)

// DefaultSliceIdle is SliceOptions.Idle when 0.
const DefaultSliceIdle = time.Second

// SliceOptions configures a Slicer. The zero value is valid.
type SliceOptions struct {
	// Replicas is how many processes share the limits: a slice is at most
	// 1/(2·Replicas) of what the key has left at the server, so that no replica holds
	// much more than its share. 0 means the Client's Fallback.Replicas, or 1 without.
	Replicas int
	// Idle is how long a key goes unused before what the Slicer holds of it is given
	// back; 0 means DefaultSliceIdle.
	Idle time.Duration
}

// SliceStats counts a Slicer's work since it was made: slices, and units (a cost-1
// request is one).
type SliceStats struct {
	Asked     int64 // slices asked of the server: the round trips
	Taken     int64 // units the slices granted
	Used      int64 // units admitted in-process from them
	GivenBack int64 // units given back (Refund): when a key idled, and on Close
	Expired   int64 // units that reached their slice's Until unused, or whose give-back failed: quota not admitted
}

// Slicer decides calls on keys in-process, from slices of their quota taken at the
// server (TakeSlice), so that a hot key costs a round trip per slice, not per call,
// and the key's limit holds with every other process admitting from it: a unit is
// spent at the server before it is admitted here, and never admitted past its
// slice's Until.
//
// Per key and Limit, a Slicer holds what slices granted and admits calls from them,
// the soonest to expire first. It asks for the next slice when half of the last one
// is left, so that in steady state no call waits on the network; a call finding
// nothing held waits for the slice asked. A slice is about the last 100 ms of the
// key's own use, capped at 1/(2·Replicas) of what the server had left, so that
// replicas share the limit and, near it, slices shrink to single units: the last
// units of a window are taken one call at a time. Refused by the server, the key is
// refused in-process until the time the server said. What a key holds goes back
// (Refund) when it has been idle for SliceOptions.Idle, and on Close, when enough of
// the slice's life is left for the refund to reach the server in time.
//
// A Result decided in-process has the Limit the server last said, Remaining the
// units held plus what the server had left at its last slice, and ResetAfter counted
// from its last reply.
//
// When the server cannot answer, the units held are spent first; then the call is
// decided by the Client's Fallback if it has one (Degraded), or returns
// ErrUnavailable. Limits without slices (Log, Leaky), costs of 0 or above the limit,
// and calls after Close are decided by the Client, as Client.AllowN does.
type Slicer struct {
	c        *Client
	replicas int64
	idle     time.Duration
	now      func() time.Time

	mu     sync.RWMutex
	keys   map[sliceID]*sliceKey
	closed bool

	fetches sync.WaitGroup // slices asked and not answered
	stop    chan struct{}  // closed by Close: the sweeper stops
	swept   chan struct{}  // closed when the sweeper has stopped

	fams keyfamily.Table[sliceCounts] // SliceStats' counters, by key family (slicestats.go)
}

// sliceID names what a Slicer holds: one key under one Limit.
type sliceID struct {
	key   string
	limit Limit
}

// NewSlicer returns a Slicer deciding from slices taken through c, which must be
// New's or NewEmbedded's (NewLua's answers ErrNoSlice). Close it to give back what
// it holds.
func (c *Client) NewSlicer(opts SliceOptions) (*Slicer, error) {
	if _, lua := c.backend.(luaBackend); lua {
		return nil, ErrNoSlice
	}
	if opts.Replicas < 0 || opts.Idle < 0 {
		return nil, fmt.Errorf("client: SliceOptions.Replicas and Idle must be at least 0, got %d and %v", opts.Replicas, opts.Idle)
	}
	replicas := opts.Replicas
	if replicas == 0 && c.fallback != nil {
		replicas = int(c.fallback.replicas)
	}
	s := &Slicer{c: c, replicas: int64(max(replicas, 1)), idle: orDefault(opts.Idle, DefaultSliceIdle), now: c.now,
		keys: map[sliceID]*sliceKey{}, stop: make(chan struct{}), swept: make(chan struct{})}
	go s.sweeper()
	return s, nil
}

// Allow decides one request of cost 1 on key under l.
func (s *Slicer) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	return s.AllowN(ctx, key, l, 1)
}

// AllowN decides one request of cost n on key under l, from what the Slicer holds
// of it when it can.
func (s *Slicer) AllowN(ctx context.Context, key string, l Limit, n int) (Result, error) {
	d, err := s.decide(ctx, key, l, n)
	d.admit()
	return d.res, err
}

// AllowAll decides the rules as Client.AllowAll does, all or nothing, each from what
// s holds of its key: when one refuses, the units the others took go back to what s
// holds, never admitted. A set with a rule that takes no slice (Log, Leaky, a cost
// above its limit) is decided by the Client's AllowAll. Units the Fallback decided
// (the server down) cannot go back: a refusal after them leaves them spent locally.
func (s *Slicer) AllowAll(ctx context.Context, rules ...Rule) (AllResult, error) {
	seen := make(map[string]bool, len(rules))
	for _, r := range rules {
		if !r.Limit.kind.Sliceable() || r.Cost < 0 || int64(max(r.Cost, 1)) > r.Limit.n || seen[r.Key] || len(rules) > algo.MaxRules {
			return s.c.AllowAll(ctx, rules...) // it decides, or says what is wrong
		}
		seen[r.Key] = true
	}
	res := AllResult{Allowed: true, Results: make([]Result, len(rules))}
	ds := make([]decided, len(rules))
	for i, r := range rules {
		d, err := s.decide(ctx, r.Key, r.Limit, max(r.Cost, 1))
		if err != nil {
			s.untake(ds[:i])
			return AllResult{}, fmt.Errorf("rule %d: %w", i, err)
		}
		ds[i], res.Results[i] = d, d.res
		res.Allowed = res.Allowed && d.res.Allowed
		res.Degraded = res.Degraded || d.res.Degraded
	}
	if !res.Allowed {
		s.untake(ds)
		return res, nil
	}
	for _, d := range ds {
		d.admit()
	}
	return res, nil
}

// decided is a call's decision by a Slicer: its Result, the time it was made at, and,
// when units were taken from a slice, the key and the first Until they came from.
type decided struct {
	res   Result
	at    time.Time
	n     int64
	k     *sliceKey // nil when not decided from a slice
	until time.Time
}

// admit counts d's units as used, if they came from a slice: only once the call is
// admitted, so that Used, a Prometheus counter, never goes back.
func (d decided) admit() {
	if d.k != nil {
		d.k.counts.used.Add(d.n)
	}
}

// untake puts back the units the allowed calls ds took from slices.
func (s *Slicer) untake(ds []decided) {
	now := s.now()
	for _, d := range ds {
		if d.k == nil || !d.res.Allowed {
			continue
		}
		d.k.mu.Lock()
		if !d.k.untake(d.n, d.until, now) {
			d.k.counts.expired.Add(d.n) // never admitted, and too late to hold
		}
		d.k.mu.Unlock()
	}
}

// decide is AllowN, with the time the decision was made at (the oracle test counts
// admissions in the windows they were made in) and where its units came from, not
// yet counted as used (decided.admit).
func (s *Slicer) decide(ctx context.Context, key string, l Limit, n int) (decided, error) {
	if err := l.Validate(); err != nil {
		return decided{}, err
	}
	var k *sliceKey
	if l.kind.Sliceable() && n > 0 && int64(n) <= l.n {
		k = s.key(key, l)
	}
	need := int64(n)
	for {
		if k == nil { // no slice for l or n, or s is closed
			res, err := s.c.AllowN(ctx, key, l, n)
			return decided{res: res, at: s.now()}, err
		}
		now := s.now()
		k.counts.expired.Add(k.expire(now))
		if until, ok := k.take(need, now); ok {
			if size := k.ahead(now, l.n, s.replicas); size > 0 {
				s.ask(k, key, l, size)
			}
			d := decided{res: k.result(true, now), at: now, n: need, k: k, until: until}
			k.mu.Unlock()
			return d, nil
		}
		if now.Before(k.deniedUntil) {
			d := decided{res: k.result(false, now), at: now}
			k.mu.Unlock()
			return d, nil
		}
		f := k.fetch
		if f == nil {
			f = s.ask(k, key, l, k.size(now, need-k.holding(), l.n, s.replicas))
		}
		if k.down && s.c.fallback != nil {
			// The server is down: the slice asked probes it, as the breaker allows,
			// and the calls meanwhile are decided locally, as the Client's are.
			k.mu.Unlock()
			res, at := s.local(key, l, n)
			return decided{res: res, at: at}, nil
		}
		k.mu.Unlock()
		var err error
		select {
		case <-f.done:
			err = f.err
		case <-ctx.Done():
			err = ctx.Err()
		}
		switch {
		case err == nil:
			k = s.key(key, l)
		case s.c.fallback != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable)):
			res, at := s.local(key, l, n)
			return decided{res: res, at: at}, nil
		case errors.Is(err, ctx.Err()):
			return decided{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		default:
			return decided{}, err
		}
	}
}

// key returns what s holds of key under l, locked, or nil once s is closed.
func (s *Slicer) key(key string, l Limit) *sliceKey {
	id := sliceID{key, l}
	for {
		s.mu.RLock()
		k := s.keys[id]
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			return nil
		}
		if k == nil {
			s.mu.Lock()
			if k = s.keys[id]; k == nil && !s.closed {
				k = newSliceKey()
				k.counts = s.fams.Get([]byte(key))
				s.keys[id] = k
			}
			s.mu.Unlock()
			if k == nil {
				return nil
			}
		}
		k.mu.Lock()
		if !k.gone {
			return k
		}
		k.mu.Unlock() // swept meanwhile: a new one takes its place
	}
}

// ask sends k's request for a slice of n units, k locked; got records the answer.
func (s *Slicer) ask(k *sliceKey, key string, l Limit, n int64) *fetch {
	f := k.ask(n)
	k.counts.asked.Add(1)
	s.fetches.Add(1)
	go func() {
		defer s.fetches.Done()
		sl, err := s.c.TakeSlice(context.Background(), key, l, int(n))
		now := s.now()
		k.mu.Lock()
		k.fetch, f.err, k.down = nil, err, errors.Is(err, ErrUnavailable)
		var back int64
		if err == nil {
			k.counts.taken.Add(int64(sl.Granted))
			k.got(sl, now)
			if k.gone { // closed or swept while asked: nothing will spend it
				back = k.giveBack(now)
				k.counts.expired.Add(k.holding()) // too close to their end to go back
				k.held = nil
			}
		}
		k.mu.Unlock()
		close(f.done)
		s.giveBack(k, key, l, back)
	}()
	return f
}

// local decides the call on key by the Client's Fallback, when no slice could be
// had, and returns the time it decided at.
func (s *Slicer) local(key string, l Limit, n int) (Result, time.Time) {
	now := s.c.fallback.local.clock()
	res := resultOf(s.c.fallback.decideAt(key, l.request(int64(n), false), now))
	res.Degraded = true
	return res, now
}

// giveBack refunds n units k held of key under l, if any, within the Client's
// budget; units that could not go back count as expired: lost to the limit.
func (s *Slicer) giveBack(k *sliceKey, key string, l Limit, n int64) error {
	if n == 0 {
		return nil
	}
	if _, err := s.c.Refund(context.Background(), key, l, int(n)); err != nil {
		k.counts.expired.Add(n)
		return err
	}
	k.counts.given.Add(n)
	return nil
}

// sweeper gives back, every half Idle, what the keys idle for Idle hold, and forgets
// them, until Close.
func (s *Slicer) sweeper() {
	defer close(s.swept)
	t := time.NewTicker(s.idle / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweep(s.now(), false)
		}
	}
}

// sweep gives back what the keys idle at now hold (all keys if closing) and forgets
// the keys that hold nothing more, and returns the refunds' errors.
func (s *Slicer) sweep(now time.Time, closing bool) error {
	s.mu.RLock()
	ids := make([]sliceID, 0, len(s.keys))
	ks := make([]*sliceKey, 0, len(s.keys))
	for id, k := range s.keys {
		ids, ks = append(ids, id), append(ks, k)
	}
	s.mu.RUnlock()
	var errs []error
	for i, k := range ks {
		k.mu.Lock()
		k.counts.expired.Add(k.expire(now))
		var back int64
		if closing || k.fetch == nil && now.Sub(k.lastUse) >= s.idle {
			back = k.giveBack(now)
			k.counts.expired.Add(k.holding()) // too close to their end to go back: they will expire
			k.held, k.gone = nil, true
		}
		gone := k.gone
		k.mu.Unlock()
		if gone {
			s.mu.Lock()
			if s.keys[ids[i]] == k {
				delete(s.keys, ids[i])
			}
			s.mu.Unlock()
		}
		errs = append(errs, s.giveBack(k, ids[i].key, ids[i].limit, back))
	}
	return errors.Join(errs...)
}

// Close gives back what s holds, after the slices asked have been answered, and
// stops its sweeper; later calls are decided by the Client. It returns the errors
// of the refunds (the units they held are lost to the limit until their Until).
func (s *Slicer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.swept
	err := s.sweep(s.now(), true) // every key gone: no more asks
	s.fetches.Wait()              // each answered after gives back what it got
	return err
}
