package resp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// TestMaxClients: beyond maxclients a new connection gets Redis's error and is
// closed; once one leaves, the next is served.
func TestMaxClients(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 2})
	a, b := ts.raw(t), ts.raw(t)
	for _, r := range []*rawConn{a, b} {
		r.send("PING\r\n")
		r.expect("+PONG\r\n")
	}
	c := ts.raw(t)
	c.expect("-ERR max number of clients reached\r\n")
	c.expectClosed()
	a.send("INFO clients\r\n")
	a.expect(fmt.Sprintf("$%d\r\n# Clients\r\nconnected_clients:2\r\nmaxclients:2\r\nblocked_clients:0\r\n\r\n",
		len("# Clients\r\nconnected_clients:2\r\nmaxclients:2\r\nblocked_clients:0\r\n")))
	b.send("QUIT\r\n")
	b.expect("+OK\r\n")
	b.expectClosed()
	// The slot returns when the server has unregistered b.
	poll.Until(t, 10*time.Second, "the closed connection to be unregistered", func() bool { return ts.connected.Load() == 1 })
	d := ts.raw(t)
	d.send("PING\r\n")
	d.expect("+PONG\r\n")
	if n := ts.rejected.Load(); n != 1 {
		t.Errorf("rejected connections = %d, want 1", n)
	}
}

// TestIdleTimeout: a connection that sends nothing for IdleTimeout is closed; one
// that is busy is not affected by it.
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{IdleTimeout: 50 * time.Millisecond})
	r := ts.raw(t)
	r.send("PING\r\n")
	r.expect("+PONG\r\n")
	start := time.Now()
	r.expectClosed() // bounded by the raw connection's 10 s deadline
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("closed after %v, before the 50 ms timeout", d)
	}
	// A half-sent request counts as idle too: the read of the rest times out.
	h := ts.raw(t)
	h.send("*1\r\n$4\r\nPI")
	h.expectClosed()

	never := startServer(t, Config{})
	if got := do(never.client(t, 3), "CONFIG GET timeout"); got != "{timeout:0}" {
		t.Errorf("CONFIG GET timeout = %s", got)
	}
	if got := do(ts.client(t, 3), "CONFIG GET timeout"); got != "{timeout:0}" {
		t.Errorf("CONFIG GET timeout (50 ms, whole seconds) = %s", got)
	}
}

// TestRequestBounds: a request announcing more than the bounds gets Redis's
// protocol error and loses its connection, after the commands before it ran;
// another connection is served throughout.
func TestRequestBounds(t *testing.T) {
	ts := startServer(t, Config{ProtoMaxBulkLen: 1000})
	other := ts.raw(t)
	big := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		name string
		send []string // written one after the other
		want string
	}{
		{"bulk over the limit", []string{"*2\r\n$4\r\nECHO\r\n$1001\r\n"},
			"-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length overflows", []string{"*2\r\n$4\r\nECHO\r\n$99999999999999999999999\r\n"},
			"-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length split across writes", []string{"*2\r\n$4\r\nECHO\r\n$10", "01\r", "\n"},
			"-ERR Protocol error: invalid bulk length\r\n"},
		{"commands before the bad one run", []string{"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$5000\r\n"},
			"+PONG\r\n+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk at the limit, then over", []string{"*2\r\n$4\r\nECHO\r\n$1000\r\n" + big + "\r\n*1\r\n$1001\r\n"},
			"$1000\r\n" + big + "\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"multibulk over 2^20", []string{"*1048577\r\n"},
			"-ERR Protocol error: invalid multibulk length\r\n"},
		{"multibulk in pieces", []string{"*", "2000", "000\r\n"},
			"-ERR Protocol error: invalid multibulk length\r\n"},
		{"inline without newline over 64 KB", []string{strings.Repeat("a", 40<<10), strings.Repeat("a", 30<<10)},
			"-ERR Protocol error: too big inline request\r\n"},
		{"length line without newline over 64 KB", []string{"*1\r\n$" + strings.Repeat("1", 70<<10)},
			"-ERR Protocol error: too big bulk count string\r\n"},
		{"count line without newline over 64 KB", []string{"*" + strings.Repeat("1", 70<<10)},
			"-ERR Protocol error: too big mbulk count string\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.raw(t)
			for _, s := range tc.send {
				r.send(s)
			}
			r.expect(tc.want)
			r.expectClosed()
			other.send("PING\r\n")
			other.expect("+PONG\r\n")
		})
	}
	// Within the bounds, a long inline command and many arguments are served. (A
	// request of exactly 2^20 arguments takes 0.3-0.9 s here, 10 s under -race:
	// TestRequestScan checks that boundary.)
	r := ts.raw(t)
	r.send("ECHO " + strings.Repeat("y", 60<<10) + "\r\n")
	r.expect(fmt.Sprintf("$%d\r\n%s\r\n", 60<<10, strings.Repeat("y", 60<<10)))
	var req strings.Builder
	req.WriteString("*65536\r\n$6\r\nEXISTS\r\n")
	for range 1<<16 - 1 {
		req.WriteString("$1\r\nk\r\n")
	}
	r.send(req.String())
	r.expect(":0\r\n")
}

// TestRequestScan feeds requests to the scanner in every split into two reads: a
// bound is found, with the bytes before it, whatever the split; good requests pass.
// Unauthenticated, the bounds are Redis's 10 arguments of 16 KB.
func TestRequestScan(t *testing.T) {
	for _, tc := range []struct {
		in     string
		unauth bool
		want   error
	}{
		{"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\r\n*1\r\n$4\r\nPING\r\n", false, nil},
		{"*2\r\n$4\r\nECHO\r\n$100001\r\n", false, errBulkLength},
		{"*3\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n$100001\r\n", false, errBulkLength},
		{"PING\r\n*1048577\r\n", false, errMultibulkLength},
		{"*1\r\n$99999999999999999999999999999\r\n", false, errBulkLength},
		{"*99999999999999999999999999999\r\n", false, errMultibulkLength},
		{"*1048576\r\n$4\r\n", false, nil},
		{"*11\r\n$100000\r\n", false, nil},
		// Before AUTH: 10 arguments of 16 KB.
		{"*10\r\n$16384\r\n", true, nil},
		{"PING\r\n*11\r\n", true, errUnauthMultibulk},
		{"*1048577\r\n", true, errMultibulkLength}, // the bound for everyone comes first, as in Redis
		{"*2\r\n$4\r\nECHO\r\n$16385\r\n", true, errUnauthBulk},
		{"*2\r\n$4\r\nECHO\r\n$100001\r\n", true, errBulkLength},
		// Redis's framing: a count of zero or less is skipped (here "$999999" is then
		// an inline command); lengths are string2ll's.
		{"*-1\r\n$999999\r\n", false, nil},
		{"*0\r\n*-10\r\n*1\r\n$4\r\nPING\r\n", false, nil},
		{"*1\r\n:999999\r\n", false, errors.New("ERR Protocol error: expected '$', got ':'")},
		{"*1\r\n$-999999\r\n", false, errBulkLength},
		{"*1x\r\n$999999\r\n", false, errMultibulkLength},
		{"*0\r\n*99999999\r\n", false, errMultibulkLength},
		{"*+1\r\n", false, errMultibulkLength},
		{"*01\r\n", false, errMultibulkLength},
		{"*-0\r\n", false, errMultibulkLength},
		{"*\r\n", false, errMultibulkLength},
		{"*1\r\n$04\r\n", false, errBulkLength},
		{"*1\r\n$+4\r\n", false, errBulkLength},
		{"*1\r\n$\r\n", false, errBulkLength},
	} {
		for split := 0; split <= len(tc.in); split++ {
			var r requestScan
			first, second := []byte(tc.in[:split]), []byte(tc.in[split:])
			n, err := r.feed(first, 100000, !tc.unauth)
			if err == nil && n < len(first) {
				// The start of a count line that may be skipped: boundedConn carries it.
				second = append(first[n:len(first):len(first)], second...)
			}
			if err == nil {
				first = second
				n, err = r.feed(second, 100000, !tc.unauth)
			}
			if err == nil && n != len(first) {
				t.Errorf("%q split at %d: passed %d of %d bytes with no error", tc.in, split, n, len(first))
			}
			if fmt.Sprint(err) != fmt.Sprint(tc.want) {
				t.Errorf("%q split at %d: err %v, want %v", tc.in, split, err, tc.want)
			}
			if n > len(first) {
				t.Errorf("%q split at %d: passed %d bytes of %d", tc.in, split, n, len(first))
			}
		}
	}
}

// TestLimitsConfig: bad limits are refused at construction; CONFIG GET and INFO show them.
func TestLimitsConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxClients: -1},
		{IdleTimeout: -time.Second},
		{ProtoMaxBulkLen: -1},
	} {
		if _, err := NewServer(cfg); err == nil {
			t.Errorf("NewServer(%+v) accepted", cfg)
		}
	}
	ts := startServer(t, Config{MaxClients: 7, IdleTimeout: 90 * time.Second, ProtoMaxBulkLen: 4096})
	rdb := ts.client(t, 3)
	if got := do(rdb, "CONFIG GET maxclients timeout proto-max-bulk-len tls-port"); got !=
		"{maxclients:7 proto-max-bulk-len:4096 timeout:90 tls-port:0}" {
		t.Errorf("CONFIG GET = %s", got)
	}
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil || !strings.Contains(info, "\r\nmaxclients:7\r\n") {
		t.Errorf("INFO clients = %q, %v", info, err)
	}
	def := startServer(t, Config{})
	if got := do(def.client(t, 2), "CONFIG GET maxclients proto-max-bulk-len"); got !=
		"[maxclients 10000 proto-max-bulk-len 536870912]" {
		t.Errorf("CONFIG GET defaults = %s", got)
	}
}

// TestUnauthenticatedBounds: with a password, before AUTH a request of more than 10
// arguments or a bulk over 16 KB is refused with Redis's error and the connection
// closed, at once: 2^20 announced arguments are not parsed first. An AUTH earlier in
// the same write lifts the bounds for what follows; without a password there are none.
func TestUnauthenticatedBounds(t *testing.T) {
	ts := startServer(t, Config{RequirePass: "pw"})
	for _, tc := range []struct {
		name, send, want string
	}{
		{"11 arguments", "*11\r\n", "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"a bulk of 16 KB + 1", "*2\r\n$4\r\nECHO\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
		{"after a refused command", "PING\r\n*12\r\n", "-NOAUTH Authentication required.\r\n-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"after a failed AUTH", "AUTH nope\r\n*12\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n-ERR Protocol error: unauthenticated multibulk length\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.raw(t)
			r.send(tc.send)
			r.expect(tc.want)
			r.expectClosed()
		})
	}
	t.Run("2^20 arguments announced", func(t *testing.T) {
		var req strings.Builder
		req.WriteString("*1048576\r\n")
		for range 1 << 16 { // the first 64k of them, as a client would stream them
			req.WriteString("$1\r\nk\r\n")
		}
		r := ts.raw(t)
		begin := time.Now()
		go r.conn.Write([]byte(req.String())) // the server may close before it has all
		r.expect("-ERR Protocol error: unauthenticated multibulk length\r\n")
		took := time.Since(begin)
		r.expectClosed()
		t.Logf("refused in %v", took)
		if took > time.Second {
			t.Errorf("refused after %v", took)
		}
	})
	t.Run("within the bounds, then AUTH lifts them", func(t *testing.T) {
		r := ts.raw(t)
		small := "*10\r\n$6\r\nEXISTS\r\n" + strings.Repeat("$1\r\nx\r\n", 9)
		r.send(small)
		r.expect("-NOAUTH Authentication required.\r\n")
		big := "*2\r\n$4\r\nECHO\r\n$20000\r\n" + strings.Repeat("y", 20000) + "\r\n"
		r.send("AUTH pw\r\n" + big + "*11\r\n$6\r\nEXISTS\r\n" + strings.Repeat("$1\r\nk\r\n", 10))
		r.expect("+OK\r\n$20000\r\n" + strings.Repeat("y", 20000) + "\r\n:0\r\n")
	})
	t.Run("no password, no bounds", func(t *testing.T) {
		open := startServer(t, Config{})
		r := open.raw(t)
		r.send("*11\r\n$6\r\nEXISTS\r\n" + strings.Repeat("$1\r\nk\r\n", 10))
		r.expect(":0\r\n")
	})
}
