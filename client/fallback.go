package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

// Fallback makes a Client keep limiting when its server cannot answer: a call that
// fails or overruns its budget is decided in-process instead, by an embedded store, at
// this replica's share of the limit. With N app replicas sharing a limit of 100 a
// second, each decides 100/N a second locally, so that together they still admit about
// the limit. The Result says Degraded.
//
// A circuit breaker spares a dead server the calls, and the app their timeouts: after
// Failures consecutive failures the Client stops calling the server and decides every
// call locally for Backoff, then lets one call probe the server; a probe that fails
// doubles the pause, up to MaxBackoff, and one that succeeds closes the circuit: calls
// go to the server again.
//
// The local state is not the server's: a key drained on the server starts fresh
// locally, and what was consumed locally is not carried back. A limit is divided
// rounding down, at least 1: Token(100, time.Second) over 3 replicas is 33 a second
// locally, with a capacity of 33. Leases are divided rounding up, so that each
// replica keeps at least one.
type Fallback struct {
	// Replicas is N, how many app replicas share the limits: each decides locally at
	// 1/N of every limit. Required, at least 1.
	Replicas int
	// Failures is how many consecutive failures open the circuit; 0 means 3.
	Failures int
	// Backoff is the first pause before the server is probed; 0 means 100 ms.
	Backoff time.Duration
	// MaxBackoff caps the pause as failed probes double it; 0 means 5 s.
	MaxBackoff time.Duration
}

// Defaults of Fallback's zero fields.
const (
	DefaultFailures   = 3
	DefaultBackoff    = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// fallback is a Client's local decider and the breaker in front of its server.
type fallback struct {
	replicas int64
	local    embeddedBackend
	breaker  breaker
}

// newFallback validates f and builds its local store.
func newFallback(f *Fallback, maxLog int64) (*fallback, error) {
	if f.Replicas < 1 {
		return nil, fmt.Errorf("client: Fallback.Replicas must be at least 1 (the app replicas sharing the limits), got %d", f.Replicas)
	}
	fb := &fallback{replicas: int64(f.Replicas)}
	if err := fb.breaker.init(f); err != nil {
		return nil, err
	}
	st, err := store.New(store.Config{MaxLogLimit: maxLog})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	fb.local = embeddedBackend{store: st, clock: time.Now, maxLogLimit: maxLog}
	return fb, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// share is r at this replica's share: every count of the limit divided by the
// replicas, rounding down, at least 1 (a queue may be 0).
func (f *fallback) share(r algo.Request) algo.Request {
	part := func(n int64) int64 { return max(1, n/f.replicas) }
	r.Limit = part(r.Limit)
	switch {
	case r.Kind == algo.KindToken && r.Rate > 0:
		r.Rate = part(r.Rate)
	case r.Kind == algo.KindGCRA && r.Burst > 0:
		r.Burst = part(r.Burst)
	case r.Kind == algo.KindLeaky:
		r.Queue /= f.replicas
	}
	return r
}

// decide decides r on key locally, at the share. A share whose schedule the integer
// algorithms cannot hold (a long window cut into few requests, with a large cost) can
// never pass: it is refused as a cost above the limit is.
func (f *fallback) decide(key string, r algo.Request) algo.Decision {
	return f.decideAt(key, r, f.local.clock())
}

// decideAt is decide at now: for a caller that must know when it decided.
func (f *fallback) decideAt(key string, r algo.Request, now time.Time) algo.Decision {
	r = f.share(r)
	if r.CheckSchedule() != nil {
		return algo.Decision{Limit: r.Limit, RetryAfter: -1}
	}
	d, _ := f.local.decideAt(key, r, now) // the request was validated
	return d
}

// decideAll decides the rules locally, each at its share.
func (f *fallback) decideAll(rules []algo.Rule) (bool, []algo.Decision) {
	shared := make([]algo.Rule, len(rules))
	for i, r := range rules {
		shared[i] = algo.Rule{Key: r.Key, Req: f.share(r.Req)}
		if shared[i].Req.CheckSchedule() != nil {
			ds := make([]algo.Decision, len(rules))
			ds[i] = algo.Decision{Limit: shared[i].Req.Limit, RetryAfter: -1}
			return false, ds
		}
	}
	allowed, ds, _ := f.local.decideAll(context.Background(), shared)
	return allowed, ds
}

// acquire takes a lease locally, the limit divided rounding up.
func (f *fallback) acquire(key string, r algo.LeaseRequest) algo.LeaseDecision {
	r.Limit = (r.Limit + f.replicas - 1) / f.replicas
	d, _ := f.local.acquire(context.Background(), key, r)
	return d
}

// breaker is a circuit breaker: closed, calls go to the server; open, they are decided
// locally until retryAt, when one call probes the server.
type breaker struct {
	failures   int64         // consecutive failures that open it
	backoff    time.Duration // the first pause
	maxBackoff time.Duration
	now        func() time.Time

	// Read on every call, so that a healthy server's calls take no lock.
	open   atomic.Bool
	failed atomic.Int64 // consecutive failures so far

	mu      sync.Mutex    // orders the changes of open and failed, and guards:
	pause   time.Duration // the current pause, while open
	retryAt time.Time     // when the next probe may go, while open
	probing bool          // a probe is out
}

// allow reports whether a call may go to the server: always while closed; while
// open, only the one probe once the pause is over.
func (b *breaker) allow() bool {
	if !b.open.Load() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return true
	}
	if b.probing || b.now().Before(b.retryAt) {
		return false
	}
	b.probing = true
	return true
}

// success records an answer from the server: the circuit closes.
func (b *breaker) success() {
	if !b.open.Load() && b.failed.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failed.Store(0)
	b.probing = false
	b.open.Store(false)
}

// failure records a call the server did not answer: the K-th in a row opens the
// circuit, and a failed probe doubles the pause.
func (b *breaker) failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	failed := b.failed.Add(1)
	switch {
	case b.probing:
		b.probing = false
		b.pause = min(2*b.pause, b.maxBackoff)
		b.retryAt = b.now().Add(b.pause)
	case !b.open.Load() && failed >= b.failures:
		b.pause = b.backoff
		b.retryAt = b.now().Add(b.pause)
		b.open.Store(true)
	}
}

// abandon records a call whose caller gave up (its context cancelled): no verdict on
// the server, but a probe must not stay out for ever.
func (b *breaker) abandon() {
	if !b.open.Load() {
		return
	}
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// remote runs call on the server unless the fallback says to decide locally; it
// reports local when the caller must decide locally instead: the circuit is open, the
// call failed or overran its budget, or the caller's deadline had passed already. A
// caller that cancels its context gets its error, as without a fallback. Errors other
// than ErrUnavailable (a bad limit, a wrong type) are the caller's, returned as are.
func (c *Client) remote(ctx context.Context, call func(ctx context.Context) error) (local bool, err error) {
	f := c.fallback
	if f == nil {
		ctx, cancel, err := c.start(ctx)
		if err != nil {
			return false, err
		}
		defer cancel()
		return false, withContext(ctx, call(ctx))
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return true, nil
		}
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !f.breaker.allow() {
		return true, nil
	}
	budget, cancel, err := c.start(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	err = withContext(budget, call(budget))
	switch {
	case err == nil:
		f.breaker.success()
	case !errors.Is(err, ErrUnavailable):
		f.breaker.success() // the server answered, with an error of the caller's
	case errors.Is(ctx.Err(), context.Canceled):
		f.breaker.abandon()
	default:
		f.breaker.failure()
		return true, nil
	}
	return false, err
}
