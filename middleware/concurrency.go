package middleware

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/client"
)

// DefaultRenew is Concurrency.Renew when it is 0 and the Lease is 2 s or longer.
const DefaultRenew = time.Second

// concurrency is Config.Concurrency with its key prefix made once.
type concurrency struct {
	Concurrency
	prefix string        // Config.Prefix + Name + ":"
	renew  time.Duration // Renew or its default
	least  time.Duration // the shortest lease asked: 2 renews, or Lease if shorter
	// reserves are the places each priority class (classes.index) leaves to those
	// above it: RL.ACQUIRE's RESERVE.
	reserves []int
}

// newConcurrency checks c and makes it ready, its keys starting with prefix.
func newConcurrency(c Concurrency, prefix string) (*concurrency, error) {
	switch {
	case c.Limit < 1:
		return nil, fmt.Errorf("middleware: concurrency %q: Limit must be at least 1, got %d", c.Name, c.Limit)
	case c.Lease < time.Millisecond || c.Lease > maxLease || c.Lease%time.Millisecond != 0:
		return nil, fmt.Errorf("middleware: concurrency %q: Lease must be a whole number of milliseconds from 1ms to %v, got %v",
			c.Name, maxLease, c.Lease)
	case c.Renew < 0:
		return nil, fmt.Errorf("middleware: concurrency %q: Renew must not be negative, got %v", c.Name, c.Renew)
	case c.Lease < c.Renew:
		return nil, fmt.Errorf("middleware: concurrency %q: Lease (%v) is shorter than Renew (%v): the place would lapse between renewals",
			c.Name, c.Lease, c.Renew)
	}
	renew := c.Renew
	if renew == 0 {
		renew = max(time.Millisecond, min(DefaultRenew, c.Lease/2))
	}
	return &concurrency{Concurrency: c, prefix: prefix + c.Name + ":", renew: renew, least: min(2*renew, c.Lease)}, nil
}

// estimate is how long a handler runs, an exponentially weighted mean of the requests
// that held a lease (weight 1/4 to the newest): what a lease's deadline aims at.
type estimate struct {
	ns atomic.Int64 // 0 before the first request ends; a request ends in 1 ns at least
}

// observe adds a request that ran d. Two at once may lose one: an estimate.
func (e *estimate) observe(d time.Duration) {
	d = max(d, 1)
	if old := time.Duration(e.ns.Load()); old != 0 {
		d = old + (d-old)/4
	}
	e.ns.Store(int64(max(d, 1)))
}

// lease is the lease to ask for a request that has run elapsed: until its expected
// end, so that a refused client is told when the earliest place will really free,
// kept between c.least (a renewal late by a whole interval still finds it live) and
// c.Lease (the most a crashed instance holds a place), in whole ms.
func (e *estimate) lease(c *concurrency, elapsed time.Duration) time.Duration {
	d := min(max(time.Duration(e.ns.Load())-elapsed, c.least), c.Lease)
	return time.Duration(ceilDiv(d, time.Millisecond)) * time.Millisecond
}

// keep renews lease every Renew while the request runs, each time to its expected
// end (estimate.lease); stop ends the renewals and returns once none is under way.
// A renewal that fails is not retried (the next one may succeed, and the place ends
// by itself otherwise); a lease found ended is left: its place may be taken.
func (l *Limiter) keep(lease *client.Lease, start time.Time, took *estimate) (stop func()) {
	if lease == nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(l.conc.renew)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ttl := took.lease(l.conc, l.now().Sub(start))
			var live bool
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			err := l.call(ctx, func(ctx context.Context) (err error) {
				live, err = lease.Renew(ctx, ttl)
				return err
			})
			cancel()
			if err == nil && !live {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// acquire takes the request's concurrency lease, or answers the request: 429 when
// the key has no place, or the failure mode's answer. failed reports a failure,
// counted and logged; answered that the request got its answer. lease is nil when
// there is none to give back (no key, a failure): Release does nothing on nil.
// reserve is the places the request's class leaves to the classes above it.
func (l *Limiter) acquire(ctx context.Context, w http.ResponseWriter, r *http.Request, user, ip, route string, degraded bool, ttl time.Duration, reserve int) (lease *client.Lease, failed, answered bool) {
	key, ok := makeKey(l.conc.prefix, l.conc.By, user, ip, route)
	if !ok {
		return nil, false, false
	}
	began := l.now()
	err := l.call(ctx, func(ctx context.Context) (err error) {
		if reserve > 0 {
			lease, err = l.client.AcquireReserving(ctx, key, l.conc.Limit, reserve, ttl)
		} else {
			lease, err = l.client.Acquire(ctx, key, l.conc.Limit, ttl)
		}
		return err
	})
	if err == nil && !degraded {
		l.answered(r, lease.Degraded)
	}
	if err == nil && lease.Degraded && l.fallback != FallbackLocal {
		lease.Release(ctx)
		err = client.ErrUnavailable // decided locally, but this Limiter fails open or closed
	}
	if err == nil && lease.Degraded && !degraded { // the rate limits' call has counted it already
		l.decidedLocally(r)
	}
	h := w.Header()
	switch {
	case err != nil:
		l.fail(r, began, fmt.Errorf("concurrency %q: %w", l.conc.Name, err))
		closed := l.fallback == FallbackClosed
		if closed {
			refuseClosed(w)
		}
		return nil, true, closed
	case !lease.Acquired:
		l.busy.Add(1)
		clearInformational(h) // the rate dimensions admitted: a refusal shows its own limit only
		// Rounded to the nearest second, not up: the wait is an estimate (when the
		// earliest handler is expected to return), and rounding it up would tell
		// every client up to a second too late.
		refuse(w, "concurrency_limited", lease.RetryAfter, true)
		return nil, false, true
	}
	return lease, false, false
}
