package resp_test

// Byte-for-byte comparisons with a real redis-server: the same bytes go to both, and
// both must answer the same bytes, then close the connection or not alike. Without
// redis-server they skip, unless RLSERVER_REQUIRE_REDIS=1 (CI): then they fail.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// endMarker ends every exchange: its reply tells that all before it was answered.
const (
	endMarker = "ECHO __end__\r\n"
	endReply  = "$7\r\n__end__\r\n"
)

// exchange sends in (then the end marker) on a new connection to addr and returns
// every byte answered, up to the end marker's reply or the connection's close.
func exchange(t *testing.T, addr, in string) (got string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A deadline guards against a hung test, never decides a result.
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(in + endMarker)); err != nil {
		t.Fatal(err)
	}
	var b []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(b, []byte(endReply)) {
		n, err := conn.Read(buf)
		b = append(b, buf[:n]...)
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return string(b), true
		}
		if err != nil {
			t.Fatalf("%q: after %q: %v", in, b, err)
		}
	}
	return string(bytes.TrimSuffix(b, []byte(endReply))), false
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// compareWithRedis sends each input to both servers and requires the same answer.
func compareWithRedis(t *testing.T, redisAddr, rlAddr string, inputs []string) {
	t.Helper()
	for _, in := range inputs {
		want, wantClosed := exchange(t, redisAddr, in)
		got, gotClosed := exchange(t, rlAddr, in)
		if got != want || gotClosed != wantClosed {
			t.Errorf("%q:\n rlserver: %q (closed %v)\n    redis: %q (closed %v)", in, got, gotClosed, want, wantClosed)
		}
	}
}

// TestProtocolAsRedis: requests framed oddly are skipped, refused or read as Redis
// does (tests/unit/protocol.tcl of redis/redis, and what it leaves out).
func TestProtocolAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"\r\nPING\r\n",
		// Counts of zero or less are skipped.
		"*0\r\nPING\r\n",
		"*-1\r\nPING\r\n",
		"*-10\r\nPING\r\n",
		"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n",
		// Lengths Redis's string2ll refuses.
		"*+1\r\n$4\r\nPING\r\n",
		"*01\r\n$4\r\nPING\r\n",
		"*-0\r\n$4\r\nPING\r\n",
		"*\r\n",
		"*1\r\n$04\r\nPING\r\n",
		"*1\r\n$+4\r\nPING\r\n",
		"*1\r\n$-0\r\n",
		"*1\r\n$\r\n",
		"*1\r\n$-10\r\n",
		"*1\r\n$blabla\r\n",
		"*3000000000\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
		"*1\r\nfoo\r\n",
		// The two bytes after a bulk are skipped unread.
		"*1\r\n$4\r\nPINGxx",
		"*2\r\n$4\r\nECHO\r\n$3\r\nabcXY*1\r\n$4\r\nPING\r\n",
		"*1\r\n$3\r\nabcde\r\n",
		// The commands before a bad one in the same write run.
		"PING\r\n*1\r\n$x\r\n",
		"*1\r\n$4\r\nPING\r\n*1x\r\n",
		"*2\r\n$4\r\nECHO\r\n$1\r\nk\r\n*+2\r\n",
		// Transactions: QUIT is not queued.
		"MULTI\r\nQUIT\r\n",
		"MULTI\r\nPING\r\nQUIT\r\n",
		"MULTI\r\nNOSUCH\r\nPING\r\nEXEC\r\n",
		"MULTI\r\nPING x y\r\nEXEC\r\n",
		// SUBSCRIBE is queued; EXEC subscribes, and PING after it in the queue answers
		// as on a subscribed connection.
		"MULTI\r\nSUBSCRIBE a b\r\nPING\r\nEXEC\r\nPING\r\nUNSUBSCRIBE a b\r\n",
		"MULTI\r\nUNSUBSCRIBE\r\nPSUBSCRIBE p*\r\nEXEC\r\nPUNSUBSCRIBE\r\n",
	})
	// Split across writes: a count line in pieces.
	for _, addr := range []string{redisAddr, rlAddr} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		for _, part := range []string{"*", "-", "1", "\r", "\n", "*1\r\n$4\r\nPI", "NG\r\n"} {
			conn.Write([]byte(part))
			time.Sleep(time.Millisecond) // apart, to reach the server in separate reads; either way the answer is the same
		}
		want := "+PONG\r\n"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != want {
			more, _ := io.ReadAll(conn)
			got = append(got, more...)
			t.Errorf("%s (redis %v): split count line: %q, %v", addr, addr == redisAddr, got, err)
		}
		conn.Close()
	}
}

// TestGetKeysAsRedis: COMMAND GETKEYS and GETKEYSANDFLAGS find the keys of the
// commands both servers have, with Redis's flags and errors.
func TestGetKeysAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"COMMAND GETKEYS EXISTS a b c\r\n",
		"COMMAND GETKEYSANDFLAGS EXISTS a b\r\n",
		"COMMAND GETKEYSANDFLAGS DEL a b\r\n",
		"COMMAND GETKEYSANDFLAGS UNLINK a\r\n",
		"COMMAND GETKEYSANDFLAGS PTTL k\r\n",
		"COMMAND GETKEYSANDFLAGS TTL k\r\n",
		"COMMAND GETKEYSANDFLAGS TYPE k\r\n",
		"COMMAND GETKEYSANDFLAGS MEMORY USAGE k\r\n",
		"COMMAND GETKEYS MEMORY USAGE k SAMPLES 5\r\n",
		"COMMAND GETKEYS NOSUCH x\r\n",
		"COMMAND GETKEYS CLIENT NOPE\r\n",
		"COMMAND GETKEYS PING x\r\n",
		"COMMAND GETKEYS TYPE a b\r\n",
		"COMMAND GETKEYS\r\n",
	})
}
