package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/resp"
)

// startServer runs an rlserver in-process on a free loopback port, closed when t
// ends, and returns its address.
func startServer(t testing.TB) string {
	t.Helper()
	srv, err := resp.NewServer(resp.Config{Logger: slog.New(slog.DiscardHandler)})
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

// startRedis starts a redis-server on a free loopback port, stopped when t ends, and
// returns its address. Without redis-server it skips t, saying how to install it, or
// fails it under RLSERVER_REQUIRE_REDIS=1.
func startRedis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const hint = "redis-server is not on PATH; install it to test the Redis+Lua backend " +
			"(Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
		if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
			t.Fatal(hint + " (RLSERVER_REQUIRE_REDIS=1 makes this a failure)")
		}
		t.Skip(hint + "; RLSERVER_REQUIRE_REDIS=1 turns this skip into a failure")
	}
	for range 3 { // the port is free when picked, but may be taken before redis binds it
		addr := deadAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", t.TempDir(), "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() { cmd.Process.Kill(); <-exited }
		if err = waitPing(addr, exited); err == nil {
			t.Cleanup(stop)
			return addr
		}
		stop()
	}
	t.Fatalf("redis-server did not start: %v", err)
	return ""
}

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

// deadAddr is a loopback address where nothing listens.
func deadAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// stalledAddr is a loopback server that accepts connections and never answers.
func stalledAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// networkClient is a Client on the server at addr: rlserver's commands, or the Lua
// scripts. timeout is its per-call budget.
func networkClient(t testing.TB, addr string, lua bool, timeout time.Duration) *client.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		PoolSize: 64, MinIdleConns: 4})
	t.Cleanup(func() { rdb.Close() })
	newClient := client.New
	if lua {
		newClient = client.NewLua
	}
	c, err := newClient(rdb, client.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// embeddedClient is an in-process Client; frozen at a whole minute unless real.
func embeddedClient(t testing.TB, real bool) *client.Client {
	t.Helper()
	opts := client.Options{}
	if !real {
		opts.Clock = func() time.Time { return time.Unix(1_750_000_020, 0) }
	}
	c, err := client.NewEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// itoa is strconv.Itoa, for building expected headers.
func itoa(n int) string { return strconv.Itoa(n) }
