package client

import (
	"context"
	"fmt"
	"time"
)

// Wait blocks until a request of cost 1 on key is allowed under l, or ctx ends; it is
// WaitN(ctx, key, l, 1).
func (c *Client) Wait(ctx context.Context, key string, l Limit) error {
	return c.WaitN(ctx, key, l, 1)
}

// WaitN blocks until a request of cost n on key is allowed under l (and consumed), or
// ctx ends, as golang.org/x/time/rate's WaitN does: a denied call sleeps its
// RetryAfter, never too early, and asks again, since other callers may take the place
// meanwhile. Under Leaky, an allowed call then sleeps its place in the queue
// (RetryAfter) before WaitN returns.
//
// It returns at once, without waiting, an error wrapping ErrBadLimit for a cost that
// can never pass (RetryAfter Never), and one wrapping context.DeadlineExceeded when the
// wait would outlast ctx's deadline. Errors of the calls are returned as they come.
func (c *Client) WaitN(ctx context.Context, key string, l Limit, n int) error {
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
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("client: waiting %v would pass the context's deadline: %w", wait, context.DeadlineExceeded)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if res.Allowed {
			return nil // its turn in the Leaky queue has come
		}
	}
}
