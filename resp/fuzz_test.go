package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/core"
)

// The fuzz targets run against a live server on loopback. Their seed corpora run in
// plain go test; `go test ./resp -run '^$' -fuzz FuzzCommand` (or FuzzRequest)
// explores further. Properties: no panic (a recovered one is logged, and the log is
// checked), an answer for every complete request, no state change when every answer
// is an error, and the server still answers PING on a fresh connection.

// fuzzServer starts a server whose clock is frozen at t0, so no key expires between
// an input and the check after it, with a few keys of every kind in it.
func fuzzServer(f *testing.F) (*testServer, *lockedBuffer) {
	log := &lockedBuffer{}
	ts := startServer(f, Config{Config: core.Config{Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelError}))}})
	ts.core.SetClock(t0)
	r := ts.raw(f)
	for _, line := range []string{
		"RL.FIXED f 5 1000", "RL.SLIDE s 5 1000", "RL.LOG l 5 1000", "RL.TOKEN t 5 1000",
		"RL.GCRA g 5 1000", "RL.LEAKY y 5 1000", "CL.THROTTLE c 5 10 60",
	} {
		r.send(line + "\r\n")
		r.expect("*5\r\n")
		if _, err := readReplies(bufio.NewReader(r.conn), 5); err != nil {
			f.Fatal(err)
		}
	}
	return ts, log
}

// state is what must not change when a request is refused.
type state struct {
	keys             int
	allowed, limited [algo.LastKind + 1]uint64 // store.Stats, per algo.Kind
}

func (ts *testServer) state() state {
	st := ts.store.Stats()
	return state{st.Keys, st.Allowed, st.Limited}
}

// check is the end of every fuzz input: no panic logged, PING answered on a new
// connection.
func (ts *testServer) check(t *testing.T, log *lockedBuffer) {
	t.Helper()
	if s := log.String(); strings.Contains(s, "panicked") {
		t.Fatalf("server panicked:\n%s", s)
	}
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("server gone: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hung server, not a result
	conn.Write([]byte("PING\r\n"))
	got := make([]byte, 7)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "+PONG\r\n" {
		t.Fatalf("PING on a fresh connection: %q, %v", got, err)
	}
}

// notFuzzed are the commands the fuzzer leaves out: SHUTDOWN would end the run,
// REPLICAOF and SLAVEOF would make the server a replica of whatever their arguments
// say, and the others answer once per argument or take the connection over.
var notFuzzed = map[string]bool{"shutdown": true, "replicaof": true, "slaveof": true, "rlsync": true,
	"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true}

// fuzzable is every command and subcommand but notFuzzed: its full name split into words.
func fuzzable() [][]string {
	var names [][]string
	for _, cm := range commands {
		if notFuzzed[cm.name] {
			continue
		}
		names = append(names, []string{cm.name})
		for _, sub := range cm.subs {
			names = append(names, []string{cm.name, sub.name})
		}
	}
	return names
}

// FuzzCommand sends one command of the table, chosen by pick, with the arguments
// in args (separated by NUL bytes), as a RESP array on a new connection.
func FuzzCommand(f *testing.F) {
	ts, log := fuzzServer(f)
	names := fuzzable()
	for i := range names {
		for _, args := range []string{"", "f", "f\x005\x001000", "k\x00-1\x00abc", "t\x0010\x001000\x00COST\x000\x00PEEK",
			"x\x009223372036854775807\x001\x00RATE", "*\x00COUNT\x00-5",
			"FIXED\x00a\x005\x001000\x00TOKEN\x00t\x001\x001000\x00PEEK", "q\x002\x001000\x00ID\x00w1"} {
			f.Add(uint16(i), []byte(args))
		}
	}
	f.Fuzz(func(t *testing.T, pick uint16, raw []byte) {
		name := names[int(pick)%len(names)]
		var words [][]byte
		for _, w := range name {
			words = append(words, []byte(w))
		}
		if len(raw) > 0 {
			words = append(words, bytes.SplitN(raw, []byte{0}, 32)...)
		}
		var req bytes.Buffer
		fmt.Fprintf(&req, "*%d\r\n", len(words))
		for _, w := range words {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(w), w)
		}
		before := ts.state()
		replies := exchange(t, ts, req.Bytes())
		if len(replies) != 1 && name[0] != "quit" {
			t.Fatalf("%q: %d replies, want 1", words, len(replies))
		}
		if len(replies) == 1 && replies[0][0] == '-' {
			if after := ts.state(); after != before {
				t.Fatalf("%q answered %q but changed the store: %+v -> %+v", words, replies[0], before, after)
			}
		}
		ts.check(t, log)
	})
}

// FuzzRequest writes raw bytes to a new connection, half-closes it and reads every
// reply until the server closes: garbage, truncated and mutated valid requests.
func FuzzRequest(f *testing.F) {
	ts, log := fuzzServer(f)
	for _, seed := range []string{
		"*3\r\n$8\r\nRL.TOKEN\r\n$1\r\nt\r\n$1\r\n5\r\n",                        // arity error
		"*4\r\n$8\r\nRL.TOKEN\r\n$1\r\nt\r\n$1\r\n5\r\n$4\r\n1000\r\n",          // valid
		"*4\r\n$8\r\nRL.TOKEN\r\n$1\r\nt\r\n$1\r\n5\r\n$4\r\n10",                // half-sent
		"*4\r\n$7\r\nRL.GCRA\r\n$1\r\nn\r\n$2\r\n-1\r\n$4\r\n1000\r\n",          // bad limit
		"*-1\r\n*0\r\n*1\r\n$-1\r\n",                                            // odd arrays
		"*2\r\n$3\r\nDEL\r\n$99999999999\r\n",                                   // huge bulk length
		"*999999999\r\n",                                                        // huge count
		"$5\r\nhello\r\n",                                                       // not an array
		"RL.FIXED f 5 1000 COST 2\r\nRL.FIXED f 5 1000 COST 99\r\nPING\r\n",     // inline pipeline
		"RL.SLIDE \"unterminated 5 1000\r\n",                                    // bad quoting
		"HELLO 3\r\nCLIENT INFO\r\nCONFIG GET *\r\nINFO\r\n",                    // RESP3 replies
		"KEYS *\r\nSCAN 0 COUNT 1000\r\nTYPE t\r\nPTTL l\r\nMEMORY USAGE l\r\n", // key commands
		"\x00\xff\r\n\r\n*\r\n$\r\n:1\r\n",                                      // garbage
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if bytes.Contains(bytes.ToLower(raw), []byte("shutdown")) {
			t.Skip("SHUTDOWN would stop the server under test")
		}
		before := ts.state()
		replies := exchange(t, ts, raw)
		allErrors := true
		for _, r := range replies {
			allErrors = allErrors && r[0] == '-'
		}
		if allErrors {
			if after := ts.state(); after != before {
				t.Fatalf("%q answered only errors %q but changed the store: %+v -> %+v", raw, replies, before, after)
			}
		}
		ts.check(t, log)
	})
}

// exchange writes req on a new connection, half-closes it, and returns the replies
// read until the server closes the connection, each as its raw bytes.
func exchange(t *testing.T, ts *testServer, req []byte) [][]byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hung server, not a result
	if _, err := conn.Write(req); err != nil {
		t.Fatalf("write: %v", err)
	}
	conn.(*net.TCPConn).CloseWrite()
	replies, err := readReplies(bufio.NewReader(conn), -1)
	if err != nil {
		t.Fatalf("%q: reading replies: %v (got %q)", req, err, replies)
	}
	return replies
}

// readReplies reads n RESP2/RESP3 replies (n < 0: until EOF) and returns each as raw
// bytes. A malformed reply is an error.
func readReplies(r *bufio.Reader, n int) ([][]byte, error) {
	var out [][]byte
	for n < 0 || len(out) < n {
		var raw bytes.Buffer
		if err := readReply(r, &raw); err != nil {
			if errors.Is(err, io.EOF) && raw.Len() == 0 && n < 0 {
				return out, nil
			}
			if isReset(err) && raw.Len() == 0 {
				return out, nil
			}
			return out, err
		}
		out = append(out, raw.Bytes())
	}
	return out, nil
}

func readReply(r *bufio.Reader, raw *bytes.Buffer) error {
	line, err := r.ReadBytes('\n')
	raw.Write(line)
	if err != nil {
		if raw.Len() > 0 && errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("bad reply line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		size, err := strconv.Atoi(body)
		if err != nil || size < -1 {
			return fmt.Errorf("bad length in %q", line)
		}
		if size == -1 {
			return nil
		}
		b := make([]byte, size+2)
		_, err = io.ReadFull(r, b)
		raw.Write(b)
		return err
	case '*', '~', '>', '%', '|':
		count, err := strconv.Atoi(body)
		if err != nil || count < -1 {
			return fmt.Errorf("bad count in %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			count *= 2
		}
		for range count {
			if err := readReply(r, raw); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}
