package resp

import (
	"bufio"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// TestMonitor: a MONITOR connection receives every other command in Redis's format,
// credentials redacted and administrative commands left out; when it closes, the
// server stops feeding it.
func TestMonitor(t *testing.T) {
	ts := startServer(t, Config{})
	mon := watch(t, ts)
	rdb := ts.client(t, 2)
	run(t, rdb, []call{
		{"RL.TOKEN user:1 10 1000", "[1 10 9 0 100]"},
		{"CONFIG GET maxclients", "[maxclients 10000]"}, // admin: not shown
		{"AUTH default pw", "OK"},
		{"ECHO a\"b\\c\x01", "a\"b\\c\x01"},
	})
	br := bufio.NewReader(mon.conn)
	line := regexp.MustCompile(`^\+(\d+)\.(\d{6}) \[0 127\.0\.0\.1:\d+\] (.*)\r\n$`)
	var got []string
	for len(got) < 3 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the feed: %q, %v", l, err)
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a MONITOR line: %q", l)
		}
		if strings.HasPrefix(m[3], `"hello"`) || strings.HasPrefix(m[3], `"client"`) { // go-redis's handshake
			continue
		}
		got = append(got, m[3])
	}
	want := []string{`"RL.TOKEN" "user:1" "10" "1000"`, `"AUTH" "(redacted)" "(redacted)"`, `"ECHO" "a\"b\\c\x01"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("feed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mon.conn.Close()
	poll.Until(t, 10*time.Second, "the watcher to go", func() bool { return ts.mon.n.Load() == 0 })
	run(t, rdb, []call{{"PING", "PONG"}})
}

// TestMonitorSlowWatcher: a watcher that does not read is disconnected once its
// queue passes the bound, and no command waits for it meanwhile.
func TestMonitorSlowWatcher(t *testing.T) {
	ts := startServer(t, Config{})
	ts.mon.maxQueue = 256 << 10
	mon := watch(t, ts) // never read
	mon.conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	r := ts.raw(t)
	arg := strings.Repeat("x", 64<<10)
	begin := time.Now()
	for ts.mon.n.Load() == 1 {
		if time.Since(begin) > 30*time.Second {
			t.Fatal("a watcher that never reads was still fed after 30 s")
		}
		r.send("*2\r\n$4\r\nECHO\r\n$65536\r\n" + arg + "\r\n")
		r.expect("$65536\r\n" + arg + "\r\n")
	}
}

// watch opens a MONITOR connection and waits until the server feeds it.
func watch(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	mon := ts.raw(t)
	mon.send("MONITOR\r\n")
	mon.expect("+OK\r\n")
	poll.Until(t, 10*time.Second, "the watcher", func() bool { return ts.mon.n.Load() == 1 })
	return mon
}
