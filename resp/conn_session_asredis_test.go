package resp_test

// Comparisons with a real redis-server over several connections at once: a script
// of steps, each a write on one connection and the number of replies to read there,
// runs on both servers, and the transcripts must be the same bytes.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// step writes send on connection conn (opened at its first step) and reads replies
// whole RESP replies from it. HELLO's reply names the server's version and the
// connection's id, which differ: of a step that sends HELLO only the first line of
// each reply is kept.
type step struct {
	conn    int
	send    string
	replies int
}

// runSession runs steps against addr and returns what each step read, one line a
// step; a read that fails (nothing more came within the deadline, or the
// connection closed) ends that step's line with the error.
func runSession(t *testing.T, addr string, steps []step) string {
	t.Helper()
	conns := map[int]*bufio.Reader{}
	raw := map[int]net.Conn{}
	defer func() {
		for _, c := range raw {
			c.Close()
		}
	}()
	var out strings.Builder
	for i, st := range steps {
		r, ok := conns[st.conn]
		if !ok {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			raw[st.conn], r = c, bufio.NewReader(c)
			conns[st.conn] = r
		}
		c := raw[st.conn]
		// A deadline guards against a hung test; a missing reply shows as its error.
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := io.WriteString(c, st.send); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%d conn %d %.60q:", i, st.conn, st.send)
		for range st.replies {
			rep, err := readReply(r)
			if err != nil {
				fmt.Fprintf(&out, " %q (then %v)", rep, err)
				break
			}
			if strings.HasPrefix(st.send, "HELLO") {
				rep, _, _ = strings.Cut(rep, "\n")
			}
			fmt.Fprintf(&out, " %q", rep)
		}
		out.WriteByte('\n')
	}
	return out.String()
}

// readReply reads one whole RESP2 or RESP3 reply and returns its bytes.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		b := make([]byte, n+2)
		_, err := io.ReadFull(r, b)
		return line + string(b), err
	case '*', '>', '~', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			rep, err := readReply(r)
			line += rep
			if err != nil {
				return line, err
			}
		}
	}
	return line, nil
}

// compareSession runs steps on both servers and requires the same transcript.
func compareSession(t *testing.T, redisAddr, rlAddr string, steps []step) {
	t.Helper()
	want := runSession(t, redisAddr, steps)
	if got := runSession(t, rlAddr, steps); got != want {
		t.Errorf("rlserver:\n%s\nredis:\n%s", got, want)
	}
}

// TestReplyOffPushesAsRedis: under CLIENT REPLY OFF or SKIP, subscribe and
// unsubscribe confirmations and published messages are still sent, in RESP2 and
// RESP3, as Redis sends pushes (tests/unit/pubsub.tcl, "PubSub messages with CLIENT
// REPLY OFF"); the replies of other commands are not.
func TestReplyOffPushesAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	for _, hello := range []string{"HELLO 2\r\n", "HELLO 3\r\n"} {
		t.Run(hello[:7], func(t *testing.T) {
			compareSession(t, redisAddr, rlAddr, []step{
				{0, hello, 1},
				{0, "CLIENT REPLY OFF\r\nPING\r\nSUBSCRIBE channel\r\n", 1},
				{0, "PSUBSCRIBE ch*\r\nPING\r\nPUBSUB NUMPAT\r\n", 1},
				{1, "PUBLISH channel hello\r\n", 1},
				{0, "", 2},
				{0, "CLIENT REPLY OFF\r\nUNSUBSCRIBE channel\r\n", 1},
				{0, "PUNSUBSCRIBE ch*\r\n", 1},
				{0, "UNSUBSCRIBE\r\nECHO x\r\nSUBSCRIBE a b\r\n", 3},
				{1, "PUBLISH a m\r\n", 1},
				{0, "", 1},
				{0, "UNSUBSCRIBE a b\r\nCLIENT REPLY ON\r\nPING\r\n", 4},
				// SKIP drops the next command's reply only, and none of its pushes.
				{0, "CLIENT REPLY SKIP\r\nSUBSCRIBE c\r\nPING\r\n", 2},
				{0, "CLIENT REPLY SKIP\r\nUNSUBSCRIBE c\r\nPING\r\n", 2},
			})
		})
	}
	// The first SUBSCRIBE of a silenced connection, and a SKIP before it.
	compareSession(t, redisAddr, rlAddr, []step{
		{0, "CLIENT REPLY SKIP\r\nSUBSCRIBE x\r\nPING\r\n", 2},
		{1, "CLIENT REPLY OFF\r\nECHO a\r\nSUBSCRIBE x y\r\nPING\r\n", 2},
		{2, "PUBLISH x m\r\n", 1},
		{0, "", 1},
		{1, "", 1},
		{1, "UNSUBSCRIBE x y\r\nCLIENT REPLY ON\r\n", 3},
	})
}

// TestReplyOffOwnPushesAsRedis: a RESP3 connection under CLIENT REPLY OFF still
// gets the messages it publishes to itself, though not PUBLISH's reply. (With the
// reply, the order is Redis 7.2's, not this 7.0's: TestPushToSelfAfterReply.)
func TestReplyOffOwnPushesAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareSession(t, redisAddr, rlAddr, []step{
		{0, "HELLO 3\r\n", 1},
		{0, "SUBSCRIBE me\r\nCLIENT REPLY OFF\r\nPUBLISH me hi\r\nPUBLISH other x\r\n", 2},
		{0, "CLIENT REPLY ON\r\nPUBLISH me again\r\n", 1},
	})
}

// TestAuthStateAsRedis: a password set or cleared by CONFIG SET applies to each
// command of every connection as in Redis: cleared, the connections made while it
// was set get in, and the bounds on unauthenticated requests lift; connections in
// stay in when a password is set or changed.
func TestAuthStateAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareSession(t, redisAddr, rlAddr, []step{
		{0, "CONFIG SET requirepass foobar\r\n", 1},
		{1, "PING\r\nHELLO 3\r\n", 2},
		{2, "AUTH foobar\r\nPING\r\n", 2},
		{0, "CONFIG SET requirepass \"\"\r\n", 1},
		{1, "PING\r\nHELLO 2\r\n*1100\r\n" + strings.Repeat("$1\r\nx\r\n", 1100), 3},
		{3, "PING\r\n", 1},
		{0, "CONFIG SET requirepass other\r\nPING\r\n", 2},
		{1, "PING\r\n", 1},
		{2, "PING\r\n", 1},
		{3, "PING\r\n", 1},
		{4, "PING\r\nAUTH foobar\r\nAUTH other\r\nPING\r\n", 4},
		{0, "CONFIG SET requirepass \"\"\r\n", 1},
	})
}

// TestSubscribedAsRedis: on a RESP2 connection with subscriptions, a command outside
// (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING, QUIT and RESET is refused after the checks
// every command gets (unknown, arity), named as Redis names it ("client|reply"),
// and its refusal is silenced by CLIENT REPLY OFF as any reply.
func TestSubscribedAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareSession(t, redisAddr, rlAddr, []step{
		{0, "SUBSCRIBE a\r\nCLIENT REPLY ON\r\nFOO\r\nECHO\r\nCLIENT NOPE\r\nCONFIG GET x y\r\nPING\r\n", 7},
		{1, "CLIENT REPLY OFF\r\nSUBSCRIBE b\r\nCLIENT REPLY ON\r\nPING\r\nUNSUBSCRIBE b\r\nCLIENT REPLY ON\r\nPING\r\n", 4},
	})
}
