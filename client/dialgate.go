package client

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// dialGate is the go-redis hook by which Open's clients keep their calls off go-redis's
// pool while the server cannot be reached. go-redis logs each pool dial that fails
// ("redis: connection pool: failed to dial after 1 attempts: ...") to its
// process-wide logger, which no option of one client quiets: a dead limiter under a
// breaker logged a line per probe, 6 to 12 in a second or three of outage
// (TestQuietOutage). Once a pool dial has failed, or a connection broke, a call
// first dials the server itself, with the client's own dialer and outside the pool,
// where nothing is logged, and goes through the pool only once such a dial
// succeeds; one call at a time dials, and the others fail at once with the latest
// failure. An outage so logs at most one line, its first failed pool dial, however
// long it lasts and however many calls meet it, unless several calls dial at the
// very moment it begins: calls batched on one lane (Batch) never do.
type dialGate struct {
	dial    func(ctx context.Context) (net.Conn, error) // the server, past the pool and its hooks
	down    atomic.Bool                                 // a dial failed or a connection broke, and no dial has succeeded since
	probing atomic.Bool                                 // a call is dialing while down
	last    atomic.Pointer[error]                       // the latest failure
}

// gate adds a dialGate to rdb, whose own dialer reaches its server (a Sentinel
// client's finds the master first).
func gate(rdb *redis.Client) *redis.Client {
	o := rdb.Options()
	rdb.AddHook(&dialGate{dial: func(ctx context.Context) (net.Conn, error) {
		if o.DialTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.DialTimeout)
			defer cancel()
		}
		return o.Dialer(ctx, o.Network, o.Addr)
	}})
	return rdb
}

// pass returns nil when a call may go through the pool, or the error that keeps it
// out.
func (g *dialGate) pass(ctx context.Context) error {
	if !g.down.Load() {
		return nil
	}
	if !g.probing.CompareAndSwap(false, true) {
		return *g.last.Load()
	}
	defer g.probing.Store(false)
	conn, err := g.dial(ctx)
	if err != nil {
		g.last.Store(&err)
		return err
	}
	conn.Close()
	g.down.Store(false)
	return nil
}

// DialHook marks the server down after a failed pool dial.
func (g *dialGate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			g.fail(err)
		}
		return conn, err
	}
}

// fail marks the server down after err.
func (g *dialGate) fail(err error) {
	g.last.Store(&err)
	g.down.Store(true)
}

// check marks the server down when err says the connection broke (the server went
// away mid-call, or had closed an idle connection), so that the calls that follow
// dial outside the pool; it returns err.
func (g *dialGate) check(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		g.fail(err)
	}
	return err
}

// ProcessHook keeps a command out of the pool while the server is down.
func (g *dialGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return g.check(next(ctx, cmd))
	}
}

// ProcessPipelineHook keeps a pipeline out of the pool while the server is down.
func (g *dialGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return g.check(next(ctx, cmds))
	}
}
