// Package grpclimit rate-limits and load-sheds gRPC servers: unary and stream server
// interceptors for a rate limit decided by package client, and for a shed.Shedder.
//
// The two refusals say different things, as go-grpc-middleware v2's
// interceptors/ratelimit and gRPC's status codes mean them:
//
//   - a rate limit refuses a caller who went over its share: RESOURCE_EXHAUSTED;
//   - a shedder refuses because the server is over capacity, through no fault of the
//     caller's: UNAVAILABLE, the code gRPC clients retry.
//
// Both set the trailer grpc-retry-pushback-ms, the time to come back in ms, which a
// gRPC client's retry policy obeys instead of its own backoff (gRFC A6); -1 when the
// call can never pass. A shed call is refused before its handler runs, with no call
// to anything over the network.
//
// RateLimiter is also a go-grpc-middleware ratelimit.Limiter (its Limit method), for
// servers that chain that package's interceptors: they answer RESOURCE_EXHAUSTED
// too, and the pushback trailer is set by Limit itself.
package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/shed"
)

// PushbackKey is the trailer that tells a gRPC client when to retry, in ms.
const PushbackKey = "grpc-retry-pushback-ms"

// DefaultTimeout is the budget of a rate limit call when RateLimit.Timeout is 0.
const DefaultTimeout = 50 * time.Millisecond

// Errors.
var (
	// ErrBadConfig starts the error of a configuration NewRateLimiter refuses.
	ErrBadConfig = errors.New("grpclimit: bad config")
	// ErrLimited is Limit's answer for a call over its limit.
	ErrLimited = errors.New("grpclimit: rate limited")
)

// RateLimit configures a RateLimiter. Client, Limit and Key are required.
type RateLimit struct {
	// Client decides the calls, on any backend.
	Client *client.Client
	// Limit is each key's limit.
	Limit client.Limit
	// Key is a call's key, from its metadata or peer and its method
	// ("/package.Service/Method"); "" lets the call through unlimited.
	Key func(ctx context.Context, fullMethod string) string
	// Timeout is the budget of the limiter call; 0 means DefaultTimeout.
	Timeout time.Duration
	// FailClosed refuses calls when the limiter fails (RESOURCE_EXHAUSTED, pushback
	// 1 s); by default they are served. Either way a circuit breaker (the Client's
	// Fallback's, or else a client.Breaker with the defaults) stops calling a limiter
	// that failed client.DefaultFailures times in a row, so that an outage costs one
	// Timeout per pause, not one per call.
	FailClosed bool
}

// RateLimiter applies a RateLimit to gRPC calls. It is safe for concurrent use.
type RateLimiter struct {
	cfg RateLimit
	// breaker spares the calls, and their timeouts, while the limiter is down; nil
	// when the Client has a Fallback, whose own breaker does that.
	breaker *client.Breaker
}

// NewRateLimiter validates cfg and returns a RateLimiter.
func NewRateLimiter(cfg RateLimit) (*RateLimiter, error) {
	if cfg.Client == nil || cfg.Key == nil {
		return nil, fmt.Errorf("%w: Client and Key are required", ErrBadConfig)
	}
	if err := cfg.Limit.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout %v: want ≥ 0", ErrBadConfig, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	r := &RateLimiter{cfg: cfg}
	if !cfg.Client.HasFallback() {
		r.breaker, _ = client.NewBreaker(client.Fallback{}) // the defaults are valid
	}
	return r, nil
}

// Limit decides the call ctx carries (grpc.Method(ctx) is its method): nil to serve
// it, or an error wrapping ErrLimited, the pushback trailer set, to refuse it. It is
// go-grpc-middleware v2's ratelimit.Limiter.
func (r *RateLimiter) Limit(ctx context.Context) error {
	method, _ := grpc.Method(ctx)
	retry, err := r.decide(ctx, method)
	if err != nil {
		grpc.SetTrailer(ctx, pushback(retry))
	}
	return err
}

// decide is nil for a call served, or ErrLimited and the time to come back, spread
// (internal/spread: up to a tenth more, 10 ms to 1 s) so that callers refused
// together do not retry together.
func (r *RateLimiter) decide(ctx context.Context, method string) (time.Duration, error) {
	key := r.cfg.Key(ctx, method)
	if key == "" {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var res client.Result
	call := func(ctx context.Context) (err error) {
		res, err = r.cfg.Client.Allow(ctx, key, r.cfg.Limit)
		return err
	}
	var err error
	if r.breaker != nil {
		err = r.breaker.Do(cctx, call)
	} else {
		err = call(cctx)
	}
	switch {
	case err != nil && r.cfg.FailClosed:
		return spread.Wait(time.Second), fmt.Errorf("%w: limiter failed, refused (FailClosed): %w", ErrLimited, err)
	case err != nil || res.Allowed:
		return 0, nil
	}
	return spread.Wait(res.RetryAfter), fmt.Errorf("%w: key %q", ErrLimited, key)
}

// UnaryServerInterceptor refuses a unary call over its limit with
// RESOURCE_EXHAUSTED before its handler runs.
func (r *RateLimiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if retry, err := r.decide(ctx, info.FullMethod); err != nil {
			grpc.SetTrailer(ctx, pushback(retry))
			return nil, status.Errorf(codes.ResourceExhausted, "%s rate limited, retry in %s ms: %v", info.FullMethod, pushbackText(retry), err)
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor refuses a stream over its limit with RESOURCE_EXHAUSTED
// before its handler runs: the limit counts streams, not their messages.
func (r *RateLimiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if retry, err := r.decide(ss.Context(), info.FullMethod); err != nil {
			ss.SetTrailer(pushback(retry))
			return status.Errorf(codes.ResourceExhausted, "%s rate limited, retry in %s ms: %v", info.FullMethod, pushbackText(retry), err)
		}
		return handler(srv, ss)
	}
}

// Shed configures the shedding interceptors. Every zero field takes its default.
type Shed struct {
	// Priority is a call's priority, from its metadata or method; nil means the
	// Shedder's Default.
	Priority func(ctx context.Context, fullMethod string) shed.Priority
	// Bypass says which methods are never shed, never queued and never counted; nil
	// means IsHealth.
	Bypass func(fullMethod string) bool
}

// IsHealth is true for the methods of grpc.health.v1.Health, the gRPC health checks
// load balancers call: a node that fails them is pulled, and its load moves to the
// others.
func IsHealth(fullMethod string) bool {
	const prefix = "/grpc.health.v1.Health/"
	return len(fullMethod) >= len(prefix) && fullMethod[:len(prefix)] == prefix
}

// admit takes a slot of s for the call, or answers UNAVAILABLE and sets the pushback
// through set; done gives the slot back.
func (o Shed) admit(ctx context.Context, s *shed.Shedder, method string, set func(metadata.MD)) (done func(), err error) {
	bypass := o.Bypass
	if bypass == nil {
		bypass = IsHealth
	}
	if bypass(method) {
		return func() {}, nil
	}
	p := s.Default()
	if o.Priority != nil {
		p = o.Priority(ctx, method)
	}
	t, err := s.Acquire(ctx, p)
	if err != nil {
		retry := s.RetryAfter()
		set(pushback(retry))
		return nil, status.Errorf(codes.Unavailable, "%s shed: server overloaded, retry in %s ms", method, pushbackText(retry))
	}
	return func() { t.Done(time.Now()) }, nil
}

// UnaryShed sheds unary calls through s: a call admitted holds its slot until its
// handler returns; a call shed gets UNAVAILABLE and a jittered pushback
// (shed.Shedder.RetryAfter) before its handler runs.
func UnaryShed(s *shed.Shedder, o Shed) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		done, err := o.admit(ctx, s, info.FullMethod, func(md metadata.MD) { grpc.SetTrailer(ctx, md) })
		if err != nil {
			return nil, err
		}
		defer done()
		return handler(ctx, req)
	}
}

// StreamShed sheds streams through s, as UnaryShed does calls: a stream admitted
// holds its slot until its handler returns.
func StreamShed(s *shed.Shedder, o Shed) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		done, err := o.admit(ss.Context(), s, info.FullMethod, ss.SetTrailer)
		if err != nil {
			return err
		}
		defer done()
		return handler(srv, ss)
	}
}

// pushback is the trailer saying to retry after d: ms rounded up, so never early, or
// -1 (never) for client.Never.
func pushback(d time.Duration) metadata.MD {
	return metadata.Pairs(PushbackKey, pushbackText(d))
}

// pushbackText is d in ms rounded up, or -1 for client.Never.
func pushbackText(d time.Duration) string {
	if d == client.Never {
		return "-1"
	}
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}
