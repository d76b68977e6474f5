package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// ErrNoSlice is returned by TakeSlice on NewLua's backend: the reference scripts have
// no RL.SLICE, and a slice is only exact where the server takes it atomically.
var ErrNoSlice = errors.New("client: slices are taken on rlserver (New) or the embedded store (NewEmbedded), not Lua")

// Slice is a part of a key's quota taken at once by TakeSlice (RL.SLICE): Granted
// units spent at the server as Granted requests would be, for the caller to admit
// requests from in-process until Until.
type Slice struct {
	// Granted is how many units were taken: 0 to the count asked, fewer when fewer
	// remained; 0 took nothing.
	Granted int
	// Limit is the limiter's limit (Result.Limit).
	Limit int
	// Remaining is what the key has left at the server after the slice.
	Remaining int
	// RetryAfter is, when nothing was granted, how long until one unit fits, or
	// Never; 0 otherwise.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is fresh again, after the slice.
	ResetAfter time.Duration
	// Valid is how long the slice may be used, counted from when its request was
	// sent: to the end of the window it was counted in (Fixed, Slide), or the time the
	// bucket refills from empty (Token, GCRA). 0 when nothing was granted.
	Valid time.Duration
	// Until is when the slice's units may no longer be used: the time the request was
	// sent, on this process's clock, plus Valid. The server decided at or after it, so
	// a unit used before Until is used within the server's window.
	Until time.Time
}

// TakeSlice takes up to n units of key's quota under l now (RL.SLICE): partial when
// fewer remain, spent at once at the server as n requests would be, so that the
// caller may admit up to Granted requests in-process until Until and stay within the
// limit with every other caller of the key. Give back what was not used with Refund
// before Until. l is Fixed, Slide, Token, TokenRate or GCRA, with its reserve if any;
// n is 1 to the limit. Bad input returns ErrBadLimit before any I/O. A failed call
// returns ErrUnavailable, with or without a Fallback (a fallback decides requests,
// not slices; Slicer spends what it holds, then uses it). NewLua's Client returns
// ErrNoSlice.
func (c *Client) TakeSlice(ctx context.Context, key string, l Limit, n int) (Slice, error) {
	r, err := l.sliceRequest(n)
	if err != nil {
		return Slice{}, err
	}
	var d algo.Decision
	var sent time.Time
	local, err := c.remote(ctx, func(ctx context.Context) (err error) {
		sent = c.now()
		d, err = c.backend.slice(ctx, key, r)
		return err
	})
	switch {
	case err != nil:
		return Slice{}, err
	case local:
		return Slice{}, fmt.Errorf("%w: no slice taken; the fallback decides requests, not slices", ErrUnavailable)
	}
	return sliceOf(d, sent), nil
}

// sliceRequest is RL.SLICE of n units under l, or why it cannot be asked.
func (l Limit) sliceRequest(n int) (algo.Request, error) {
	if err := l.Validate(); err != nil {
		return algo.Request{}, err
	}
	if !l.kind.Sliceable() {
		return algo.Request{}, fmt.Errorf("%w: a slice is taken under Fixed, Slide, Token or GCRA, not %s (%s)",
			ErrBadLimit, l.kind.Command(), sliceRefusal[l.kind])
	}
	r := l.request(0, false)
	if lo, hi := r.Range(algo.ArgSlice); int64(n) < lo || int64(n) > hi {
		return algo.Request{}, fmt.Errorf("%w: a slice's count must be between %d and the limit %d, got %d", ErrBadLimit, lo, hi, n)
	}
	r.Slice = int64(n)
	return r, nil
}

// sliceRefusal says why a kind takes no slice, as the server does.
var sliceRefusal = [...]string{
	algo.KindLog:   "a log entry's time is its request's, and a slice is spent before its requests come",
	algo.KindLeaky: "its queue's order is the point, and a slice's requests would jump it",
}

// sliceOf reads a slice's decision d, its request sent at sent.
func sliceOf(d algo.Decision, sent time.Time) Slice {
	res := resultOf(d)
	valid := time.Duration(d.ValidFor/1000) * time.Millisecond // whole ms, rounded down
	s := Slice{Granted: int(d.Granted), Limit: res.Limit, Remaining: res.Remaining, ResetAfter: res.ResetAfter, Valid: valid}
	if d.Granted == 0 {
		s.RetryAfter, s.Valid = res.RetryAfter, 0
	}
	s.Until = sent.Add(s.Valid)
	return s
}

// Refund gives back n units of what earlier calls on key spent under l (the
// limiter's REFUND): the unused part of a slice, or of a cost reserved ahead
// (AllowN). It never leaves more room than a fresh key has; Fixed and Slide give back
// only what their current windows counted, so a slice's units go back before its
// Until or not at all. The Result is what Peek answers right after it. n is 1 to the
// limit times 1000; Refund works on every backend, and is never decided by the
// fallback (a refund the server did not get returns ErrUnavailable).
func (c *Client) Refund(ctx context.Context, key string, l Limit, n int) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	r := l.request(0, false)
	if lo, hi := r.Range(algo.ArgRefund); int64(n) < lo || int64(n) > hi {
		return Result{}, fmt.Errorf("%w: %s refund must be between %d and %d, got %d", ErrBadLimit, l.kind.Command(), lo, hi, n)
	}
	r.Refund, r.Reserve = int64(n), 0 // a refund takes no reserve
	ctx, cancel, err := c.start(ctx)
	if err != nil {
		return Result{}, err
	}
	defer cancel()
	d, err := c.backend.decide(ctx, key, r)
	if err != nil {
		return Result{}, withContext(ctx, err)
	}
	return resultOf(d), nil
}

// now is the time of c's backend as this process reads it: the embedded store's
// clock, else time.Now (a server's clock is its own; a slice's Until is counted from
// when its request left).
func (c *Client) now() time.Time {
	if e, ok := c.backend.(embeddedBackend); ok {
		return e.clock()
	}
	return time.Now()
}

func (s serverBackend) slice(ctx context.Context, key string, r algo.Request) (algo.Decision, error) {
	return sliceDecision(do(ctx, s.send, rlcmd.AppendSlice(append(make([]any, 0, 12), "RL.SLICE"), []byte(key), r)...))
}

func (luaBackend) slice(context.Context, string, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, ErrNoSlice
}

func (e embeddedBackend) slice(_ context.Context, key string, r algo.Request) (algo.Decision, error) {
	d, err := e.store.Do([]byte(key), r, e.clock().UnixMicro())
	return d, storeError(err)
}

// sliceDecision reads RL.SLICE's reply: granted, the four times and counts of a
// limiter's reply after it, and valid_ms.
func sliceDecision(cmd *redis.Cmd) (algo.Decision, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return algo.Decision{}, classify(err)
	}
	if len(v) != 6 {
		return algo.Decision{}, fmt.Errorf("%w: %d integers in the reply to RL.SLICE, want 6", ErrUnavailable, len(v))
	}
	return algo.Decision{Allowed: v[0] > 0, Granted: v[0], Limit: v[1], Remaining: v[2],
		RetryAfter: micros(v[3]), ResetAfter: micros(v[4]), ValidFor: v[5] * 1000}, nil
}
