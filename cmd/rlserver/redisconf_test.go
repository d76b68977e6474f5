package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/conffile"
)

// TestRedisStyleConfig: a file of stock redis.conf comments ("# it's ..."), port and
// bind, include, and redis-server's --name value command line.
func TestRedisStyleConfig(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.conf")
	os.WriteFile(inc, []byte("  # Note that Redis's defaults don't apply: it's the included file\nmaxclients 77\n"), 0o600)
	path := filepath.Join(dir, "rl.conf")
	os.WriteFile(path, []byte("# By default, if no \"bind\" configuration directive is specified, Redis listens\n"+
		"# for connections from all available network interfaces on the host machine. It's\n"+
		"   # an indented comment with a ' quote\n"+
		"bind 127.0.0.1 -::1\nport 7111\ninclude "+inc+"\n"), 0o600)
	got, err := parseFlags([]string{path, "--requirepass", "x", "--port", "7112", "--enable-debug-command", "yes", "--slowlog-max-len", "9"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got.bind != "127.0.0.1 -::1" || got.port != 7112 || got.cfg.MaxClients != 77 || got.cfg.RequirePass != "x" ||
		!got.cfg.EnableDebugCommand || got.cfg.SlowlogMaxLen != 9 {
		t.Errorf("got %+v", got)
	}
	// Errors still name the file and the line, an included file's own.
	os.WriteFile(inc, []byte("# it's fine\n\nnosuch 1\n"), 0o600)
	var out strings.Builder
	if _, err := parseFlags([]string{path}, &out); err == nil || !strings.Contains(out.String(), inc+":3: unknown directive 'nosuch'") {
		t.Errorf("an unknown directive in an include: %v, %q", err, out.String())
	}
	os.WriteFile(inc, []byte("include "+inc+"\n"), 0o600)
	if _, err := parseFlags([]string{path}, io.Discard); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("an include of itself: %v", err)
	}
	if _, err := parseFlags([]string{"--nosuch", "1"}, io.Discard); err == nil {
		t.Error("--nosuch 1 was accepted")
	}
}

// TestStockRedisConf: every line of Debian's /etc/redis/redis.conf splits (its
// comments hold quotes), and rlserver refuses its first directive it does not have,
// naming it, rather than a quote.
func TestStockRedisConf(t *testing.T) {
	const stock = "/etc/redis/redis.conf"
	if _, err := os.Stat(stock); err != nil {
		t.Skip(stock + " is not here (apt-get install redis-server)")
	}
	ds, err := conffile.ReadFile(stock)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", stock, err)
	}
	if len(ds) < 20 {
		t.Fatalf("%d directives in %s", len(ds), stock)
	}
	var out strings.Builder
	_, err = parseFlags([]string{stock}, &out)
	if err == nil || !strings.Contains(out.String(), "unknown directive") {
		t.Errorf("rlserver on %s: %v, %q; want an unknown directive named", stock, err, out.String())
	}
}

// TestBindListensOnEach: -bind's addresses each serve, on -port.
func TestBindListensOnEach(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts, err := parseFlags([]string{"--bind", "127.0.0.1", "127.0.0.2", "-198.51.100.1", "--port", strconv.Itoa(port)}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	for _, h := range []string{"127.0.0.1", "127.0.0.2"} {
		rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(h, strconv.Itoa(port)), DialTimeout: time.Second})
		var pong string
		for range 50 { // until the listener is up
			if pong, err = rdb.Ping(ctx).Result(); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if pong != "PONG" {
			t.Errorf("PING on %s: %v", h, err)
		}
		rdb.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
