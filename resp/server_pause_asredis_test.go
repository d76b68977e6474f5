package resp_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestClientPauseAsRedis: CLIENT PAUSE's errors, and which commands wait under
// WRITE and ALL, as Redis's: under ALL even CLIENT UNPAUSE waits; under WRITE a
// read does not, PUBLISH and a write queued in MULTI do; UNPAUSE ends it.
func TestClientPauseAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"CLIENT PAUSE\r\nCLIENT PAUSE abc\r\nCLIENT PAUSE -1\r\nCLIENT PAUSE 10 FOO\r\nCLIENT PAUSE 10 write x\r\n",
		"CLIENT PAUSE 1.5\r\nCLIENT PAUSE 0\r\nCLIENT PAUSE 0 WRITE\r\nCLIENT UNPAUSE\r\nCLIENT UNPAUSE x\r\n",
	})
	// Redis 7.2's bound (7.0's end overflowed, and it did not pause).
	if got, _ := exchange(t, rlAddr, "CLIENT PAUSE 9223372036854775807\r\n"); got != "-ERR timeout is out of range\r\n" {
		t.Errorf("CLIENT PAUSE past the end of time: %q", got)
	}
	// Whether each step's reply came at once (under 150 ms) or after the pause
	// (300 ms): the claim is about time, so the real clock, with a wide margin.
	const pause = "300"
	steps := []struct {
		conn int
		send string
	}{
		{0, "CLIENT PAUSE " + pause + " WRITE\r\n"},
		{1, "PING\r\n"},
		{1, "EXISTS k\r\n"},
		{1, "PUBLISH x y\r\n"},
		{0, "CLIENT PAUSE " + pause + " WRITE\r\n"},
		{1, "MULTI\r\n"},
		{1, "DEL k\r\n"},
		{1, "EXEC\r\n"},
		{0, "CLIENT PAUSE " + pause + " ALL\r\n"},
		{1, "CLIENT UNPAUSE\r\n"},
		{0, "CLIENT PAUSE 5000 WRITE\r\n"},
		{1, "CLIENT UNPAUSE\r\n"},
		{0, "PUBLISH x y\r\n"},
		{0, "CLIENT PAUSE " + pause + " ALL\r\n"},
		{0, "CLIENT PAUSE 1 WRITE\r\n"}, // the later end and ALL hold
		{1, "PUBLISH x y\r\n"},
	}
	run := func(addr string) []string {
		var rds [2]*bufio.Reader
		var conns [2]net.Conn
		for i := range conns {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second)) // guards against a hang
			conns[i], rds[i] = conn, bufio.NewReader(conn)
		}
		var got []string
		for _, st := range steps {
			start := time.Now()
			conns[st.conn].Write([]byte(st.send))
			line, err := rds[st.conn].ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %q: %v", addr, st.send, err)
			}
			if line == "*1\r\n" { // EXEC's one reply
				rest, _ := rds[st.conn].ReadString('\n')
				line += rest
			}
			switch took := time.Since(start); {
			case took < 150*time.Millisecond:
				got = append(got, "at once "+line)
			case took > 250*time.Millisecond:
				got = append(got, "held "+line)
			default:
				got = append(got, "unclear "+took.String())
			}
		}
		return got
	}
	want, got := run(redisAddr), run(rlAddr)
	for i := range steps {
		if got[i] != want[i] {
			t.Errorf("%d %q: rlserver %q, redis %q", i, steps[i].send, got[i], want[i])
		}
	}
}

// TestClientPauseClose: closing the server ends a pause, so that the commands held
// up let their connections close and Serve return.
func TestClientPauseClose(t *testing.T) {
	srv, addr := testenv.Serve(t, resp.Config{})
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.SetDeadline(time.Now().Add(10 * time.Second)) // guards against a hang
	a.Write([]byte("CLIENT PAUSE 60000 ALL\r\nPING\r\n"))
	rd := bufio.NewReader(a)
	if line, err := rd.ReadString('\n'); line != "+OK\r\n" || err != nil {
		t.Fatalf("CLIENT PAUSE: %q, %v", line, err)
	}
	start := time.Now()
	srv.Close()
	for err == nil {
		_, err = rd.ReadString('\n')
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the held connection closed %v after Close", took)
	}
}
