package resp

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlserver/rlserver/core"
)

// TestMalformedRESP: a protocol error gets Redis's error line and closes that
// connection only; nothing of the bad request runs.
func TestMalformedRESP(t *testing.T) {
	ts := startServer(t, Config{})
	other := ts.raw(t)
	other.send("PING\r\n")
	other.expect("+PONG\r\n")
	for _, tc := range []struct{ send, want string }{
		{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
		{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"PING \"a\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		// A good command batched with a bad one runs, as in Redis (TestProtocolAsRedis).
		{"*2\r\n$4\r\nECHO\r\n$1\r\nk\r\n*1\r\n$x\r\n", "$1\r\nk\r\n-ERR Protocol error: invalid bulk length\r\n"},
	} {
		r := ts.raw(t)
		r.send(tc.send)
		r.expect(tc.want)
		r.expectClosed()
	}
	other.send("EXISTS k\r\n")
	other.expect(":0\r\n")
}

// TestHalfSentRequest: a command that arrives in pieces is answered once, when
// complete, and nothing is answered for the pieces.
func TestHalfSentRequest(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	req := "*4\r\n$8\r\nRL.TOKEN\r\n$6\r\nuser:1\r\n$2\r\n10\r\n$4\r\n1000\r\n"
	for i := 1; i < len(req); i += 7 {
		r.send(req[i-1 : i])
		r.send(req[i:min(i+6, len(req))])
	}
	// Had the server answered a piece, that answer would come before PONG.
	r.send("PING\r\n")
	r.expect("*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:100\r\n+PONG\r\n")
}

// TestBinarySafe: keys and arguments are byte strings; CRLF and NUL inside them
// are data, and the inline form is accepted as Redis accepts it.
func TestBinarySafe(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	key := "a\r\nb\x00c"
	r.send(fmt.Sprintf("*4\r\n$8\r\nRL.TOKEN\r\n$%d\r\n%s\r\n$2\r\n10\r\n$4\r\n1000\r\n", len(key), key))
	r.expect("*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:100\r\n")
	r.send("*1\r\n$4\r\nKEYS\r\n")
	r.expect("-ERR wrong number of arguments for 'keys' command\r\n")
	r.send("*2\r\n$4\r\nKEYS\r\n$1\r\n*\r\n")
	r.expect(fmt.Sprintf("*1\r\n$%d\r\n%s\r\n", len(key), key))
	r.send("echo \"x y\"\r\n")
	r.expect("$3\r\nx y\r\n")
	// Error lines cannot carry CRLF: as Redis, the server turns them into spaces.
	r.send("*2\r\n$4\r\nX\r\nY\r\n$1\r\nZ\r\n")
	r.expect("-ERR unknown command 'X  Y', with args beginning with: 'Z' \r\n")
}

// TestUnknownCommandFormat: Redis quotes the arguments until 128 bytes of them are
// shown, and at most 128 bytes of the name.
func TestUnknownCommandFormat(t *testing.T) {
	long := strings.Repeat("n", 200)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, "ERR unknown command 'foo', with args beginning with: "},
		{[]string{"foo", "a", ""}, "ERR unknown command 'foo', with args beginning with: 'a' '' "},
		{[]string{long, strings.Repeat("x", 125), "yy"},
			"ERR unknown command '" + long[:128] + "', with args beginning with: '" + strings.Repeat("x", 125) + "' "},
		{[]string{"f", strings.Repeat("x", 124), "yy", "z"},
			"ERR unknown command 'f', with args beginning with: '" + strings.Repeat("x", 124) + "' 'y' "},
		{[]string{"f", strings.Repeat("x", 300)},
			"ERR unknown command 'f', with args beginning with: '" + strings.Repeat("x", 128) + "' "},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		if got := unknownCommand(args); got != tc.want {
			t.Errorf("unknownCommand(%.20q...)\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestPipelineOneFlush: a pipeline that arrives in one read is answered in one write.
func TestPipelineOneFlush(t *testing.T) {
	s, err := NewServer(Config{Config: core.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	s.core.SetClock(t0)
	go s.Serve(ln)
	defer s.Close()
	ts := &testServer{Server: s, addr: inner.Addr().String()}
	r := ts.raw(t)
	const n = 90 // 3.8 kB: fits redcon's 4 kB read buffer
	var req, want strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&req, "*4\r\n$8\r\nRL.TOKEN\r\n$1\r\nk\r\n$3\r\n100\r\n$4\r\n1000\r\n")
		fmt.Fprintf(&want, "*5\r\n:1\r\n:100\r\n:%d\r\n:0\r\n:%d\r\n", 99-i, 10*(i+1))
	}
	r.send(req.String())
	r.expect(want.String())
	// One write, or two if the request happened to arrive in two reads.
	if w := ln.writes.Load(); w > 2 {
		t.Errorf("%d replies took %d writes, want 1 (2 at most)", n, w)
	}
}

// TestPipelineClock: the commands of a pipeline share one reading of the clock,
// except that a DEBUG CLOCK in the pipeline is seen by the commands after it.
func TestPipelineClock(t *testing.T) {
	ts := startServer(t, Config{EnableDebugCommand: true})
	r := ts.raw(t)
	r.send("DEBUG CLOCK SET 7000000\r\nTIME\r\nDEBUG CLOCK ADVANCE 5\r\nTIME\r\nDEBUG CLOCK REAL\r\nTIME\r\n")
	r.expect("+OK\r\n*2\r\n$1\r\n7\r\n$1\r\n0\r\n+OK\r\n*2\r\n$1\r\n7\r\n$1\r\n5\r\n+OK\r\n*2\r\n$10\r\n")
}

// TestPipelineClockEndsWithBatch: a pipeline that ends with a rejected command
// still ends its shared clock reading; the next pipeline reads the clock anew.
func TestPipelineClockEndsWithBatch(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	rd := bufio.NewReader(r.conn)
	readTime := func() string {
		var b strings.Builder
		for i := 0; i < 5; i++ { // *2, $n, seconds, $n, microseconds
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(line)
		}
		return b.String()
	}
	r.send("TIME\r\nNOSUCH\r\n")
	first := readTime()
	if e, _ := rd.ReadString('\n'); !strings.HasPrefix(e, "-ERR unknown command") {
		t.Fatalf("got %q", e)
	}
	r.send("TIME\r\n")
	if second := readTime(); second == first {
		t.Errorf("two pipelines read the same time: %q", first)
	}
}
