package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/resp"
)

const redisHint = "redis-server is not on PATH; install it to test the Redis+Lua backend " +
	"(Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"

// needRedisTools returns the path of each tool, or skips t (fails it under
// RLSERVER_REQUIRE_REDIS=1, as CI sets) when one is missing.
func needRedisTools(t testing.TB, tools ...string) []string {
	t.Helper()
	paths := make([]string, len(tools))
	for i, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
				t.Fatal(redisHint + " (RLSERVER_REQUIRE_REDIS=1 makes this a failure)")
			}
			t.Skip(redisHint + "; RLSERVER_REQUIRE_REDIS=1 turns this skip into a failure")
		}
		paths[i] = p
	}
	return paths
}

// startRedis starts a redis-server on a free loopback port, stopped when t ends, and
// returns its address. extra are more redis-server arguments.
func startRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin := needRedisTools(t, "redis-server")[0]
	var lastErr error
	for range 3 { // the port is free when picked, but may be taken before redis binds it
		port := freePort(t)
		dir := t.TempDir()
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", dir, "--loglevel", "warning"}, extra...)
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitPing(addr, exited); lastErr == nil {
			t.Cleanup(stop)
			return addr
		}
		stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// freePort returns a loopback port nobody listens on, and none on port+10000 either
// (a Redis Cluster node's bus port), below 55536 so that both exist.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(35000)
		a, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return port
	}
	t.Fatal("no free port pair")
	return 0
}

// waitPing waits up to 10 s for a server at addr to answer PING.
func waitPing(addr string, exited <-chan struct{}) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = rdb.Ping(context.Background()).Err(); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return err
}

// startServer runs an rlserver in-process on a free loopback port, closed when t
// ends, and returns its address. DEBUG CLOCK is on, for tests that freeze the clock.
func startServer(t testing.TB, cfg resp.Config) string {
	t.Helper()
	cfg.EnableDebugCommand = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := resp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("rlserver Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

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
	c, err := client.NewEmbedded(client.Options{Clock: func() time.Time { return time.UnixMicro(now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	return backend{name: "embedded", client: c, setNow: func(_ testing.TB, us int64) { now.Store(us) }}
}

// rlserver is an in-process rlserver, its clock set with DEBUG CLOCK SET.
func rlserver(t testing.TB) backend {
	rdb := newRedis(t, startServer(t, resp.Config{}))
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
	rdb := newRedis(t, startRedis(t))
	hook := &nowHook{}
	scripted := newRedis(t, rdb.Options().Addr)
	scripted.AddHook(hook)
	c, err := client.NewLua(scripted, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return backend{name: "redis+lua", client: c, rdb: rdb, setNow: func(_ testing.TB, us int64) { hook.now.Store(us) }}
}

// nowHook appends now_us to the scripts' arguments once now is set: a test's frozen
// clock for Redis, which the client never sends (clients' clocks differ).
type nowHook struct{ now atomic.Int64 }

func (h *nowHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *nowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
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
