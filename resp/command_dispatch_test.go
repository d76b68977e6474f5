package resp

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/rlserver/rlserver/core"
	"github.com/tidwall/redcon"
)

// fakeConn is the part of a redcon connection that serveCommand and accept use,
// for the paths a real connection cannot reach on demand.
type fakeConn struct {
	redcon.Conn // nil: any other method panics
	ctx         any
	cmds        []redcon.Command
	closed      bool
	net         net.Conn
}

func (f *fakeConn) Context() any                   { return f.ctx }
func (f *fakeConn) SetContext(v any)               { f.ctx = v }
func (f *fakeConn) RemoteAddr() string             { return "127.0.0.1:1" }
func (f *fakeConn) NetConn() net.Conn              { return f.net }
func (f *fakeConn) PeekPipeline() []redcon.Command { return f.cmds }
func (f *fakeConn) ReadPipeline() []redcon.Command { c := f.cmds; f.cmds = nil; return c }
func (f *fakeConn) Close() error                   { f.closed = true; return nil }

func quietServer(t *testing.T) *Server {
	t.Helper()
	s, err := NewServer(Config{Config: core.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rcCommand(args ...string) redcon.Command {
	cmd := redcon.Command{}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	return cmd
}

// A command that panics closes its connection and drops the commands pipelined
// after it, which redcon would otherwise run with their replies going nowhere.
func TestPanicDropsPipeline(t *testing.T) {
	s := quietServer(t)
	var out bytes.Buffer
	fc := &fakeConn{cmds: []redcon.Command{rcCommand("RL.TOKEN", "k", "10", "1000"), rcCommand("PING")}}
	fc.ctx = &client{id: 1, conn: fc, w: redcon.NewWriter(&out), authed: true}
	st := s.store
	s.store = nil // DBSIZE dereferences it
	s.serveCommand(fc, rcCommand("DBSIZE"))
	s.store = st
	w := fc.ctx.(*client).w
	w.Flush()
	if !strings.HasPrefix(out.String(), "-ERR internal error") {
		t.Errorf("reply %q, want the internal error", out.String())
	}
	if !fc.closed {
		t.Error("connection left open")
	}
	if len(fc.cmds) != 0 {
		t.Errorf("%d pipelined commands left to run after the panic", len(fc.cmds))
	}
}

// A connection that reaches accept after Close is refused and gives back the slot
// connListener reserved for it, without touching the conns WaitGroup.
func TestAcceptAfterClose(t *testing.T) {
	s := quietServer(t)
	s.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s.connected.Add(1) // as connListener.Accept does
	if s.accept(&fakeConn{net: a}) {
		t.Fatal("accept took a connection after Close")
	}
	if n := s.connected.Load(); n != 0 {
		t.Errorf("connected = %d after the refusal, want 0", n)
	}
	if len(s.clients) != 0 {
		t.Errorf("%d clients registered", len(s.clients))
	}
}

// failingListener fails its first Accepts with EMFILE, then hands out one end of a pipe.
type failingListener struct {
	net.Listener // nil: only Accept is used
	fails        int
	calls        int
	conn         net.Conn
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls++
	if l.calls <= l.fails {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.conn, nil
}

// Out of file descriptors, Accept waits and tries again rather than handing redcon
// an error it would retry at once, spinning a core.
func TestAcceptRetriesEMFILE(t *testing.T) {
	s := quietServer(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	fl := &failingListener{fails: 2, conn: a}
	conn, err := (&connListener{Listener: fl, s: s}).Accept()
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if lc, ok := conn.(*boundedConn); !ok || lc.Conn != a {
		t.Errorf("Accept returned %v, want the listener's connection", conn)
	}
	if fl.calls != 3 {
		t.Errorf("listener's Accept called %d times, want 3", fl.calls)
	}
	s.connected.Add(-1)
}
