package client_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/resp"
)

// redisOptions are the go-redis settings the client asks for: context deadlines
// honoured, no retries (a retried call counts twice).
func redisOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1}
}

// newRedis connects to addr, closed when t ends.
func newRedis(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(redisOptions(addr))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// policyClient is a Client on an rlserver in this process running policy p.
func policyClient(t testing.TB, p *config.Policy) *client.Client {
	t.Helper()
	c, err := client.New(newRedis(t, testenv.StartServer(t, resp.Config{Policy: p})))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// backend is a Client on one backend, with a way to freeze that backend's clock.
type backend struct {
	name   string
	client *client.Client
	rdb    *redis.Client // the backend's server, nil when embedded
	setNow func(t testing.TB, us int64)
}

// backends open each backend, inside the subtest that uses it (a missing
// redis-server skips only its own).
var backends = []struct {
	name string
	open func(testing.TB) backend
}{{"embedded", embedded}, {"rlserver", rlserver}, {"redis+lua", redisLua}}

// testTimeout is the call budget in tests: roomy, for a loaded machine under -race.
const testTimeout = 5 * time.Second

// embedded is the in-process backend on a frozen clock.
func embedded(t testing.TB) backend {
	var now atomic.Int64
	now.Store(time.Now().UnixMicro())
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: func() time.Time { return time.UnixMicro(now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	return backend{name: "embedded", client: c, setNow: func(_ testing.TB, us int64) { now.Store(us) }}
}

// rlserver is an in-process rlserver, its clock set with DEBUG CLOCK SET.
func rlserver(t testing.TB) backend {
	rdb := newRedis(t, testenv.StartServer(t, resp.Config{EnableDebugCommand: true}))
	c, err := client.New(rdb, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return backend{name: "rlserver", client: c, rdb: rdb, setNow: func(t testing.TB, us int64) {
		if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", us).Err(); err != nil {
			t.Fatal(err)
		}
	}}
}

// redisLua is a redis-server running the scripts, its clock the scripts' now_us
// argument, which a go-redis hook appends to every EVALSHA and EVAL (package lua).
func redisLua(t testing.TB) backend {
	rdb := newRedis(t, testenv.StartRedis(t))
	hook := &nowHook{}
	scripted := newRedis(t, rdb.Options().Addr)
	scripted.AddHook(hook)
	c, err := client.NewLua(scripted, client.LuaOptions{Options: client.Options{Timeout: testTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	return backend{name: "redis+lua", client: c, rdb: rdb, setNow: func(_ testing.TB, us int64) { hook.now.Store(us) }}
}

// nowHook appends now_us to the scripts' arguments once now is set: a test's frozen
// clock for Redis, which the client never sends (clients' clocks differ).
type nowHook struct{ now atomic.Int64 }

func (h *nowHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook does what ProcessHook does, for the client's batched calls.
func (h *nowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		now := h.now.Load()
		if now == 0 {
			return next(ctx, cmds)
		}
		timed := slices.Clone(cmds)
		for i, cmd := range cmds {
			if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
				timed[i] = redis.NewCmd(ctx, append(slices.Clone(cmd.Args()), now)...)
			}
		}
		err := next(ctx, timed)
		for i, cmd := range cmds {
			if t, ok := timed[i].(*redis.Cmd); ok && timed[i] != cmd {
				// The batch's commands are the client's own wrappers of *redis.Cmd.
				cmd.(interface{ SetVal(any) }).SetVal(t.Val())
				cmd.SetErr(t.Err())
			}
		}
		return err
	}
}

func (h *nowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c, ok := cmd.(*redis.Cmd)
		now := h.now.Load()
		if !ok || now == 0 || cmd.Name() != "evalsha" && cmd.Name() != "eval" {
			return next(ctx, cmd)
		}
		timed := redis.NewCmd(ctx, append(slices.Clone(cmd.Args()), now)...)
		err := next(ctx, timed)
		c.SetVal(timed.Val())
		c.SetErr(timed.Err())
		return err
	}
}

// constructors are New and NewLua, taking the options they share.
var constructors = []func(redis.UniversalClient, client.Options) (*client.Client, error){
	func(rdb redis.UniversalClient, o client.Options) (*client.Client, error) { return client.New(rdb, o) },
	func(rdb redis.UniversalClient, o client.Options) (*client.Client, error) {
		return client.NewLua(rdb, client.LuaOptions{Options: o})
	},
}
