package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// t0 is a frozen test time at the start of a UTC day (2026-01-01), so every
// window of a whole number of seconds, minutes or hours starts there.
const t0 = 1_767_225_600_000_000

// testServer is a server on a random loopback port.
type testServer struct {
	*Server
	addr string
}

// startServer starts a server on 127.0.0.1:0 and stops it at the end of the test.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	ts, stop := savingServer(t, cfg)
	t.Cleanup(func() {
		// ErrServerClosed: the test ended before Serve began, and Close came first.
		if err := stop(); err != nil && !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// savingServer starts a server with cfg on a loopback port; stop closes it and
// returns what Serve returned (the final save's error included).
func savingServer(t testing.TB, cfg Config) (ts *testServer, stop func() error) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	var served error
	stopped := false
	stop = func() error {
		if !stopped {
			s.Close()
			served, stopped = <-done, true
		}
		return served
	}
	t.Cleanup(func() { stop() })
	return &testServer{Server: s, addr: ln.Addr().String()}, stop
}

// startDebugServer starts a server whose clock is frozen at t0.
func startDebugServer(t testing.TB) *testServer {
	t.Helper()
	ts := startServer(t, Config{EnableDebugCommand: true})
	ts.core.SetClock(t0)
	return ts
}

// client connects go-redis with its default options (RESP3), or RESP2 if proto is 2.
func (ts *testServer) client(t testing.TB, proto int) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: ts.addr}
	if proto == 2 {
		opt.Protocol = 2
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// call is one command line and its expected reply as format writes it.
type call struct {
	cmd  string // words separated by single spaces
	want string
}

// run sends each call in order and compares the formatted replies.
func run(t *testing.T, rdb *redis.Client, calls []call) {
	t.Helper()
	for _, c := range calls {
		if got := do(rdb, c.cmd); got != c.want {
			t.Errorf("%s\n got: %s\nwant: %s", c.cmd, got, c.want)
		}
	}
}

// do sends one command line and formats the reply.
func do(rdb *redis.Client, line string) string {
	var args []any
	for _, w := range strings.Split(line, " ") {
		args = append(args, w)
	}
	v, err := rdb.Do(context.Background(), args...).Result()
	return format(v, err)
}

// format writes a reply compactly: integers and strings as they are, arrays in
// brackets, maps in braces with sorted keys, null as (nil), errors as their text.
func format(v any, err error) string {
	if errors.Is(err, redis.Nil) {
		return "(nil)"
	}
	if err != nil {
		return err.Error()
	}
	switch v := v.(type) {
	case nil:
		return "(nil)"
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = format(e, nil)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[any]any:
		parts := make([]string, 0, len(v))
		for k, e := range v {
			parts = append(parts, format(k, nil)+":"+format(e, nil))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, " ") + "}"
	case error:
		return v.Error()
	default:
		return fmt.Sprintf("%T(%v)", v, v)
	}
}

// rawConn is a plain TCP connection for tests that write RESP by hand.
type rawConn struct {
	t    testing.TB
	conn net.Conn
}

func (ts *testServer) raw(t testing.TB) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A deadline guards against a hung test, never decides a result.
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, conn: conn}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := r.conn.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// expect reads exactly len(want) bytes and compares them with want.
func (r *rawConn) expect(want string) {
	r.t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.conn, got); err != nil {
		r.t.Fatalf("reading %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		r.t.Fatalf("got %q, want %q", got, want)
	}
}

// expectClosed reads until the server closes the connection and fails on any byte.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	rest, err := io.ReadAll(r.conn)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		r.t.Fatalf("waiting for close: %v", err)
	}
	if len(rest) > 0 {
		r.t.Fatalf("unexpected bytes before close: %q", rest)
	}
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}

// respCommand encodes a command as a RESP array of bulk strings, as a client sends it.
func respCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}
