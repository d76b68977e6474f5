package resp

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// TestPubSub: SUBSCRIBE and PSUBSCRIBE through go-redis in RESP2 and RESP3, PUBLISH
// counting receivers, and a subscriber closed by CLIENT KILL TYPE pubsub.
func TestPubSub(t *testing.T) {
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		ts := startServer(t, Config{})
		rdb := ts.client(t, proto)
		sub := rdb.Subscribe(ctx, "__sentinel__:hello")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the confirmation
			t.Fatalf("RESP%d SUBSCRIBE: %v", proto, err)
		}
		psub := rdb.PSubscribe(ctx, "__sentinel__:*")
		defer psub.Close()
		if _, err := psub.Receive(ctx); err != nil {
			t.Fatalf("RESP%d PSUBSCRIBE: %v", proto, err)
		}
		if n, err := rdb.Publish(ctx, "__sentinel__:hello", "127.0.0.1,26379,abc,0").Result(); n != 2 || err != nil {
			t.Fatalf("RESP%d PUBLISH = %d, %v; want 2", proto, n, err)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil || msg.Channel != "__sentinel__:hello" || msg.Payload != "127.0.0.1,26379,abc,0" {
			t.Fatalf("RESP%d message = %+v, %v", proto, msg, err)
		}
		pmsg, err := psub.ReceiveMessage(ctx)
		if err != nil || pmsg.Pattern != "__sentinel__:*" || pmsg.Payload != "127.0.0.1,26379,abc,0" {
			t.Fatalf("RESP%d pmessage = %+v, %v", proto, pmsg, err)
		}
		if err := sub.Ping(ctx); err != nil {
			t.Errorf("RESP%d PING while subscribed: %v", proto, err)
		}
		if got := do(rdb, "PUBLISH nobody x"); got != "0" {
			t.Errorf("PUBLISH without subscribers = %s", got)
		}
		if got := do(rdb, "CLIENT KILL TYPE pubsub"); got != "2" {
			t.Errorf("RESP%d CLIENT KILL TYPE pubsub = %s, want 2", proto, got)
		}
		poll.Until(t, 10*time.Second, "the subscribers to go", func() bool { return do(rdb, "PUBLISH __sentinel__:hello x") == "0" })
	}
}

// TestPubSubRaw: the exact replies of RESP2 subscriptions, the commands a subscribed
// RESP2 connection may not send, and UNSUBSCRIBE of everything.
func TestPubSubRaw(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	r.send("*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n")
	r.expect("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
	r.send("*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n")
	r.expect("-ERR Can't execute 'exists': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	r.send("*1\r\n$4\r\nPING\r\n")
	r.expect("*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	pub := ts.client(t, 2)
	if got := do(pub, "PUBLISH b hi"); got != "1" {
		t.Fatalf("PUBLISH = %s", got)
	}
	r.expect("*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$2\r\nhi\r\n")
	r.send("*1\r\n$11\r\nUNSUBSCRIBE\r\n")
	got := make([]byte, 2*len("*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"))
	if _, err := r.conn.Read(got); err != nil {
		t.Fatal(err)
	}
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	// No subscription left: the connection serves every command again.
	r.send("*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n")
	buf := make([]byte, 256)
	n, _ := r.conn.Read(buf)
	if !strings.HasSuffix(string(buf[:n]), ":0\r\n") {
		t.Errorf("EXISTS after UNSUBSCRIBE: %q", buf[:n])
	}
}

// TestSentinelTransaction: Sentinel's reconfiguration, as sentinel.c sends it, in one
// MULTI: SLAVEOF, CONFIG REWRITE (an error when run, which does not stop the others),
// CLIENT KILL TYPE normal and pubsub. The other connections close, the caller's stays.
func TestSentinelTransaction(t *testing.T) {
	ctx := context.Background()
	p := startServer(t, Config{})
	ts := startServer(t, Config{})
	other := ts.client(t, 3)
	if err := other.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	sub := ts.client(t, 2).Subscribe(ctx, "__sentinel__:hello")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(p.addr, ":")
	r := ts.raw(t)
	r.send("*1\r\n$5\r\nMULTI\r\n")
	r.expect("+OK\r\n")
	r.send(respCmd("SLAVEOF", host, port) + respCmd("CONFIG", "REWRITE") +
		respCmd("CLIENT", "KILL", "TYPE", "normal") + respCmd("CLIENT", "KILL", "TYPE", "pubsub") + respCmd("EXEC"))
	r.expect("+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n")
	r.expect("*4\r\n+OK\r\n-ERR The server is running without a config file\r\n:")
	// go-redis may hold one more idle connection: at least the one to other was killed.
	if killed := r.line(); killed != "1" && killed != "2" {
		t.Errorf("CLIENT KILL TYPE normal killed %q", killed)
	}
	r.expect(":1\r\n")
	// The replica answers LOADING until its first sync: the transactions below
	// are about MULTI's own rules, so they wait for it.
	waitLinkUp(t, ts.client(t, 3))

	// A command refused when queued discards the transaction.
	r.send(respCmd("MULTI") + respCmd("NOSUCH") + respCmd("PING") + respCmd("EXEC"))
	r.expect("+OK\r\n-ERR unknown command 'NOSUCH', with args beginning with: \r\n+QUEUED\r\n" +
		"-EXECABORT Transaction discarded because of previous errors.\r\n")
	r.send(respCmd("MULTI") + respCmd("PING") + respCmd("DISCARD") + respCmd("EXEC") + respCmd("DISCARD"))
	r.expect("+OK\r\n+QUEUED\r\n+OK\r\n-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n")
	r.send(respCmd("MULTI") + respCmd("MULTI") + respCmd("SUBSCRIBE", "x") + respCmd("DISCARD"))
	r.expect("+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n+OK\r\n")

	// The replica refuses a write when it is queued, as Redis does, and the
	// transaction with it.
	r.send(respCmd("MULTI") + respCmd("RL.FIXED", "k", "5", "1000") + respCmd("EXEC"))
	r.expect("+OK\r\n-" + errReadOnly + "\r\n-" + errExecAbort + "\r\n")

	if err := other.Do(ctx, "PING").Err(); err == nil {
		// go-redis may have redialled: the killed connection must at least be gone.
		if n := strings.Count(do(other, "CLIENT LIST"), "\n"); n > 3 {
			t.Errorf("CLIENT LIST after the kill: %d connections", n)
		}
	}
	if _, err := sub.ReceiveTimeout(ctx, 2*time.Second); err == nil {
		t.Errorf("the subscriber was not killed")
	}
	after := ts.client(t, 3)
	waitLinkUp(t, after)
	if got := do(after, "ROLE"); !strings.HasPrefix(got, "[slave "+host+" "+port+" connected ") {
		t.Errorf("ROLE after the transaction = %s", got)
	}
}

// line reads up to CRLF and returns what came before.
func (r *rawConn) line() string {
	r.t.Helper()
	var b []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(b), "\r\n") {
		if _, err := r.conn.Read(one); err != nil {
			r.t.Fatal(err)
		}
		b = append(b, one[0])
	}
	return strings.TrimSuffix(string(b), "\r\n")
}

// respCmd encodes a command as RESP.
func respCmd(args ...string) string { return string(respCommand(args...)) }

// TestNoMessageAfterUnsubscribe: once a connection has read its UNSUBSCRIBE's
// confirmation, no message of that channel reaches it, however busy the publishers.
// (A publisher that found the subscriber before the UNSUBSCRIBE and wrote after it
// did so; under -race this test caught it in every run.)
func TestNoMessageAfterUnsubscribe(t *testing.T) {
	ts := startServer(t, Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		pub := ts.raw(t)
		pub.conn.SetDeadline(time.Time{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd := bufio.NewReader(pub.conn)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := pub.conn.Write([]byte("PUBLISH ch m\r\n")); err != nil {
					return
				}
				if _, err := rd.ReadString('\n'); err != nil {
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 1000 {
		r := ts.raw(t)
		rd := bufio.NewReader(r.conn)
		r.send("SUBSCRIBE ch\r\n")
		want := "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
		readUntil(t, rd, want)
		r.send("UNSUBSCRIBE ch\r\nPING\r\n")
		readUntil(t, rd, "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n")
		if line, err := rd.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("run %d: after the UNSUBSCRIBE's confirmation: %q, %v", i, line, err)
		}
		r.conn.Close()
	}
}

// readUntil reads rd until what it read ends with want: the messages before it are
// skipped.
func readUntil(t *testing.T, rd *bufio.Reader, want string) {
	t.Helper()
	var got []byte
	for !bytes.HasSuffix(got, []byte(want)) {
		b, err := rd.ReadByte()
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		got = append(got, b)
	}
}
