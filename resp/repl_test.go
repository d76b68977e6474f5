package resp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/store"
)

// replInfo reads one field of INFO replication (or stats), "" if absent.
func replInfo(t testing.TB, rdb *redis.Client, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), "replication", "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// waitLinkUp waits until the replica says its link is up.
func waitLinkUp(t *testing.T, rdb *redis.Client) {
	t.Helper()
	poll.Until(t, 10*time.Second, "master_link_status:up", func() bool { return replInfo(t, rdb, "master_link_status") == "up" })
}

// lockedBuffer is a log destination tests read while servers write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func logTo(b *lockedBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// TestReplication: one primary, two replicas. Writes of every sort on the primary
// show on both; replicas refuse writes and serve reads; INFO and ROLE say who is who;
// REPLICAOF NO ONE promotes a replica, and the other follows it.
func TestReplication(t *testing.T) {
	ctx := context.Background()
	p := startServer(t, Config{})
	r1 := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	r2 := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	pc, c1, c2 := p.client(t, 3), r1.client(t, 3), r2.client(t, 2)
	waitLinkUp(t, c1)
	waitLinkUp(t, c2)

	for i := range 5 {
		key := "token:" + strconv.Itoa(i)
		if err := pc.Do(ctx, "RL.TOKEN", key, 10, 60000, "COST", 4).Err(); err != nil {
			t.Fatal(err)
		}
		for _, rc := range []*redis.Client{c1, c2} {
			begin := time.Now()
			poll.Until(t, 10*time.Second, key+" on a replica", func() bool {
				return strings.HasPrefix(format(rc.Do(ctx, "RL.TOKEN", key, 10, 60000, "PEEK").Result()), "[1 10 5 0 ")
			})
			t.Logf("%s on a replica after %v", key, time.Since(begin))
		}
	}
	for _, cmd := range []string{
		"RL.FIXED f 5 86400000", "RL.LOG l 5 60000", "RL.ALL FIXED a1 5 86400000 TOKEN a2 5 60000",
		"RL.ACQUIRE lease 3 60000 ID w1", "RL.RESET token:0", "DEL token:1",
	} {
		if got := do(pc, cmd); strings.HasPrefix(got, "ERR") {
			t.Fatalf("%s on the primary: %s", cmd, got)
		}
	}
	for _, rc := range []*redis.Client{c1, c2} {
		poll.Until(t, 10*time.Second, "the writes on a replica", func() bool {
			return do(rc, "EXISTS f l a1 a2 lease token:0 token:1 token:2") == "6"
		})
		run(t, rc, []call{
			{"TYPE lease", "rl.lease"},
			{"RL.FIXED f 5 86400000", errReadOnly},
			{"GCRA g 5 10 60", errReadOnly},
			{"CL.THROTTLE g 5 10 60", errReadOnly},
			{"RL.ALL FIXED a1 5 86400000 TOKEN a2 5 60000", errReadOnly},
			{"RL.ACQUIRE lease 3 60000", errReadOnly},
			{"RL.RELEASE lease w1", errReadOnly},
			{"DEL f", errReadOnly},
			{"FLUSHALL", errReadOnly},
			{"DBSIZE", "8"},
			{"EXISTS f", "1"},
		})
		if got := do(rc, "RL.FIXED f 5 86400000 PEEK"); !strings.HasPrefix(got, "[1 5 3 0 ") { // PEEK answers as if it took one
			t.Errorf("RL.FIXED ... PEEK on a replica = %s", got)
		}
		if got := do(rc, "RL.ALL FIXED a1 5 86400000 TOKEN a2 5 60000 PEEK"); !strings.HasPrefix(got, "[1 ") {
			t.Errorf("RL.ALL ... PEEK on a replica = %s", got)
		}
		if got := do(rc, "HELLO 3"); !strings.Contains(got, "role:replica") {
			t.Errorf("HELLO on a replica = %s", got)
		}
		if got := do(rc, "SCAN 0 COUNT 1000"); !strings.Contains(got, "lease") {
			t.Errorf("SCAN on a replica = %s", got)
		}
		if got := do(rc, "ROLE"); got != "[slave 127.0.0.1 "+strings.Split(p.addr, ":")[1]+" connected "+
			replInfo(t, rc, "slave_repl_offset")+"]" {
			t.Errorf("ROLE on a replica = %s", got)
		}
		for field, want := range map[string]string{"role": "slave", "master_host": "127.0.0.1",
			"master_port": strings.Split(p.addr, ":")[1], "slave_read_only": "1", "slave_priority": "100"} {
			if got := replInfo(t, rc, field); got != want {
				t.Errorf("replica INFO %s = %q, want %q", field, got, want)
			}
		}
	}
	if got := replInfo(t, pc, "connected_slaves"); got != "2" {
		t.Errorf("primary connected_slaves = %s", got)
	}
	for _, n := range []string{"slave0", "slave1"} {
		if got := replInfo(t, pc, n); !strings.HasPrefix(got, "ip=127.0.0.1,port=") || !strings.Contains(got, "state=online") {
			t.Errorf("primary %s = %q", n, got)
		}
	}
	if got := do(pc, "ROLE"); !strings.HasPrefix(got, "[master "+replInfo(t, pc, "master_repl_offset")+" [[127.0.0.1 ") {
		t.Errorf("ROLE on the primary = %s", got)
	}
	if got := replInfo(t, pc, "sync_full"); got != "2" {
		t.Errorf("primary sync_full = %s, want 2", got)
	}

	// A flush on the primary empties the replicas.
	do(pc, "FLUSHALL")
	do(pc, "RL.FIXED after 5 86400000")
	for _, rc := range []*redis.Client{c1, c2} {
		poll.Until(t, 10*time.Second, "the flush on a replica", func() bool { return do(rc, "DBSIZE") == "1" })
	}

	// Promotion: r1 becomes a primary, r2 follows it.
	run(t, c1, []call{{"REPLICAOF NO ONE", "OK"}})
	if got := do(c1, "RL.FIXED promoted 5 86400000"); !strings.HasPrefix(got, "[1 5 4 0 ") {
		t.Errorf("a write on the promoted replica = %s", got)
	}
	if got := replInfo(t, c1, "role"); got != "master" {
		t.Errorf("promoted role = %s", got)
	}
	run(t, c2, []call{{"REPLICAOF " + strings.Replace(r1.addr, ":", " ", 1), "OK"}})
	poll.Until(t, 10*time.Second, "r2 following r1", func() bool { return do(c2, "EXISTS promoted after") == "2" })
	// r2 had applied no more of p's stream than r1: it continues from r1's copy of it.
	if got := replInfo(t, c1, "sync_partial_ok"); got != "1" {
		t.Errorf("r1's sync_partial_ok after r2 followed it = %s, want 1 (full: %s)", got, replInfo(t, c1, "sync_full"))
	}
	if got := replInfo(t, c1, "master_replid2"); got != replInfo(t, pc, "master_replid") {
		t.Errorf("r1's master_replid2 = %s, want p's id %s", got, replInfo(t, pc, "master_replid"))
	}
	if got := do(c2, "REPLICAOF "+strings.Replace(r1.addr, ":", " ", 1)); got != "OK Already connected to specified master" {
		t.Errorf("REPLICAOF again = %s", got)
	}
	do(c1, "RL.TOKEN more 5 1000")
	poll.Until(t, 10*time.Second, "r1's new write on r2", func() bool { return do(c2, "EXISTS more") == "1" })
	poll.Until(t, 10*time.Second, "the old primary to lose its replicas", func() bool { return replInfo(t, pc, "connected_slaves") == "0" })
}

// proxy forwards loopback connections to a server until cut, which closes them
// and refuses new ones until restored.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	open   bool
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{ln: ln, target: target, open: true}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			px.mu.Lock()
			if !px.open {
				px.mu.Unlock()
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				px.mu.Unlock()
				c.Close()
				continue
			}
			px.conns = append(px.conns, c, s)
			px.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); px.cut() })
	return px
}

func (px *proxy) cut() {
	px.mu.Lock()
	defer px.mu.Unlock()
	px.open = false
	for _, c := range px.conns {
		c.Close()
	}
	px.conns = nil
}

func (px *proxy) restore() {
	px.mu.Lock()
	px.open = true
	px.mu.Unlock()
}

// TestReplicaResync: a replica cut off for a second continues from the backlog
// (sync_partial_ok), with the writes made meanwhile; cut off while more was written
// than the backlog holds, it syncs in full, and ends equal all the same.
func TestReplicaResync(t *testing.T) {
	ctx := context.Background()
	p := startServer(t, Config{Config: core.Config{ReplBacklogSize: 16 << 10}})
	px := startProxy(t, p.addr)
	r := startServer(t, Config{Config: core.Config{ReplicaOf: px.ln.Addr().String()}})
	pc, rc := p.client(t, 3), r.client(t, 3)
	waitLinkUp(t, rc)
	do(pc, "RL.FIXED before 5 86400000")
	poll.Until(t, 10*time.Second, "before", func() bool { return do(rc, "EXISTS before") == "1" })

	px.cut()
	poll.Until(t, 10*time.Second, "link down", func() bool { return replInfo(t, rc, "master_link_status") == "down" })
	for i := range 50 {
		do(pc, fmt.Sprintf("RL.TOKEN during:%d 5 60000", i))
	}
	time.Sleep(time.Second)
	if got := do(rc, "EXISTS before"); got != "1" {
		t.Errorf("a replica cut off lost its keys: EXISTS = %s", got)
	}
	if since, _ := strconv.Atoi(replInfo(t, rc, "master_link_down_since_seconds")); since < 1 {
		t.Errorf("master_link_down_since_seconds = %d after a second", since)
	}
	px.restore()
	waitLinkUp(t, rc)
	poll.Until(t, 10*time.Second, "the writes made while cut off", func() bool { return do(rc, "DBSIZE") == "51" })
	if got := replInfo(t, pc, "sync_partial_ok"); got != "1" {
		t.Errorf("sync_partial_ok = %s, want 1 (full syncs: %s)", got, replInfo(t, pc, "sync_full"))
	}

	// More than the backlog's 16 KiB while cut off: a full sync.
	px.cut()
	poll.Until(t, 10*time.Second, "link down", func() bool { return replInfo(t, rc, "master_link_status") == "down" })
	pipe := pc.Pipeline()
	for i := range 2000 {
		pipe.Do(ctx, "RL.TOKEN", fmt.Sprintf("big:%d", i), 5, 60000)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	px.restore()
	poll.Until(t, 10*time.Second, "the full sync", func() bool { return do(rc, "DBSIZE") == "2051" })
	if got := replInfo(t, pc, "sync_full"); got != "2" {
		t.Errorf("sync_full = %s, want 2", got)
	}
	if got := replInfo(t, pc, "sync_partial_err"); got != "1" {
		t.Errorf("sync_partial_err = %s, want 1", got)
	}

	// CLIENT KILL TYPE master drops the link; it continues at once.
	if got := do(rc, "CLIENT KILL TYPE master"); got != "1" {
		t.Errorf("CLIENT KILL TYPE master = %s", got)
	}
	do(pc, "RL.FIXED killed 5 86400000")
	poll.Until(t, 10*time.Second, "the write after the kill", func() bool { return do(rc, "EXISTS killed") == "1" })
	poll.Until(t, 10*time.Second, "a second partial resync", func() bool { return replInfo(t, pc, "sync_partial_ok") == "2" })
}

// TestReplicaEqualsPrimaryRandom: 40k random writes (1M in the process test, ha_test.go) of every algorithm, pipelined
// from several connections, then the replica and the primary answer the same for every
// key (TYPE, PTTL, PEEK), both clocks frozen at the same time.
func TestReplicaEqualsPrimaryRandom(t *testing.T) {
	ctx := context.Background()
	p := startServer(t, Config{EnableDebugCommand: true})
	r := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}, EnableDebugCommand: true})
	pc, rc := p.client(t, 3), r.client(t, 3)
	waitLinkUp(t, rc)
	const keys, writes, conns = 5000, 40_000, 4
	cmdFor := func(k int) []any {
		key := "k" + strconv.Itoa(k)
		switch k % 7 {
		case 0:
			return []any{"RL.FIXED", key, 20, 86400000}
		case 1:
			return []any{"RL.SLIDE", key, 20, 60000}
		case 2:
			return []any{"RL.LOG", key, 20, 60000}
		case 3:
			return []any{"RL.TOKEN", key, 20, 60000}
		case 4:
			return []any{"RL.GCRA", key, 20, 60000}
		case 5:
			return []any{"RL.LEAKY", key, 20, 60000, "QUEUE", 5}
		default:
			return []any{"CL.THROTTLE", key, 20, 20, 60}
		}
	}
	var wg sync.WaitGroup
	for g := range conns {
		wg.Go(func() {
			pipe := pc.Pipeline()
			for i := range writes / conns {
				k := (i*7919 + g*104729) % keys
				if i%50 == 0 {
					pipe.Do(ctx, "DEL", "k"+strconv.Itoa(k))
				} else {
					pipe.Do(ctx, cmdFor(k)...)
				}
				if pipe.Len() == 500 {
					if _, err := pipe.Exec(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
			pipe.Exec(ctx)
		})
	}
	wg.Wait()
	poll.Until(t, 10*time.Second, "the replica to catch up", func() bool {
		return replInfo(t, rc, "slave_repl_offset") == replInfo(t, pc, "master_repl_offset")
	})
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	do(pc, "DEBUG CLOCK SET "+now)
	do(rc, "DEBUG CLOCK SET "+now)
	if a, b := do(pc, "DBSIZE"), do(rc, "DBSIZE"); a != b || a == "0" {
		t.Fatalf("DBSIZE primary %s, replica %s", a, b)
	}
	var queries [][]any
	for k := range keys {
		key := "k" + strconv.Itoa(k)
		queries = append(queries, []any{"TYPE", key}, []any{"PTTL", key})
		if k%7 != 6 { // CL.THROTTLE has no PEEK
			queries = append(queries, append(cmdFor(k), "PEEK"))
		}
	}
	answers := func(rdb *redis.Client) []string {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(queries))
		for i, q := range queries {
			cmds[i] = pipe.Do(ctx, q...)
		}
		pipe.Exec(ctx)
		out := make([]string, len(cmds))
		for i, c := range cmds {
			out[i] = format(c.Result())
		}
		return out
	}
	want, got := answers(pc), answers(rc)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v: primary %s, replica %s", queries[i], want[i], got[i])
		}
	}
}

// fakePrimary accepts one replica at a time and answers RLSYNC with what reply writes.
func fakePrimary(t *testing.T, reply func(w io.Writer)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "RLSYNC") || strings.Contains(line, "RLSYNC") {
						reply(c)
						io.Copy(io.Discard, br)
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// chunked is a snapshot as a primary streams it: chunks, then an empty one.
func chunked(snap []byte) []byte {
	var out []byte
	out = binary.LittleEndian.AppendUint32(out, uint32(len(snap)))
	out = append(out, snap...)
	return binary.LittleEndian.AppendUint32(out, 0)
}

// TestReplicaFaults: a primary that does not answer, that is plain Redis, that sends a
// corrupt snapshot or a corrupt frame, a REPLICAOF to itself, a wrong -masterauth: the
// replica logs why, says master_link_status:down, keeps serving reads, and applies
// nothing of what was bad.
func TestReplicaFaults(t *testing.T) {
	snapStore, _ := store.New(store.Config{})
	now := time.Now().UnixMicro()
	snapStore.Do([]byte("good"), algo.Request{Kind: algo.KindFixed, Limit: 5, Window: 60_000_000, Cost: 1}, now)
	var snap bytes.Buffer
	snapStore.WriteSnapshot(&snap, now)

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	for _, tc := range []struct {
		name   string
		target func(self string) string
		logs   string
		keys   string // DBSIZE after
	}{
		{"unreachable", func(string) string { return deadAddr }, "connection refused", "1"},
		{"itself", func(self string) string { return self }, "chained replication is not supported", "1"},
		{"plain redis", func(string) string {
			return fakePrimary(t, func(w io.Writer) {
				io.WriteString(w, "-ERR unknown command 'RLSYNC', with args beginning with: '?' '-1' '0' \r\n")
			})
		}, "is not an rlserver", "1"},
		{"corrupt snapshot", func(string) string {
			bad := bytes.Clone(snap.Bytes())
			bad[len(bad)-30] ^= 0xff
			return fakePrimary(t, func(w io.Writer) {
				io.WriteString(w, "+FULLRESYNC "+strings.Repeat("a", 40)+" 0\r\n")
				w.Write(chunked(bad))
			})
		}, "snapshot is corrupt", "0"},
		{"corrupt frame", func(string) string {
			return fakePrimary(t, func(w io.Writer) {
				io.WriteString(w, "+FULLRESYNC "+strings.Repeat("a", 40)+" 0\r\n")
				w.Write(chunked(snap.Bytes()))
				body := []byte{0, 3, 'b', 'a', 'd'} // a deletion
				var head [4 + 8 + 8]byte            // a frame's length, offset and checksum
				binary.LittleEndian.PutUint32(head[:], uint32(len(body)))
				binary.LittleEndian.PutUint64(head[12:], 12345) // wrong checksum
				w.Write(append(head[:], body...))
			})
		}, "checksum mismatch", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			r := startServer(t, Config{Config: core.Config{Logger: logTo(&logs)}, EnableDebugCommand: true})
			rc := r.client(t, 3)
			do(rc, "RL.FIXED mine 5 86400000")
			if got := do(rc, "REPLICAOF "+strings.Replace(tc.target(r.addr), ":", " ", 1)); got != "OK" {
				t.Fatalf("REPLICAOF = %s", got)
			}
			poll.Until(t, 10*time.Second, "the error in the log", func() bool { return strings.Contains(logs.String(), tc.logs) })
			if got := replInfo(t, rc, "master_link_status"); got != "down" {
				t.Errorf("master_link_status = %s", got)
			}
			// Between two LOADING moments of a link that retries: the keys and PING.
			poll.Until(t, 10*time.Second, "DBSIZE "+tc.keys, func() bool { return do(rc, "DBSIZE") == tc.keys })
			poll.Until(t, 10*time.Second, "PONG", func() bool { return do(rc, "PING") == "PONG" })
			if got := do(rc, "RL.FIXED x 5 86400000"); got != errReadOnly && got != errLoading {
				t.Errorf("a write = %s", got)
			}
			// A link that retries loads again and again for a moment (LOADING), as Redis
			// refuses REPLICAOF then.
			poll.Until(t, 10*time.Second, "REPLICAOF NO ONE", func() bool { return do(rc, "REPLICAOF NO ONE") == "OK" })
			if got := do(rc, "RL.FIXED x 5 86400000 COST 5"); !strings.HasPrefix(got, "[1 5 0 0 ") {
				t.Errorf("a write after REPLICAOF NO ONE = %s", got)
			}
			if strings.Contains(logs.String(), "panic") {
				t.Errorf("a panic: %s", logs.String())
			}
		})
	}
}

// TestReplicaAuth: a primary with -requirepass takes a replica with the right
// -masterauth and refuses one with a wrong one.
func TestReplicaAuth(t *testing.T) {
	p := startServer(t, Config{RequirePass: "s3cret"})
	good := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr, MasterAuth: "s3cret"}})
	var logs lockedBuffer
	bad := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr, MasterAuth: "wrong", Logger: logTo(&logs)}})
	waitLinkUp(t, good.client(t, 3))
	poll.Until(t, 10*time.Second, "the refusal", func() bool { return strings.Contains(logs.String(), "AUTH with -masteruser/-masterauth refused") })
	if got := replInfo(t, bad.client(t, 3), "master_link_status"); got != "down" {
		t.Errorf("master_link_status with a wrong password = %s", got)
	}
}

// TestReplicaACLUser: a primary whose default user is off takes a replica logged
// in as an ACL user of the replication commands alone (-masteruser with
// -masterauth, as Redis's masteruser), and refuses one without the user.
func TestReplicaACLUser(t *testing.T) {
	p := startServer(t, Config{Users: directives("user default off", "user repl on >rp +rlsync +replconf",
		"user admin on >ap ~* &* +@all")})
	good := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr, MasterUser: "repl", MasterAuth: "rp"}})
	var logs lockedBuffer
	bad := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr, MasterAuth: "rp", Logger: logTo(&logs)}})
	waitLinkUp(t, good.client(t, 3))
	admin := p.userClient(t, 3, "admin", "ap")
	if got := do(admin, "RL.FIXED k 5 60000"); !strings.HasPrefix(got, "[1 5 4 0 ") {
		t.Fatalf("RL.FIXED as admin: %s", got)
	}
	poll.Until(t, 10*time.Second, "k on the replica", func() bool { return do(good.client(t, 3), "EXISTS k") == "1" })
	poll.Until(t, 10*time.Second, "the refusal", func() bool {
		return strings.Contains(logs.String(), "AUTH with -masteruser/-masterauth refused by the primary: -WRONGPASS")
	})
	if got := replInfo(t, bad.client(t, 3), "master_link_status"); got != "down" {
		t.Errorf("master_link_status without -masteruser = %s", got)
	}
	if e := p.aclLog.Entries(10); len(e) != 1 || e[0].Reason != "auth" || e[0].Username != "default" {
		t.Errorf("ACL LOG: %+v, want the one failed AUTH of the default user", e)
	}
}

// TestPSyncRefused: a Redis replica's PSYNC and SYNC get an error that says why.
func TestPSyncRefused(t *testing.T) {
	rc := startServer(t, Config{}).client(t, 2)
	run(t, rc, []call{{"PSYNC ? -1", errRedisReplica}, {"SYNC", errRedisReplica}})
}
