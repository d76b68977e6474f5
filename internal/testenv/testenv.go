// Package testenv starts what the tests of several packages run against: an
// rlserver in-process, a real redis-server, and loopback addresses that refuse or
// never answer. Each helper undoes its work when its test ends.
//
// Tests that need Redis programs skip, saying how to install them, when the programs
// are not on PATH, unless RLSERVER_REQUIRE_REDIS=1 (as CI sets): then they fail.
//
// Package resp's own tests cannot use this package, which imports resp: they keep
// their own server helper.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/resp"
)

// StartServer runs an rlserver in-process on a free loopback port with cfg (its log
// discarded unless cfg.Logger is set), closes it when tb ends, and returns its
// address. Serve returning an error fails tb.
func StartServer(tb testing.TB, cfg resp.Config) string {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := resp.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		// ErrServerClosed: the test ended (a skip, say) before Serve began, and Close
		// came first. That is no Serve failure.
		if err := <-done; err != nil && !errors.Is(err, resp.ErrServerClosed) {
			tb.Errorf("rlserver Serve: %v", err)
		}
	})
	return ln.Addr().String()
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
	bin := RedisTool(tb, "redis-server")
	var lastErr error
	for range 3 { // the port is free when picked, but may be taken before redis binds it
		port := freePort(tb)
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", tb.TempDir(), "--loglevel", "warning"}, extraArgs...)
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitPing(addr, exited); lastErr == nil {
			tb.Cleanup(stop)
			return addr
		}
		stop()
	}
	tb.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// freePort returns a loopback port nobody listens on, and none on port+10000 either,
// below 55536 so that both exist: a Redis Cluster node (--cluster-enabled yes) also
// binds port+10000 for its bus, and an ephemeral port from 127.0.0.1:0 may be above
// 55535 (Linux hands out 32768-60999).
func freePort(tb testing.TB) int {
	tb.Helper()
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
	tb.Fatal("no free port pair")
	return 0
}

// waitPing waits up to 10 s for a server at addr to answer PING, giving up early
// once exited is closed.
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
