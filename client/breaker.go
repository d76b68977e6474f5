package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Breaker is the circuit breaker of Fallback, for a caller that fails open or closed
// instead of deciding locally: after Failures consecutive calls that returned
// ErrUnavailable it refuses every call at once, without I/O, for Backoff, then lets one
// call probe the server, as Fallback's breaker does. An outage then costs one timeout
// per pause, not one per call. It is safe for concurrent use.
type Breaker struct {
	b    breaker
	last atomic.Pointer[error] // the failure that opened the circuit, or its latest probe's
}

// NewBreaker returns a closed Breaker with f's Failures, Backoff and MaxBackoff (zero
// fields take their defaults); f.Replicas is not used.
func NewBreaker(f Fallback) (*Breaker, error) {
	b := &Breaker{}
	if err := b.b.init(&f); err != nil {
		return nil, err
	}
	return b, nil
}

// Do runs call unless the circuit is open, and records its outcome: an error that is
// not ErrUnavailable (a bad limit) is an answer from the server, and a call its
// caller cancelled says nothing. While the circuit is open Do returns at once an
// error that wraps ErrUnavailable and the failure that opened it, so that errors.Is
// still finds the root cause ("connection refused").
func (b *Breaker) Do(ctx context.Context, call func(ctx context.Context) error) error {
	if !b.b.allow() {
		if last := b.last.Load(); last != nil {
			return fmt.Errorf("%w (circuit open; the last failure: %w)", ErrUnavailable, *last)
		}
		return fmt.Errorf("%w (circuit open)", ErrUnavailable)
	}
	err := call(ctx)
	switch {
	case err == nil || !errors.Is(err, ErrUnavailable):
		b.b.success()
	case errors.Is(ctx.Err(), context.Canceled):
		b.b.abandon()
	default:
		b.last.Store(&err)
		b.b.failure()
	}
	return err
}

// init validates f's breaker fields and sets b from them, closed.
func (b *breaker) init(f *Fallback) error {
	switch {
	case f.Failures < 0:
		return fmt.Errorf("client: Fallback.Failures must be at least 1 (0: %d), got %d", DefaultFailures, f.Failures)
	case f.Backoff < 0 || f.MaxBackoff < 0:
		return fmt.Errorf("client: Fallback.Backoff and MaxBackoff must not be negative, got %v and %v", f.Backoff, f.MaxBackoff)
	}
	b.failures = int64(orDefault(f.Failures, DefaultFailures))
	b.backoff = orDefault(f.Backoff, DefaultBackoff)
	b.maxBackoff = orDefault(f.MaxBackoff, DefaultMaxBackoff)
	b.now = time.Now
	if b.maxBackoff < b.backoff {
		return fmt.Errorf("client: Fallback.MaxBackoff (%v) is below Backoff (%v)", b.maxBackoff, b.backoff)
	}
	return nil
}
