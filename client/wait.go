package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/spread"
)

// Wait blocks until a request of cost 1 on key is allowed under l, or ctx ends; it is
// WaitN(ctx, key, l, 1).
func (c *Client) Wait(ctx context.Context, key string, l Limit) error {
	return c.WaitN(ctx, key, l, 1)
}

// WaitN blocks until a request of cost n on key is allowed under l (and consumed), or
// ctx ends, as golang.org/x/time/rate's WaitN does. The Client's callers of WaitN on
// one key take turns, in the order they came, as x/time/rate's reservations do: only
// the first asks rlserver; a denied call sleeps its RetryAfter, spread (never early,
// up to a tenth later, package spread, so that the processes sharing the key do not
// all ask at once) and asks again, since other clients may take the place meanwhile;
// an allowed one leaves the line to the next. Under Leaky, an allowed call then
// sleeps its place in the queue (RetryAfter) before WaitN returns.
//
// It returns at once, without waiting, an error wrapping ErrBadLimit for a cost that
// can never pass (RetryAfter Never), and one wrapping context.DeadlineExceeded when the
// wait would outlast ctx's deadline. Errors of the calls are returned as they come.
func (c *Client) WaitN(ctx context.Context, key string, l Limit, n int) error {
	leave, err := c.lines.enter(ctx, key)
	if err != nil {
		return err
	}
	defer func() { leave() }()
	for {
		res, err := c.AllowN(ctx, key, l, n)
		if err != nil {
			return err
		}
		wait := res.RetryAfter
		switch {
		case res.Allowed && wait == 0:
			return nil
		case wait == Never:
			return fmt.Errorf("%w: a cost of %d can never pass %s's limit of %d", ErrBadLimit, n, l.kind.Command(), res.Limit)
		}
		sleep := spread.Wait(wait)
		if deadline, ok := ctx.Deadline(); ok {
			left := time.Until(deadline)
			if left < wait {
				return fmt.Errorf("client: waiting %v would pass the context's deadline: %w", wait, context.DeadlineExceeded)
			}
			sleep = min(sleep, max(wait, left-time.Millisecond))
		}
		if res.Allowed { // a place in the Leaky queue: the next caller may ask now
			leave()
			leave = func() {}
		}
		if err := sleepCtx(ctx, sleep); err != nil {
			return err
		}
		if res.Allowed {
			return nil // its turn in the Leaky queue has come
		}
	}
}

// sleepCtx sleeps d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitLines are WaitN's callers of one Client, a line per key; the zero value is
// ready.
type waitLines struct {
	mu    sync.Mutex
	lines map[string]*waitLine
}

// waitLine is one key's line: turn holds a token while a caller is at the head (the
// runtime lets a channel's blocked senders through in the order they came), n counts
// the callers in line, so the last to leave deletes it.
type waitLine struct {
	turn chan struct{}
	n    int
}

// enter waits for the caller's turn on key, or until ctx ends (its error); leave,
// called once, gives the turn to the next caller.
func (w *waitLines) enter(ctx context.Context, key string) (leave func(), err error) {
	w.mu.Lock()
	if w.lines == nil {
		w.lines = map[string]*waitLine{}
	}
	l := w.lines[key]
	if l == nil {
		l = &waitLine{turn: make(chan struct{}, 1)}
		w.lines[key] = l
	}
	l.n++
	w.mu.Unlock()
	out := func() {
		w.mu.Lock()
		if l.n--; l.n == 0 {
			delete(w.lines, key)
		}
		w.mu.Unlock()
	}
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn; out() }, nil
	case <-ctx.Done():
		out()
		return nil, ctx.Err()
	}
}
