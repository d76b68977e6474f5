package client

import (
	"context"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/algo"
)

// Lease is a place among a key's concurrent leases, taken by Acquire: at most limit
// are live at once, and each ends by itself at its deadline, so a process that dies
// holding one leaks its place for no longer than the lease's time.
type Lease struct {
	// Key is the key the lease was asked on.
	Key string
	// ID names the lease: the server's when Acquire made it, the caller's with
	// AcquireID. Empty when not Acquired.
	ID string
	// Acquired is true if the lease was taken (or, with AcquireID, found live and
	// extended).
	Acquired bool
	// Limit is the most leases live at once on the key.
	Limit int
	// Remaining is how many more leases could be taken right after this call.
	Remaining int
	// RetryAfter is, when not Acquired, how long until a lease ends and frees a place
	// (rounded up to the ms); 0 when Acquired.
	RetryAfter time.Duration
	// Degraded is true when the lease was taken in-process, at this replica's share
	// of the limit (Options.Fallback); Release and Renew then act on it there.
	Degraded bool

	client *Client
}

// Acquire takes one of limit concurrent leases on key for ttl (RL.ACQUIRE). When
// err is nil the Lease is never nil, and
//
//	lease, err := c.Acquire(ctx, "export:alice", 2, time.Minute)
//	if err != nil { ... }
//	defer lease.Release(ctx)
//	if !lease.Acquired { ... lease.RetryAfter ... }
//
// is always safe: Release does nothing for a lease not acquired. limit is 1 to the
// backend's log cap (rlserver's -max-log-limit, else the MaxLogLimit of LuaOptions or
// EmbeddedOptions: a lease costs what a log entry does); ttl is a whole number of
// milliseconds up to 365 days. Work longer than ttl must Renew.
func (c *Client) Acquire(ctx context.Context, key string, limit int, ttl time.Duration) (*Lease, error) {
	return c.acquire(ctx, key, algo.LeaseRequest{}, limit, ttl)
}

// AcquireReserving is Acquire keeping reserve of the limit's places for callers
// without a reserve (RL.ACQUIRE's RESERVE): a lease is taken only while fewer than
// limit − reserve are live, so sheddable work never takes the last places critical
// work needs. reserve is 0 to limit; rlserver and the embedded backend have it, the
// Lua backend answers ErrBadLimit.
func (c *Client) AcquireReserving(ctx context.Context, key string, limit, reserve int, ttl time.Duration) (*Lease, error) {
	if reserve < 0 || reserve > limit {
		return nil, fmt.Errorf("%w: lease reserve must be between 0 and the limit %d, got %d", ErrBadLimit, limit, reserve)
	}
	return c.acquire(ctx, key, algo.LeaseRequest{Reserve: int64(reserve)}, limit, ttl)
}

// AcquireID is Acquire with the lease's id chosen by the caller (1 to 128 bytes,
// unique among the key's leases): a retry of a call whose reply was lost finds its
// lease live and extends it, instead of taking a second place.
func (c *Client) AcquireID(ctx context.Context, key, id string, limit int, ttl time.Duration) (*Lease, error) {
	if len(id) == 0 || len(id) > algo.MaxLeaseID {
		return nil, fmt.Errorf("%w: lease id must be 1 to %d bytes, got %d", ErrBadLimit, algo.MaxLeaseID, len(id))
	}
	return c.acquire(ctx, key, algo.LeaseRequest{ID: []byte(id)}, limit, ttl)
}

// acquire takes a lease of r's ID and Reserve, limit places for ttl.
func (c *Client) acquire(ctx context.Context, key string, r algo.LeaseRequest, limit int, ttl time.Duration) (*Lease, error) {
	if limit < 1 || int64(limit) > maxCount {
		return nil, fmt.Errorf("%w: lease limit must be between 1 and %d, got %d", ErrBadLimit, maxCount, limit)
	}
	duration, err := leaseDuration(ttl)
	if err != nil {
		return nil, err
	}
	r.Limit, r.Duration = int64(limit), duration
	var d algo.LeaseDecision
	local, err := c.remote(ctx, func(ctx context.Context) (err error) {
		d, err = c.backend.acquire(ctx, key, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if local {
		d = c.fallback.acquire(key, r)
	}
	return &Lease{Key: key, ID: string(d.ID), Acquired: d.Acquired, Limit: int(d.Limit), Remaining: int(d.Remaining),
		RetryAfter: time.Duration(algo.Millis(d.RetryAfter)) * time.Millisecond, Degraded: local, client: c}, nil
}

// backend is where the lease lives: the Client's, or its fallback's store.
func (l *Lease) backend() backend {
	if l.Degraded {
		return l.client.fallback.local
	}
	return l.client.backend
}

// Release ends the lease, freeing its place at once (RL.RELEASE). It does nothing for
// a nil Lease or one not acquired, and nothing harmful for one already ended or
// released: the error is only that of the call.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || !l.Acquired {
		return nil
	}
	ctx, cancel, err := l.client.start(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = l.backend().release(ctx, l.Key, l.ID)
	return withContext(ctx, err)
}

// Renew makes the live lease end ttl from now (RL.RENEW), and reports whether it was
// still live: false if it had ended (its place may be taken), or was never acquired.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) (bool, error) {
	duration, err := leaseDuration(ttl)
	if err != nil {
		return false, err
	}
	if l == nil || !l.Acquired {
		return false, nil
	}
	ctx, cancel, err := l.client.start(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	ok, err := l.backend().renew(ctx, l.Key, l.ID, duration)
	return ok, withContext(ctx, err)
}

// leaseDuration is ttl in µs, checked as the contract checks lease_ms.
func leaseDuration(ttl time.Duration) (int64, error) {
	if ttl < minWindow || ttl > maxWindow || ttl%minWindowUnit != 0 {
		return 0, fmt.Errorf("%w: lease ttl must be a whole number of milliseconds from 1ms to %v (365 days), got %v",
			ErrBadLimit, maxWindow, ttl)
	}
	return ttl.Microseconds(), nil
}
