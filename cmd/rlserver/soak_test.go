package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The soak test runs the built binary on loopback under many connections and a mix
// of valid, invalid, garbage and half-sent requests, in two rounds with a pause for
// the keys to expire in between. It checks that the server stays up, that its RSS
// after the second round's keys expired is no larger than after the first's (flat,
// not growing), and that no hot key allowed more than its limit admits over the
// whole run. `make soak` runs the full size (RLSERVER_SOAK=1: 2,000 connections, a
// million commands, at most ~2 minutes); plain go test runs the same code small.

// soakSize is how big a soak run is.
type soakSize struct {
	conns    int           // concurrent connections
	commands int           // commands over both rounds, garbage connections included
	limit    time.Duration // each round stops here, whatever it has sent
}

func soakConfig() soakSize {
	if os.Getenv("RLSERVER_SOAK") == "1" {
		return soakSize{conns: 2000, commands: 1_000_000, limit: 50 * time.Second}
	}
	return soakSize{conns: 50, commands: 20_000, limit: 10 * time.Second}
}

// hotKinds are the limiters hammered on shared keys, each 10 per second, with the
// most a key can allow in t seconds, its burst plus its refill (CL.THROTTLE's
// max_burst 9 is a burst of 10). A fixed window or a sliding window's current count
// never passes the limit within one aligned window, and t seconds touch at most
// ⌊t⌋+2 of them.
var hotKinds = []struct {
	args  string // after the key
	bound func(t float64) int64
}{
	{"RL.TOKEN %s 10 1000", func(t float64) int64 { return 10 + int64(math.Ceil(10*t)) }},
	{"RL.GCRA %s 10 1000", func(t float64) int64 { return 10 + int64(math.Ceil(10*t)) }},
	{"CL.THROTTLE %s 9 10 1", func(t float64) int64 { return 10 + int64(math.Ceil(10*t)) }},
	{"RL.FIXED %s 10 1000", func(t float64) int64 { return 10 * (int64(t) + 2) }},
	{"RL.SLIDE %s 10 1000", func(t float64) int64 { return 10 * (int64(t) + 2) }},
}

const hotKeysPerKind = 50

// soakStats are the totals over all workers.
type soakStats struct {
	commands  atomic.Int64
	garbage   atomic.Int64 // garbage or half-sent connections
	errors    atomic.Int64 // error replies, all to commands meant to fail
	allowed   [5][hotKeysPerKind]atomic.Int64
	failure   atomic.Pointer[string]
	fdLimited atomic.Int64 // workers that could not connect
}

func (s *soakStats) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.failure.CompareAndSwap(nil, &msg)
}

func TestSoak(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("the soak test reads RSS from /proc (Linux)")
	}
	size := soakConfig()
	raiseFileLimit(t, size.conns*2+1000)
	bin := buildBinary(t, "")
	srv := startBinary(t, bin, "-addr", "127.0.0.1:0")

	var st soakStats
	start := time.Now()
	var rss [2]int64
	for round := range 2 {
		soakRound(srv.addr, size, round, &st)
		if f := st.failure.Load(); f != nil {
			t.Fatalf("round %d: %s", round, *f)
		}
		// Every key's state is fresh within a second; the server's ticker removes it.
		waitKeys(t, srv.addr, 0, 10*time.Second)
		rss[round] = srv.rss(t)
		t.Logf("round %d: %d commands so far, %d garbage connections, RSS %.1f MB after expiry",
			round, st.commands.Load(), st.garbage.Load(), float64(rss[round])/(1<<20))
	}
	elapsed := time.Since(start).Seconds()
	if srv.exited() {
		t.Fatal("server exited")
	}
	if got := ping(t, srv.addr); got != "+PONG\r\n" {
		t.Fatalf("PING after the soak: %q", got)
	}
	// Flat: a second round of the same load leaves no more behind than the first
	// (slack for the heap's pacing and the scavenger's timing).
	if rss[1] > rss[0]+rss[0]/4+8<<20 {
		t.Errorf("RSS grew from %d to %d bytes between rounds", rss[0], rss[1])
	}
	var total, most, mostBound int64
	for k, hk := range hotKinds {
		bound := hk.bound(elapsed)
		for i := range hotKeysPerKind {
			n := st.allowed[k][i].Load()
			total += n
			if n > bound {
				t.Errorf("%s key %d allowed %d in %.1f s, more than %d", strings.Fields(hk.args)[0], i, n, elapsed, bound)
			}
			if float64(n)/float64(bound) > float64(most)/float64(max(mostBound, 1)) {
				most, mostBound = n, bound
			}
		}
	}
	t.Logf("%d commands (%d errors, %d garbage connections) on %d connections in %.1f s; "+
		"hot keys allowed %d in all, the fullest %d of %d allowed; RSS %.1f MB then %.1f MB",
		st.commands.Load(), st.errors.Load(), st.garbage.Load(), size.conns, elapsed,
		total, most, mostBound, float64(rss[0])/(1<<20), float64(rss[1])/(1<<20))
	if n := st.fdLimited.Load(); n > 0 {
		t.Errorf("%d workers could not connect", n)
	}
}

// soakRound runs half the commands over size.conns connections, or until size.limit.
func soakRound(addr string, size soakSize, round int, st *soakStats) {
	deadline := time.Now().Add(size.limit)
	perConn := size.commands / 2 / size.conns
	var wg sync.WaitGroup
	for w := range size.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakWorker(addr, uint64(round)<<32|uint64(w), perConn, deadline, st)
		}()
	}
	wg.Wait()
}

// batch is the commands of one pipeline and what each reply must be.
type batch struct {
	buf  bytes.Buffer
	want []replyWant
}

type replyWant struct {
	kind, key int // a hot key's counter, kind -1 for none
	err       bool
}

func soakWorker(addr string, id uint64, commands int, deadline time.Time, st *soakStats) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		st.fdLimited.Add(1)
		return
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(id, 7))
	r := bufio.NewReader(conn)
	var b batch
	for sent := 0; sent < commands && time.Now().Before(deadline); {
		conn.SetDeadline(time.Now().Add(30 * time.Second)) // a hung server, not a result
		if rng.IntN(50) == 0 {
			soakGarbage(addr, rng)
			st.garbage.Add(1)
			st.commands.Add(1)
			sent++
			continue
		}
		b.buf.Reset()
		b.want = b.want[:0]
		for range min(16, commands-sent) {
			b.add(rng, id, sent)
			sent++
		}
		if _, err := conn.Write(b.buf.Bytes()); err != nil {
			st.fail("write: %v", err)
			return
		}
		for _, w := range b.want {
			line, err := readSoakReply(r)
			if err != nil {
				st.fail("read: %v", err)
				return
			}
			st.commands.Add(1)
			if isErr := line[0] == '-'; isErr != w.err {
				st.fail("unexpected reply %q (error expected: %v)", line, w.err)
				return
			}
			if w.err {
				st.errors.Add(1)
				continue
			}
			if w.kind >= 0 {
				allowed := line[5] == '1' // "*5\r\n:1\r\n..."; CL.THROTTLE answers 0 when allowed
				if hotKinds[w.kind].args[:2] == "CL" {
					allowed = !allowed
				}
				if allowed {
					st.allowed[w.kind][w.key].Add(1)
				}
			}
		}
	}
}

// add appends one command: 60% a hot key, 30% a key of its own that is fresh within
// 200 ms, 10% a command that must fail.
func (b *batch) add(rng *rand.Rand, id uint64, n int) {
	var line string
	want := replyWant{kind: -1}
	switch p := rng.IntN(10); {
	case p < 6:
		want.kind, want.key = rng.IntN(len(hotKinds)), rng.IntN(hotKeysPerKind)
		line = fmt.Sprintf(hotKinds[want.kind].args, fmt.Sprintf("hot:%d:%d", want.kind, want.key))
	case p < 9:
		cmd := [...]string{"RL.TOKEN", "RL.FIXED", "RL.LOG", "RL.GCRA", "RL.LEAKY"}[rng.IntN(5)]
		line = fmt.Sprintf("%s own:%x:%d 5 200", cmd, id, n)
	default:
		want.err = true
		line = [...]string{"RL.TOKEN k -1 1000", "RL.GCRA k 5", "NOSUCH x", "RL.LOG k 5 1000 COST", "CL.THROTTLE k 1 1 0"}[rng.IntN(5)]
	}
	words := strings.Fields(line)
	fmt.Fprintf(&b.buf, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(&b.buf, "$%d\r\n%s\r\n", len(w), w)
	}
	b.want = append(b.want, want)
}

// soakGarbage opens a connection, sends random bytes, a protocol error or half a
// request, and goes away without waiting for an answer.
func soakGarbage(addr string, rng *rand.Rand) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	defer conn.Close()
	var payload []byte
	switch rng.IntN(3) {
	case 0:
		payload = make([]byte, 1+rng.IntN(256))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
	case 1:
		payload = []byte([...]string{"*-5\r\n", "*2\r\n$abc\r\n", "$5\r\nhello\r\n", "*1\r\n$999999999999\r\n"}[rng.IntN(4)])
	default:
		full := "*4\r\n$8\r\nRL.TOKEN\r\n$6\r\nhalf:1\r\n$2\r\n10\r\n$4\r\n1000\r\n"
		payload = []byte(full[:1+rng.IntN(len(full)-1)])
	}
	conn.Write(payload)
}

// readSoakReply reads one reply of the kinds the soak expects: a line, or an array
// of integer lines, returned whole.
func readSoakReply(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	if err != nil || line[0] != '*' {
		return line, err
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
	if err != nil {
		return line, err
	}
	for range n {
		more, err := r.ReadBytes('\n')
		if err != nil {
			return line, err
		}
		line = append(line, more...)
	}
	return line, nil
}

// binaryServer is rlserver running as a child process.
type binaryServer struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

var listening = regexp.MustCompile(`msg="rlserver listening" addr=(\S+)`)

// startBinary runs bin with args, waits for its "listening" log line and kills it
// when the test ends.
func startBinary(t *testing.T, bin string, args ...string) *binaryServer {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &binaryServer{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	lines := bufio.NewScanner(stderr)
	addr := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				addr <- m[1]
				continue
			}
			t.Log("server: " + lines.Text())
		}
		cmd.Wait()
		close(s.done)
	}()
	select {
	case s.addr = <-addr:
	case <-s.done:
		t.Fatal("server exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start listening")
	}
	return s
}

func (s *binaryServer) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// rss reads the server's resident set size from /proc.
func (s *binaryServer) rss(t *testing.T) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// command sends one inline command on a new connection and returns the raw reply line.
func command(t *testing.T, addr, line string) string {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("server not answering: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, line+"\r\n")
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return reply
}

func ping(t *testing.T, addr string) string { return command(t, addr, "PING") }

// waitKeys waits, within a bound, until DBSIZE is at most n.
func waitKeys(t *testing.T, addr string, n int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for {
		got := command(t, addr, "DBSIZE")
		if k, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(got, ":"))); err == nil && k <= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE still %q after %v", got, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
