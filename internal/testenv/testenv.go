// Package testenv starts what the tests of several packages run against: an
// rlserver in-process, the rlserver binary (built once per test binary) as a
// cluster, a real redis-server or Redis Cluster (through package launch, the
// module's one launcher), and loopback addresses that refuse or never answer.
// Each helper undoes its work when its test ends.
//
// Tests that need Redis programs skip, saying how to install them, when the programs
// are not on PATH, unless RLSERVER_REQUIRE_REDIS=1 (as CI sets): then they fail.
//
// Package resp's own tests cannot use this package, which imports resp: they keep
// their own server helper.
package testenv

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/resp"
)

// YearWindowMs is the longest window RL.FIXED takes, a year, in ms. Fixed windows
// start at multiples of their length since the epoch, so a 10-minute one turns over
// during one in 120 runs of a 5-second test: a test that fills a key on the real
// clock and counts on it staying full uses this window, which turns over once a year.
const YearWindowMs = 31_536_000_000

// StartServer runs an rlserver in-process on a free loopback port with cfg (its log
// discarded unless cfg.Logger is set), closes it when tb ends, and returns its
// address. Serve returning an error fails tb.
func StartServer(tb testing.TB, cfg resp.Config) string {
	tb.Helper()
	_, addr := Serve(tb, cfg)
	return addr
}

// Serve is StartServer for a test that needs the server itself (its MetricsHandler).
func Serve(tb testing.TB, cfg resp.Config) (*resp.Server, string) {
	tb.Helper()
	srv, addr, stop, err := launch.InProcess(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Errorf("rlserver Serve: %v", err)
		}
	})
	return srv, addr
}

// RedisTool returns the path of a Redis program (redis-server, redis-cli), or skips
// tb, saying how to install it, when it is not on PATH; under
// RLSERVER_REQUIRE_REDIS=1 it fails tb instead.
func RedisTool(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	hint := name + " is not on PATH; install it to test against a real Redis " +
		"(Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
	if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
		tb.Fatal(hint + " (RLSERVER_REQUIRE_REDIS=1 makes this a failure)")
	}
	tb.Skip(hint + "; RLSERVER_REQUIRE_REDIS=1 turns this skip into a failure")
	return ""
}

// StartRedis starts a redis-server on a free loopback port, without persistence and
// with extraArgs after its own arguments, stops it when tb ends, and returns its
// address. Without redis-server it skips or fails tb as RedisTool does.
func StartRedis(tb testing.TB, extraArgs ...string) string {
	tb.Helper()
	RedisTool(tb, "redis-server")
	p, err := launch.Redis(tb.TempDir(), extraArgs...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Kill)
	return p.Addr
}

// StartRedisCluster starts n redis-servers (n ≥ 3, Redis's least) as a Redis
// Cluster of n masters and no replicas (launch.RedisCluster), stops them when tb
// ends, and returns their addresses. Without redis-server or redis-cli it skips or
// fails tb as RedisTool does.
func StartRedisCluster(tb testing.TB, n int) []string {
	tb.Helper()
	RedisTool(tb, "redis-server")
	RedisTool(tb, "redis-cli")
	nodes, err := launch.RedisCluster(context.Background(), tb.TempDir(), n)
	if err != nil {
		tb.Fatal(err)
	}
	addrs := make([]string, len(nodes))
	for i, p := range nodes {
		tb.Cleanup(p.Kill)
		addrs[i] = p.Addr
	}
	return addrs
}

// DeadAddr returns a loopback address where nothing listens: connecting is refused.
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// StalledAddr returns the address of a loopback server that accepts connections and
// never answers, closed with its connections when tb ends.
func StalledAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Buffer is a bytes.Buffer safe for concurrent use: a logger's goroutines write to
// it while the test reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
