// Package client is rlserver's Go client: typed rate limits over go-redis v9, with the
// same semantics on three backends.
//
//   - New: rlserver, through its native RL.* commands.
//   - NewLua: plain Redis, Valkey or Redis Cluster, through the reference Lua scripts
//     of package lua (EVALSHA, falling back to EVAL when the server answers NOSCRIPT,
//     which also caches the script there). The key goes in KEYS, so a cluster or a
//     Ring routes each call to the node owning the key.
//   - NewEmbedded: in-process, on a store.Store: no network, for tests and
//     single-binary apps. Its limits hold per process, not across replicas.
//
// All three decide exactly as docs/commands.md says (the compatibility suite at the module
// root runs its scenarios through each), so code written against one runs on the
// others. The API reads like go-redis/redis_rate and golang.org/x/time/rate:
//
//	res, err := c.Allow(ctx, "user:42", client.Token(10, time.Second))
//	if err != nil { ... }          // errors.Is(err, client.ErrUnavailable): fail open or closed
//	if !res.Allowed {
//		time.Sleep(res.RetryAfter) // never too early: waiting exactly this long succeeds
//	}
//
// Beyond one limit: AllowAll decides several limits at once, all or nothing (RL.ALL),
// so a request one limit refuses consumes nothing from the others; Acquire takes one of
// a key's concurrent leases (RL.ACQUIRE), given back with Lease.Release or ending by
// itself after its time, so a process that crashes holding one leaks nothing for long.
//
// When the server cannot answer, Options.Fallback keeps limiting: the call is decided
// in-process at this replica's share of the limit (limit/N for N app replicas) and
// the Result says Degraded; a circuit breaker stops calling a dead server until a
// probe finds it back. Without it, such calls return ErrUnavailable, for the caller to
// fail open or closed. Wait and WaitN block until a request is allowed, as
// golang.org/x/time/rate's do.
//
// Each call has one budget: the caller's context deadline if it has one (the
// middleware sets its own), else Options.Timeout (default 50 ms). New and NewLua take
// any go-redis client, its options as they are, and keep two promises whatever they
// say, both enforced here rather than asked of the caller: a call returns by its
// budget (go-redis reads context deadlines only with ContextTimeoutEnabled; without
// it the call returns at the deadline anyway and its late reply is dropped), and a
// call is sent once (go-redis's MaxRetries would re-send a call whose reply was lost,
// which counted; every call goes in a pipeline marked not to be retried). The
// one-line setup,
//
//	c, err := client.Open("redis://127.0.0.1:6380/") // rediss://user:pass@host:6380/ for TLS and ACL
//
// also sets ContextTimeoutEnabled (a stalled server's connection is given up at the
// deadline, not after go-redis's ReadTimeout) and one dial per attempt (see Open).
package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

// DefaultTimeout is the budget of one call when Options.Timeout is 0. A limiter sits
// on every request's path: past this, the limiter counts as unavailable.
const DefaultTimeout = 50 * time.Millisecond

// Never is RetryAfter when a request can never pass: its cost is above the limit (the
// wire's -1). It is x/time/rate's InfDuration, so a caller who sleeps it never spins.
const Never = time.Duration(math.MaxInt64)

// Errors of the calls; match them with errors.Is. Each error wraps one of these and,
// where there is one, the cause (a context error, the server's reply).
var (
	// ErrBadLimit is returned for a limit, cost or key the backend refuses: no I/O
	// was done, or the server refused it (RL.LOG above the server's -max-log-limit).
	ErrBadLimit = errors.New("client: bad limit")
	// ErrUnavailable is returned when no decision came back: the backend is down, slow
	// past the timeout budget, the context is done, or the server is not what the
	// backend expects (RL.* on plain Redis answers "unknown command").
	ErrUnavailable = errors.New("client: rate limiter unavailable")
	// ErrWrongType is returned when the key holds another algorithm's state: two
	// limits of different algorithms share a key.
	ErrWrongType = errors.New("client: key holds another algorithm's state")
	// ErrNoPolicy is returned by Policy on a backend without policies: plain Redis
	// (NewLua) and the embedded store decide only the limits a call carries.
	ErrNoPolicy = errors.New("client: policies are decided by rlserver only (New)")
)

// Options configures a Client on a server: New's, and within LuaOptions NewLua's.
// The zero value is valid.
type Options struct {
	// Timeout is the budget of a call whose context has no deadline; 0 means
	// DefaultTimeout, a negative value none. A context with a deadline is its own
	// budget: whoever set it (the middleware, a caller) owns the budget, and no second
	// timer runs.
	Timeout time.Duration
	// Fallback, if not nil, decides locally when the server fails, instead of
	// returning ErrUnavailable (see Fallback).
	Fallback *Fallback
	// Batch sets the auto-batching of concurrent calls (see Batch).
	Batch Batch
}

// LuaOptions configures NewLua's Client. The zero value is valid.
type LuaOptions struct {
	Options
	// MaxLogLimit is the largest Log limit, bounding a log's memory on Redis, where no
	// server flag does; 0 means store.DefaultMaxLogLimit (100,000), as rlserver's own
	// default (New has none: rlserver's -max-log-limit decides).
	MaxLogLimit int
}

// EmbeddedOptions configures NewEmbedded's Client. The zero value is valid. It has no
// Timeout: the embedded store does no I/O and never waits but for a shard's lock.
type EmbeddedOptions struct {
	// MaxLogLimit is the largest Log limit, bounding a log's memory; 0 means
	// store.DefaultMaxLogLimit (100,000), as rlserver's own default.
	MaxLogLimit int
	// Shards is the store's shard count, a power of two; 0 means store.DefaultShards.
	Shards int
	// Clock is the store's time, for tests that must not sleep; nil means time.Now.
	// Only here: rlserver and Redis use their own clocks, as the contract wants
	// (clients' clocks differ).
	Clock func() time.Time
}

// Result is the decision on one call, the five fields of the wire reply.
type Result struct {
	// Allowed is true if the request was allowed, and consumed (Peek consumes nothing).
	// A denied request consumes nothing, in every algorithm.
	Allowed bool
	// Limit is the configured limit: requests per window, the bucket's capacity, or
	// GCRA's burst.
	Limit int
	// Remaining is how many more cost-1 requests would be allowed right now.
	Remaining int
	// RetryAfter is, when denied, how long until this same request would be allowed,
	// rounded up to the ms (waiting exactly that long succeeds), or Never. When allowed
	// it is 0, except for Leaky, where it is the delay the caller must wait before
	// proceeding: its place in the queue.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its fresh state (full
	// Remaining), rounded up to the ms; 0 if it already is.
	ResetAfter time.Duration
	// Degraded is true when the decision was made in-process, at this replica's share
	// of the limit, because the server could not answer (Options.Fallback).
	Degraded bool
}

// Client makes rate-limit calls on one backend. It is safe for concurrent use.
type Client struct {
	backend  backend
	timeout  time.Duration         // 0: no budget of our own
	fallback *fallback             // nil: errors are returned
	owned    redis.UniversalClient // the go-redis client Open built, closed by Close
	lines    waitLines             // WaitN's callers, a line per key
}

// backend is where a decision is made: rlserver, Redis running the scripts, or an
// in-process store. Errors are already classified (ErrBadLimit, ErrUnavailable,
// ErrWrongType).
type backend interface {
	decide(ctx context.Context, key string, r algo.Request) (algo.Decision, error)
	// decideAll decides the rules all or nothing, one decision per rule.
	decideAll(ctx context.Context, rules []algo.Rule) (bool, []algo.Decision, error)
	reset(ctx context.Context, key string) error
	acquire(ctx context.Context, key string, r algo.LeaseRequest) (algo.LeaseDecision, error)
	release(ctx context.Context, key, id string) (bool, error)
	renew(ctx context.Context, key, id string, duration int64) (bool, error)
	// slice takes what fits of r.Slice units (RL.SLICE): Decision.Granted and ValidFor.
	slice(ctx context.Context, key string, r algo.Request) (algo.Decision, error)
}

// New returns a Client for rlserver, using its native RL.* commands through rdb: a
// *redis.Client, or a *redis.Ring spreading keys over several rlservers. opts, at
// most one, defaults to the zero Options.
func New(rdb redis.UniversalClient, opts ...Options) (*Client, error) {
	o, err := atMostOne(opts, "New")
	if err != nil {
		return nil, err
	}
	return newServer(rdb, o)
}

// newServer is New with its options.
func newServer(rdb redis.UniversalClient, opts Options) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("client: New needs a go-redis client, got nil")
	}
	send, err := newSender(rdb, opts.Batch)
	if err != nil {
		return nil, err
	}
	return withFallback(&Client{backend: serverBackend{send}, timeout: budget(opts.Timeout)}, opts.Fallback, store.DefaultMaxLogLimit)
}

// withFallback gives c the fallback f, if any.
func withFallback(c *Client, f *Fallback, maxLog int64) (*Client, error) {
	if f == nil {
		return c, nil
	}
	var err error
	c.fallback, err = newFallback(f, maxLog)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// NewLua returns a Client for plain Redis, Valkey or Redis Cluster (5 or later): each
// call runs the reference script of its algorithm, atomically, keyed in KEYS so a
// *redis.ClusterClient or *redis.Ring routes it to the key's node. opts, at most one,
// defaults to the zero LuaOptions.
func NewLua(rdb redis.UniversalClient, opts ...LuaOptions) (*Client, error) {
	o, err := atMostOne(opts, "NewLua")
	if err != nil {
		return nil, err
	}
	return newLua(rdb, o)
}

// newLua is NewLua with its options.
func newLua(rdb redis.UniversalClient, opts LuaOptions) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("client: NewLua needs a go-redis client, got nil")
	}
	maxLog, err := maxLogLimit(opts.MaxLogLimit)
	if err != nil {
		return nil, err
	}
	send, err := newSender(rdb, opts.Batch)
	if err != nil {
		return nil, err
	}
	return withFallback(&Client{backend: luaBackend{send: send, maxLogLimit: maxLog}, timeout: budget(opts.Timeout)}, opts.Fallback, maxLog)
}

// NewEmbedded returns a Client deciding in-process, on a store of its own. Keys whose
// state is fresh again go at the next call on their shard. opts, at most one, defaults
// to the zero EmbeddedOptions.
func NewEmbedded(opts ...EmbeddedOptions) (*Client, error) {
	o, err := atMostOne(opts, "NewEmbedded")
	if err != nil {
		return nil, err
	}
	return newEmbedded(o)
}

// newEmbedded is NewEmbedded with its options.
func newEmbedded(opts EmbeddedOptions) (*Client, error) {
	maxLog, err := maxLogLimit(opts.MaxLogLimit)
	if err != nil {
		return nil, err
	}
	if opts.Shards < 0 {
		return nil, fmt.Errorf("client: EmbeddedOptions.Shards must be 0 (the default) or a power of two, got %d", opts.Shards)
	}
	st, err := store.New(store.Config{Shards: opts.Shards, MaxLogLimit: maxLog})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Client{backend: embeddedBackend{store: st, clock: clock, maxLogLimit: maxLog}}, nil
}

// atMostOne is a constructor's options: the zero value if none is given, an error if
// more than one is.
func atMostOne[T any](opts []T, constructor string) (T, error) {
	var o T
	switch len(opts) {
	case 0:
		return o, nil
	case 1:
		return opts[0], nil
	}
	return o, fmt.Errorf("client: %s takes at most one options value, got %d", constructor, len(opts))
}

// budget is the per-call timeout for Options.Timeout t.
func budget(t time.Duration) time.Duration {
	switch {
	case t == 0:
		return DefaultTimeout
	case t < 0:
		return 0
	}
	return t
}

// maxLogLimit is the Log limit cap for a MaxLogLimit option n.
func maxLogLimit(n int) (int64, error) {
	switch {
	case n == 0:
		return store.DefaultMaxLogLimit, nil
	case n < 0 || int64(n) > maxCount:
		return 0, fmt.Errorf("client: MaxLogLimit must be between 1 and %d (0: %d), got %d", maxCount, store.DefaultMaxLogLimit, n)
	}
	return int64(n), nil
}

// HasFallback reports whether c decides locally when its server fails
// (Options.Fallback).
func (c *Client) HasFallback() bool { return c.fallback != nil }

// HasPolicy reports whether c decides policies (Policy): a Client made by New, whose
// server is rlserver.
func (c *Client) HasPolicy() bool {
	_, ok := c.backend.(serverBackend)
	return ok
}

// Allow decides one request of cost 1 on key under l, consuming it if allowed.
func (c *Client) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	return c.call(ctx, key, l, 1, false)
}

// AllowN decides one request of cost n on key under l, consuming n if allowed. A cost
// of 0 is always allowed and changes nothing; n may be up to the limit times 1000,
// and a cost above what the limit can ever hold is denied with RetryAfter Never.
func (c *Client) AllowN(ctx context.Context, key string, l Limit, n int) (Result, error) {
	return c.call(ctx, key, l, n, false)
}

// Peek decides a request of cost 1 on key under l as Allow would, but consumes
// nothing and creates no state.
func (c *Client) Peek(ctx context.Context, key string, l Limit) (Result, error) {
	return c.call(ctx, key, l, 1, true)
}

// PeekN decides a request of cost n on key under l as AllowN would, but consumes
// nothing and creates no state.
func (c *Client) PeekN(ctx context.Context, key string, l Limit, n int) (Result, error) {
	return c.call(ctx, key, l, n, true)
}

// Reset removes key's state, whatever its algorithm: the next call finds it fresh.
// With a Fallback, the local state goes too.
func (c *Client) Reset(ctx context.Context, key string) error {
	if c.fallback != nil {
		c.fallback.local.reset(ctx, key)
	}
	ctx, cancel, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return withContext(ctx, c.backend.reset(ctx, key))
}

func (c *Client) call(ctx context.Context, key string, l Limit, n int, peek bool) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	if err := l.checkCost(n); err != nil {
		return Result{}, err
	}
	r := l.request(int64(n), peek)
	var d algo.Decision
	local, err := c.remote(ctx, func(ctx context.Context) (err error) {
		d, err = c.backend.decide(ctx, key, r)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if local {
		d = c.fallback.decide(key, r)
	}
	res := resultOf(d)
	res.Degraded = local
	return res, nil
}

// withContext adds ctx's error to err when the context ended the call: go-redis
// reports a deadline as the socket's "i/o timeout", and callers match
// context.DeadlineExceeded. The socket's deadline is the context's, and may pass
// before the context's own timer has fired: the time decides.
func withContext(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cause := ctx.Err()
	if deadline, ok := ctx.Deadline(); cause == nil && ok && !time.Now().Before(deadline) {
		cause = context.DeadlineExceeded
	}
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// start refuses a context already done, and applies the timeout budget to a context
// without a deadline of its own.
func (c *Client) start(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, ok := ctx.Deadline(); ok || c.timeout == 0 {
		return ctx, func() {}, nil // the caller's deadline is the budget, or there is none
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	return ctx, cancel, nil
}

// resultOf reads the wire fields of d, its times in whole ms rounded up as the server
// answers them (algo.Millis), whichever backend decided.
func resultOf(d algo.Decision) Result {
	retry := time.Duration(algo.Millis(d.RetryAfter)) * time.Millisecond
	if d.RetryAfter < 0 {
		retry = Never
	}
	return Result{
		Allowed:    d.Allowed,
		Limit:      int(d.Limit),
		Remaining:  int(d.Remaining),
		RetryAfter: retry,
		ResetAfter: time.Duration(algo.Millis(d.ResetAfter)) * time.Millisecond,
	}
}
