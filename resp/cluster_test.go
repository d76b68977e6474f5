package resp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
)

// The test topology: this server is node 0 with slots 0-8191 ("bar" hashes to
// 5061, "{bar}..." too); node 1, which nobody runs, has 8192-16383 ("foo": 12182,
// "{a}": 15495). The ids are printf host:port | sha1sum.
const (
	id7000 = "866a95987cd8f228c2a99d31f2928d64ebbdcd34"
	id7001 = "73e424d53fc3edc27f2c55eb2808f7bdd833f129"
)

func testTopology(t testing.TB) *cluster.Topology {
	t.Helper()
	topo, err := cluster.New([]string{"127.0.0.1:7000@0-8191", "127.0.0.1:7001@8192-16383"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestClusterRedirect: a command runs only when its keys hash to one slot of
// this node; arity and authentication errors come first, keyless commands run
// here, and RL.ALL's keys are found among its rules.
func TestClusterRedirect(t *testing.T) {
	ts := startServer(t, Config{Cluster: testTopology(t)})
	ts.core.SetClock(t0)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.FIXED bar 2 60000", "[1 2 1 0 60000]"},
		{"RL.FIXED foo 2 60000", "MOVED 12182 127.0.0.1:7001"},
		{"RL.TOKEN {a}x 2 60000", "MOVED 15495 127.0.0.1:7001"},
		{"CL.THROTTLE foo 1 1 1", "MOVED 12182 127.0.0.1:7001"},
		{"RL.FIXED foo", "ERR wrong number of arguments for 'rl.fixed' command"},
		{"RL.FIXED bar x 60000", "ERR limit must be an integer between 1 and 1000000000"},
		{"RL.FIXED {bar}1 2 60000", "[1 2 1 0 60000]"},
		{"EXISTS bar {bar}1 {bar}2", "2"},
		{"EXISTS bar foo", "CROSSSLOT Keys in request don't hash to the same slot"},
		{"DEL foo bar", "CROSSSLOT Keys in request don't hash to the same slot"},
		{"DEL {a}1 {a}2", "MOVED 15495 127.0.0.1:7001"},
		{"UNLINK {bar}1 {bar}1", "1"},
		{"TYPE foo", "MOVED 12182 127.0.0.1:7001"},
		{"PTTL foo", "MOVED 12182 127.0.0.1:7001"},
		{"MEMORY USAGE foo", "MOVED 12182 127.0.0.1:7001"},
		{"RL.RESET foo", "MOVED 12182 127.0.0.1:7001"},
		{"RL.ALL FIXED {bar}1 1 1000 TOKEN {bar}2 1 1000", "[1 [1 1 0 0 1000] [1 1 0 0 1000]]"},
		{"RL.ALL FIXED {a}1 1 1000 TOKEN {a}2 1 1000", "MOVED 15495 127.0.0.1:7001"},
		{"RL.ALL FIXED bar 1 1000 TOKEN {bar}2 1 1000 GCRA foo 1 1000", "CROSSSLOT Keys in request don't hash to the same slot"},
		{"RL.ALL NOPE foo 1 1000", "ERR unknown algorithm 'NOPE' in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"},
		{"RL.ALL FIXED foo 0 1000", "ERR limit must be an integer between 1 and 1000000000"},
		{"CLUSTER KEYSLOT foo", "12182"},
		{"DBSIZE", "3"}, // bar, {bar}1 (again, by RL.ALL) and {bar}2
		{"KEYS {bar}2", "[{bar}2]"},
		{"PING", "PONG"},
		{"READONLY", "OK"},
		{"READWRITE", "OK"},
		{"CONFIG GET cluster-enabled", "{cluster-enabled:yes}"},
	})
	if info := do(rdb, "INFO server"); !strings.Contains(info, "\r\nredis_mode:cluster\r\n") {
		t.Errorf("INFO server lacks redis_mode:cluster:\n%s", info)
	}
	if hello := do(rdb, "HELLO 3"); !strings.Contains(hello, " mode:cluster ") {
		t.Errorf("HELLO 3 = %s, want mode:cluster", hello)
	}
}

// TestClusterNoAuth: a connection that has not authenticated learns nothing of
// the topology from a MOVED.
func TestClusterNoAuth(t *testing.T) {
	ts := startServer(t, Config{Cluster: testTopology(t), RequirePass: "pw"})
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2})
	defer rdb.Close()
	run(t, rdb, []call{{"RL.FIXED foo 2 60000", "NOAUTH Authentication required."}})
}

// TestClusterDisabled: standalone, every cluster command answers Redis's error and
// keys are never redirected.
func TestClusterDisabled(t *testing.T) {
	ts := startServer(t, Config{})
	rdb := ts.client(t, 3)
	var calls []call
	for _, cmd := range []string{"CLUSTER SLOTS", "CLUSTER SHARDS", "CLUSTER NODES", "CLUSTER INFO",
		"CLUSTER MYID", "CLUSTER KEYSLOT foo", "READONLY", "READWRITE"} {
		calls = append(calls, call{cmd, "ERR This instance has cluster support disabled"})
	}
	calls = append(calls,
		call{"DEL foo bar", "0"},
		call{"INFO cluster", "# Cluster\r\ncluster_enabled:0\r\n"},
		call{"CONFIG GET cluster-enabled", "{cluster-enabled:no}"},
	)
	run(t, rdb, calls)
}

// TestClusterReplies compares the replies byte for byte with what a Redis 7.0
// cluster node sends, in RESP2 and RESP3, and checks that go-redis parses them.
func TestClusterReplies(t *testing.T) {
	ts := startServer(t, Config{Cluster: testTopology(t)})
	node := func(host, port, id string, close string) string {
		return "*4\r\n$9\r\n" + host + "\r\n:" + port + "\r\n$40\r\n" + id + "\r\n" + close
	}
	slots := func(emptyMap string) string {
		return "*2\r\n" +
			"*3\r\n:0\r\n:8191\r\n" + node("127.0.0.1", "7000", id7000, emptyMap) +
			"*3\r\n:8192\r\n:16383\r\n" + node("127.0.0.1", "7001", id7001, emptyMap)
	}
	shard := func(mapHeader, first, last, id, port string) string {
		return mapHeader + "2\r\n$5\r\nslots\r\n*2\r\n:" + first + "\r\n:" + last + "\r\n$5\r\nnodes\r\n*1\r\n" +
			mapHeader + "7\r\n$2\r\nid\r\n$40\r\n" + id + "\r\n$4\r\nport\r\n:" + port + "\r\n" +
			"$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n" +
			"$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
	}
	resp2Shard := func(first, last, id, port string) string {
		s := shard("%", first, last, id, port)
		s = strings.Replace(s, "%2\r\n", "*4\r\n", 1)
		return strings.Replace(s, "%7\r\n", "*14\r\n", 1)
	}
	nodes := id7000 + " 127.0.0.1:7000@0 myself,master - 0 0 1 connected 0-8191\n" +
		id7001 + " 127.0.0.1:7001@0 master - 0 0 2 connected 8192-16383\n"
	info := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n" +
		"cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:2\r\ncluster_size:2\r\n" +
		"cluster_current_epoch:2\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\n" +
		"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	bulk := func(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
	cases := []struct{ cmd, resp2, resp3 string }{
		{"CLUSTER SLOTS", slots("*0\r\n"), slots("%0\r\n")},
		{"CLUSTER SHARDS", "*2\r\n" + resp2Shard("0", "8191", id7000, "7000") + resp2Shard("8192", "16383", id7001, "7001"),
			"*2\r\n" + shard("%", "0", "8191", id7000, "7000") + shard("%", "8192", "16383", id7001, "7001")},
		{"CLUSTER NODES", bulk(nodes), bulk(nodes)},
		{"CLUSTER INFO", bulk(info), bulk(info)},
		{"CLUSTER MYID", bulk(id7000), bulk(id7000)},
		{"CLUSTER KEYSLOT {user1000}.following", ":3443\r\n", ":3443\r\n"},
		{"INFO cluster", bulk("# Cluster\r\ncluster_enabled:1\r\n"), bulk("# Cluster\r\ncluster_enabled:1\r\n")},
	}
	for _, proto := range []int{2, 3} {
		r := ts.raw(t)
		if proto == 3 {
			r.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*1\r\n$4\r\nPING\r\n")
			r.skipPast("+PONG\r\n") // and HELLO's map before it
		}
		for _, tc := range cases {
			var buf strings.Builder
			for _, w := range strings.Fields(tc.cmd) {
				fmt.Fprintf(&buf, "$%d\r\n%s\r\n", len(w), w)
			}
			r.send(fmt.Sprintf("*%d\r\n%s", len(strings.Fields(tc.cmd)), buf.String()))
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			r.expect(want)
		}
	}

	// go-redis reads them as it reads Redis's.
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		//lint:ignore SA1019 CLUSTER SLOTS is what redis-cli and older clients send; rlserver answers it as Redis does
		gotSlots, err := rdb.ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(gotSlots), fmt.Sprintf("[{0 8191 [{%s 127.0.0.1:7000 map[]}]} {8192 16383 [{%s 127.0.0.1:7001 map[]}]}]", id7000, id7001); got != want {
			t.Errorf("RESP%d: ClusterSlots %s, want %s", proto, got, want)
		}
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 2 || shards[1].Slots[0] != (redis.SlotRange{Start: 8192, End: 16383}) ||
			shards[1].Nodes[0].ID != id7001 || shards[1].Nodes[0].Port != 7001 || shards[1].Nodes[0].Health != "online" {
			t.Errorf("RESP%d: ClusterShards %+v", proto, shards)
		}
	}
}

// TestClusterClient: go-redis's ClusterClient routes by CLUSTER SLOTS to two
// in-process nodes, and each key lands on the node that owns its slot.
func TestClusterClient(t *testing.T) {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	servers := make([]*Server, 2)
	for i := range servers {
		topo, err := cluster.New(addrs, i)
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = serveOn(t, lns[i], Config{Cluster: topo})
		servers[i].core.SetClock(t0) // the hour's window holds the whole test
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1]})
	defer cc.Close()
	const n = 2000
	pipe := cc.Pipeline()
	cmds := make([]*redis.Cmd, 3*n)
	for i := range cmds {
		cmds[i] = pipe.Do(ctx, "RL.FIXED", fmt.Sprintf("k%d", i%n), 2, 3_600_000)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		v, _ := cmd.Slice()
		want := int64(1)
		if i >= 2*n {
			want = 0
		}
		if len(v) != 5 || v[0] != want {
			t.Fatalf("call %d of k%d: %v, want allowed=%d", i/n+1, i%n, v, want)
		}
	}
	for i, s := range servers {
		mine := 0
		for k := range n {
			if s.cfg.Cluster.Owns(cluster.Slot(fmt.Appendf(nil, "k%d", k))) {
				mine++
			}
		}
		if got := s.store.Len(s.clock.Now()); got != mine {
			t.Errorf("node %d holds %d keys, owns the slots of %d", i, got, mine)
		}
	}
}

// skipPast reads until the bytes read end with marker.
func (r *rawConn) skipPast(marker string) {
	r.t.Helper()
	var got []byte
	b := make([]byte, 1)
	for !strings.HasSuffix(string(got), marker) {
		if _, err := r.conn.Read(b); err != nil {
			r.t.Fatalf("waiting for %q: got %q, %v", marker, got, err)
		}
		got = append(got, b[0])
	}
}

// serveOn serves a server with cfg on ln until the test ends.
func serveOn(t *testing.T, ln net.Listener, cfg Config) *Server {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// TestKeyPositionsWithinArity: every command's key positions exist in the
// shortest call its arity lets through, so the slot check never reads past the
// arguments.
func TestKeyPositionsWithinArity(t *testing.T) {
	for _, cm := range allCommands {
		if cm.firstKey == 0 || cm.keys != nil {
			continue
		}
		words := max(cm.arity, -cm.arity)
		if cm.firstKey >= words || cm.lastKey >= words || cm.keyStep < 1 {
			t.Errorf("%s: keys %d..%d step %d, but a call may have only %d words",
				cm.full, cm.firstKey, cm.lastKey, cm.keyStep, words)
		}
	}
}
