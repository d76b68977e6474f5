package resp

import (
	"bytes"
	"context"

	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
)

const (
	noAuth    = "NOAUTH Authentication required."
	wrongPass = "WRONGPASS invalid username-password pair or user is disabled."
)

// TestAuthSequences: what a connection may do before and after it authenticates,
// as Redis 7.0 answers (checked against redis-server 7.0.15 with requirepass).
func TestAuthSequences(t *testing.T) {
	withPass := startServer(t, Config{RequirePass: "secret"})
	noPass := startServer(t, Config{})
	hello := func(proto string) string {
		return "{id:ID mode:standalone modules:[] proto:" + proto + " role:master server:redis version:7.0.0}"
	}
	for _, tc := range []struct {
		name  string
		srv   *testServer
		calls []call
	}{
		{"before AUTH only AUTH, HELLO, QUIT", withPass, []call{
			{"PING", noAuth},
			{"PING x", noAuth},
			{"ECHO x", noAuth},
			{"RL.TOKEN k 10 1000", noAuth},
			{"CLIENT SETNAME x", noAuth},
			{"CONFIG GET requirepass", noAuth},
			// Unknown commands and wrong arity are answered first, as in Redis.
			{"FOO", "ERR unknown command 'FOO', with args beginning with: "},
			{"ECHO", "ERR wrong number of arguments for 'echo' command"},
			{"HELLO 3", errHelloNoAuth},
			{"HELLO", errHelloNoAuth},
			{"EXISTS k", noAuth},
		}},
		{"AUTH password", withPass, []call{
			{"AUTH wrong", wrongPass},
			{"PING", noAuth},
			{"AUTH a b c", "ERR syntax error"},
			{"AUTH secret", "OK"},
			{"PING", "PONG"},
			{"RL.TOKEN k 10 1000", "[1 10 9 0 100]"},
			// A failed AUTH keeps the connection authenticated, as in Redis.
			{"AUTH wrong", wrongPass},
			{"PING", "PONG"},
			{"CONFIG GET requirepass", "[requirepass secret]"},
		}},
		{"AUTH default password", withPass, []call{
			{"AUTH default wrong", wrongPass},
			{"AUTH nobody secret", wrongPass},
			{"AUTH default secre", wrongPass},
			{"AUTH default secrets", wrongPass},
			{"PING", noAuth},
			{"AUTH default secret", "OK"},
			{"EXISTS nokey", "0"},
		}},
		{"HELLO 3 AUTH", withPass, []call{
			{"HELLO 3 AUTH default wrong", wrongPass},
			{"HELLO 3 AUTH nobody secret", wrongPass},
			{"PING", noAuth},
			{"HELLO 3 AUTH default secret", hello("3")},
			{"PING", "PONG"},
			{"HELLO 2", hello("2")},
		}},
		{"HELLO 2 AUTH SETNAME", withPass, []call{
			{"HELLO 2 AUTH default secret SETNAME app", hello("2")},
			{"CLIENT GETNAME", "app"},
		}},
		{"without a password", noPass, []call{
			{"PING", "PONG"},
			{"AUTH secret", "ERR AUTH <password> called without any password configured for the default user. " +
				"Are you sure your configuration is correct?"},
			{"AUTH default anything", "OK"},
			{"AUTH nobody anything", wrongPass},
			{"HELLO 3 AUTH default anything", hello("3")},
			{"CONFIG GET requirepass", "{requirepass:}"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No Password: go-redis's own HELLO fails with NOAUTH and leaves the
			// connection unauthenticated, in RESP2.
			rdb := redis.NewClient(&redis.Options{Addr: tc.srv.addr, Protocol: 2, MaxRetries: -1})
			defer rdb.Close()
			conn := rdb.Conn()
			defer conn.Close()
			runOnConn(t, conn, tc.calls)
		})
	}
}

// runOnConn sends each call on one connection, whose authentication is the state
// under test, and compares the formatted replies. HELLO's id varies: it is shown as ID.
func runOnConn(t *testing.T, conn *redis.Conn, calls []call) {
	t.Helper()
	for _, c := range calls {
		var args []any
		for _, w := range strings.Split(c.cmd, " ") {
			args = append(args, w)
		}
		v, err := conn.Do(context.Background(), args...).Result()
		if m, ok := v.(map[any]any); ok && m["id"] != nil {
			m["id"] = "ID"
		}
		if a, ok := v.([]any); ok && len(a) == 14 && a[6] == "id" {
			v = helloMap(a)
		}
		if got := format(v, err); got != c.want {
			t.Errorf("%s\n got: %s\nwant: %s", c.cmd, got, c.want)
		}
	}
}

// helloMap turns HELLO's flat RESP2 reply into a map with the id replaced by ID.
func helloMap(a []any) map[any]any {
	m := make(map[any]any, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		m[a[i]] = a[i+1]
	}
	m["id"] = "ID"
	return m
}

// TestAuthGoRedisPassword: go-redis with the Password option logs in through HELLO
// (RESP3) or HELLO then AUTH (RESP2); a wrong password fails every command.
func TestAuthGoRedisPassword(t *testing.T) {
	ts := startServer(t, Config{RequirePass: "secret"})
	ts.core.SetClock(t0)
	ctx := context.Background()
	for _, tc := range []struct {
		proto    int
		password string
		want     string
	}{
		{3, "secret", "[1 10 9 0 100]"},
		{2, "secret", "[1 10 8 0 200]"},
		{3, "wrong", wrongPass},
		{2, "wrong", wrongPass},
		{3, "", noAuth},
		{2, "", noAuth},
	} {
		rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: tc.proto, Password: tc.password, MaxRetries: -1})
		v, err := rdb.Do(ctx, "RL.TOKEN", "k", 10, 1000).Result()
		if got := format(v, err); got != tc.want {
			t.Errorf("RESP%d, password %q: got %s, want %s", tc.proto, tc.password, got, tc.want)
		}
		rdb.Close()
	}
}

// TestNoAuthRaw: the exact error lines, and a pipeline whose AUTH unlocks the
// commands after it.
func TestNoAuthRaw(t *testing.T) {
	ts := startServer(t, Config{RequirePass: "p@ss word"})
	r := ts.raw(t)
	r.send("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nAUTH\r\n$9\r\np@ss word\r\n*1\r\n$4\r\nPING\r\n")
	r.expect("-NOAUTH Authentication required.\r\n+OK\r\n+PONG\r\n")
	q := ts.raw(t)
	q.send("QUIT\r\n")
	q.expect("+OK\r\n")
	q.expectClosed()
}

// TestExposedWarning: a listener beyond loopback without a password logs a
// warning; with a password, or on loopback, nothing is logged. The listener only
// reports a wildcard address: it listens on loopback.
func TestExposedWarning(t *testing.T) {
	for _, tc := range []struct {
		ip   net.IP
		pass string
		warn bool
	}{
		{net.IPv4zero, "", true},
		{net.IPv6unspecified, "", true},
		{net.IPv4(192, 0, 2, 1), "", true},
		{net.IPv4zero, "secret", false},
		{net.IPv4(127, 0, 0, 1), "", false},
		{net.IPv6loopback, "", false},
	} {
		var logs bytes.Buffer
		s, err := NewServer(Config{RequirePass: tc.pass, Config: core.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
		if err != nil {
			t.Fatal(err)
		}
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve(&addrListener{Listener: inner, addr: &net.TCPAddr{IP: tc.ip, Port: 6380}}) }()
		// A served command shows Serve has passed the point where it warns.
		rdb := redis.NewClient(&redis.Options{Addr: inner.Addr().String(), Password: tc.pass})
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.Close()
		s.Close()
		<-done
		got := strings.Contains(logs.String(), "level=WARN msg=\"listening on a non-loopback address without a password")
		if got != tc.warn {
			t.Errorf("%v, password %q: warned = %v, want %v; log:\n%s", tc.ip, tc.pass, got, tc.warn, logs.String())
		}
	}
}

// addrListener reports addr as its address.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l *addrListener) Addr() net.Addr { return l.addr }
