package resp_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestUnsubscribeThenPublishAsRedis: a PUBLISH sent by one connection after another
// connection's UNSUBSCRIBE was written, its reply not yet read, reaches nobody, as
// pubsub.tcl's "PUBLISH/SUBSCRIBE after UNSUBSCRIBE without arguments" expects (its
// unsubscribe helper reads no reply when given no channel). Redis's one event loop
// reads the two sockets in the order their bytes came; rlserver serves a subscriber
// in a goroutine of its own, which may not have read its UNSUBSCRIBE yet when the
// PUBLISH runs. Repeated, since a lost race shows only now and then.
func TestUnsubscribeThenPublishAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	for _, addr := range []string{redisAddr, rlAddr} {
		sub, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		pub, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		subR, pubR := bufio.NewReader(sub), bufio.NewReader(pub)
		// A deadline guards against a hang, decides nothing.
		sub.SetDeadline(time.Now().Add(30 * time.Second))
		pub.SetDeadline(time.Now().Add(30 * time.Second))
		late := 0
		const runs = 300
		for i := range runs {
			sub.Write([]byte("SUBSCRIBE chan1 chan2 chan3\r\n"))
			readReplies(t, subR, 3*6) // three confirmations of a header and five lines
			sub.Write([]byte("UNSUBSCRIBE\r\n"))
			for _, ch := range []string{"chan1", "chan2", "chan3"} {
				pub.Write([]byte("PUBLISH " + ch + " hello\r\n"))
				line, err := pubR.ReadString('\n')
				if err != nil {
					t.Fatalf("%s: run %d: PUBLISH: %v", addr, i, err)
				}
				if line != ":0\r\n" {
					late++
				}
			}
			// The three confirmations, and any message that slipped in before them.
			got := 0
			for got < 3 {
				head := readReplies(t, subR, 1)
				if head != "*3\r\n" {
					t.Fatalf("%s: run %d: reply %q", addr, i, head)
				}
				if kind := readReplies(t, subR, 2); strings.Contains(kind, "unsubscribe") {
					readReplies(t, subR, 3) // channel and count
					got++
				} else {
					readReplies(t, subR, 4) // channel and message
				}
			}
		}
		if late > 0 {
			t.Errorf("%s (redis %v): %d of %d PUBLISHes after an UNSUBSCRIBE reached the connection",
				addr, addr == redisAddr, late, 3*runs)
		}
	}
}

// readReplies reads n lines and returns them.
func readReplies(t *testing.T, r *bufio.Reader, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		line, err := r.ReadString('\n')
		if err != nil && err != io.EOF {
			t.Fatalf("after %q: %v", b.String(), err)
		}
		b.WriteString(line)
	}
	return b.String()
}
