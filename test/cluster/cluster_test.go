// The cluster test: three rlserver processes in cluster mode on loopback, driven
// by go-redis's ClusterClient and redis-cli -c, as a user would meet them.
//
//	go test -run TestRLServerCluster -v

package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/testenv"
)

// clusterKeys is how many keys TestRLServerCluster spreads over the nodes.
const clusterKeys = 100_000

// TestRLServerCluster starts three nodes and checks, through a ClusterClient: every
// key's limit is exact (RL.FIXED limit 2: three calls answer allowed, allowed,
// limited), each node holds only keys of its own slots, a key sent to the wrong
// node gets MOVED, keys of several slots get CROSSSLOT (DEL, RL.ALL), RL.ALL with
// hash-tagged keys works, and redis-cli -c follows a MOVED.
func TestRLServerCluster(t *testing.T) {
	cli := testenv.RedisTool(t, "redis-cli")
	nodes, addrs := startRLCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// One frozen clock on every node, at the start of an hour, so a 1-hour window
	// holds the whole test.
	const frozen = 1_767_225_600_000_000 // 2026-01-01T00:00:00Z in µs
	for _, p := range nodes {
		if err := p.Do(ctx, "DEBUG", "CLOCK", "SET", frozen).Err(); err != nil {
			t.Fatal(err)
		}
	}
	topos := make([]*cluster.Topology, len(addrs))
	for i := range addrs {
		var err error
		if topos[i], err = cluster.New(addrs, i); err != nil {
			t.Fatal(err)
		}
	}
	// ownerOf is the index of the node that owns key's slot.
	ownerOf := func(key string) int {
		for i, topo := range topos {
			if topo.Owns(cluster.Slot([]byte(key))) {
				return i
			}
		}
		t.Fatalf("no node owns %q", key)
		return -1
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer cc.Close()

	t.Run("limits", func(t *testing.T) {
		const window = 3_600_000
		want := [][5]int64{{1, 2, 1, 0, window}, {1, 2, 0, 0, window}, {0, 2, 0, window, window}}
		for round, w := range want {
			for from := 0; from < clusterKeys; from += 10_000 {
				pipe := cc.Pipeline()
				cmds := make([]*redis.Cmd, 10_000)
				for i := range cmds {
					cmds[i] = pipe.Do(ctx, "RL.FIXED", "user:"+strconv.Itoa(from+i), 2, window)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					t.Fatalf("round %d: %v", round+1, err)
				}
				for i, cmd := range cmds {
					if got, err := reply5(cmd); err != nil || got != w {
						t.Fatalf("call %d of user:%d: %v %v, want %v", round+1, from+i, got, err, w)
					}
				}
			}
		}
	})

	t.Run("each node holds its slots", func(t *testing.T) {
		total := 0
		for i, p := range nodes {
			iter := p.Scan(ctx, 0, "*", 1000).Iterator()
			for iter.Next(ctx) {
				total++
				if key := iter.Val(); !topos[i].Owns(cluster.Slot([]byte(key))) {
					t.Fatalf("node %d holds %q of slot %d, owned by node %d", i, key, cluster.Slot([]byte(key)), ownerOf(key))
				}
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if total != clusterKeys {
			t.Errorf("the nodes hold %d keys together, want %d", total, clusterKeys)
		}
	})

	t.Run("MOVED", func(t *testing.T) {
		key := keyOwnedBy(ownerOf, 1, "moved:")
		slot := cluster.Slot([]byte(key))
		err := nodes[0].Do(ctx, "RL.FIXED", key, 2, 1000).Err()
		if want := fmt.Sprintf("MOVED %d %s", slot, addrs[1]); err == nil || err.Error() != want {
			t.Errorf("RL.FIXED %s on node 0: %v, want %s", key, err, want)
		}
	})

	t.Run("CROSSSLOT", func(t *testing.T) {
		a, b := keyOwnedBy(ownerOf, 0, "x:"), keyOwnedBy(ownerOf, 1, "x:")
		const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
		if err := cc.Del(ctx, a, b).Err(); err == nil || err.Error() != crossSlot {
			t.Errorf("DEL %s %s: %v, want %s", a, b, err, crossSlot)
		}
		err := cc.Do(ctx, "RL.ALL", "FIXED", a, 1, 60000, "TOKEN", b, 1, 60000).Err()
		if err == nil || err.Error() != crossSlot {
			t.Errorf("RL.ALL on %s and %s: %v, want %s", a, b, err, crossSlot)
		}
	})

	t.Run("RL.ALL with hash tags", func(t *testing.T) {
		seen := map[int]bool{}
		for u := 0; len(seen) < len(nodes); u++ {
			tag := fmt.Sprintf("{tenant:%d}", u)
			seen[ownerOf(tag)] = true
			for call, want := range []int64{1, 0} {
				v, err := cc.Do(ctx, "RL.ALL", "FIXED", tag+":day", 100, 86_400_000, "TOKEN", tag+":sec", 1, 1000).Slice()
				if err != nil || len(v) != 3 || v[0] != want {
					t.Fatalf("RL.ALL on %s, call %d: %v %v, want allowed=%d", tag, call+1, v, err, want)
				}
			}
			if n, err := nodes[ownerOf(tag)].Exists(ctx, tag+":day", tag+":sec").Result(); err != nil || n != 2 {
				t.Errorf("node %d has %d of %s's keys (%v), want 2", ownerOf(tag), n, tag, err)
			}
		}
	})

	t.Run("redis-cli -c follows MOVED", func(t *testing.T) {
		key := keyOwnedBy(ownerOf, 2, "cli:")
		host, port, _ := net.SplitHostPort(addrs[0])
		out, err := exec.CommandContext(ctx, cli, "-c", "-h", host, "-p", port, "RL.FIXED", key, "5", "60000").CombinedOutput()
		if got := strings.Fields(string(out)); err != nil || strings.Join(got, " ") != "1 5 4 0 60000" {
			t.Fatalf("redis-cli -c -p %s RL.FIXED %s 5 60000: %q %v, want 1 5 4 0 60000", port, key, out, err)
		}
		if n, err := nodes[2].Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("node 2 has not got %s: EXISTS %d %v", key, n, err)
		}
	})
}

// keyOwnedBy is the first prefix+number key whose slot node owns.
func keyOwnedBy(ownerOf func(string) int, node int, prefix string) string {
	for i := 0; ; i++ {
		if key := prefix + strconv.Itoa(i); ownerOf(key) == node {
			return key
		}
	}
}

// startRLCluster starts n rlserver nodes in cluster mode on loopback
// (testenv.StartRLCluster), with DEBUG CLOCK, and returns a client on each and their
// addresses in -cluster-nodes order.
func startRLCluster(t *testing.T, n int) ([]*redis.Client, []string) {
	t.Helper()
	addrs := testenv.StartRLCluster(t, n, "-enable-debug-command", "-loglevel", "WARN")
	nodes := make([]*redis.Client, n)
	for i, addr := range addrs {
		nodes[i] = newClient(addr)
		t.Cleanup(func() { nodes[i].Close() })
	}
	return nodes, addrs
}

// TestRLServerClusterMatchesRedis sends the cluster commands, and commands that get
// MOVED and CROSSSLOT, to a real three-master Redis Cluster and to three rlserver
// nodes, in RESP2 and RESP3, and requires replies of the same shape: the same types
// and lengths at every place, the same map keys, the same errors (up to the slot
// and address), the same CLUSTER INFO fields and CLUSTER NODES columns. Redis sends
// CLUSTER INFO and NODES in RESP3 as verbatim strings, rlserver as bulk strings,
// as it does INFO: the shapes count both as strings.
func TestRLServerClusterMatchesRedis(t *testing.T) {
	testenv.RedisTool(t, "redis-server")
	redisAddrs := testenv.StartRedisCluster(t, 3)
	_, rlAddrs := startRLCluster(t, 3)
	// A key of node 1 and one of node 2, on each side (the slot splits differ).
	keyOn := func(addrs []string, node int) string {
		topo, err := cluster.New(addrs, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c := newClient(addrs[0])
		defer c.Close()
		//lint:ignore SA1019 CLUSTER SLOTS is what redis-cli and older clients send; rlserver answers it as Redis does
		slots, err := c.ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			key := "k" + strconv.Itoa(i)
			slot := int(cluster.Slot([]byte(key)))
			for _, r := range slots {
				if r.Start <= slot && slot <= r.End && r.Nodes[0].Addr == topo.Nodes()[node].Addr() {
					return key
				}
			}
		}
	}
	for _, proto := range []int{2, 3} {
		for _, cmd := range []string{"CLUSTER SLOTS", "CLUSTER SHARDS", "CLUSTER NODES", "CLUSTER INFO",
			"CLUSTER MYID", "CLUSTER KEYSLOT {user1000}.following", "READONLY", "READWRITE", "INFO cluster",
			"GET %[1]s", "DEL %[1]s %[2]s", "CLUSTER NOSUCH", "CLUSTER"} {
			shape := func(addrs []string, isRedis bool) string {
				var args []string
				for _, w := range strings.Fields(cmd) {
					if strings.HasPrefix(w, "%") {
						w = fmt.Sprintf(w, keyOn(addrs, 1), keyOn(addrs, 2))
					}
					args = append(args, w)
				}
				if args[0] == "GET" && !isRedis { // rlserver has no GET: the same key's MOVED
					args = []string{"RL.FIXED", args[1], "1", "1000"}
				}
				s := replyShape(t, addrs[0], proto, args)
				if cmd == "CLUSTER INFO" || cmd == "CLUSTER NODES" { // text replies: their fields too
					c := newClient(addrs[0])
					defer c.Close()
					text, err := c.Do(context.Background(), "CLUSTER", args[1]).Text()
					if err != nil {
						t.Fatal(err)
					}
					s += textShape(args[1], text)
				}
				return s
			}
			if r, s := shape(redisAddrs, true), shape(rlAddrs, false); r != s {
				t.Errorf("RESP%d %s:\n redis-server: %s\n     rlserver: %s", proto, cmd, r, s)
			}
		}
	}
}

// replyShape sends args to addr on a new connection (after HELLO 3 for RESP3) and
// describes the reply's shape.
func replyShape(t *testing.T, addr string, proto int, args []string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // against a hang, never a result
	send := func(args ...string) {
		b := fmt.Appendf(nil, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	rd := bufio.NewReader(conn)
	if proto == 3 {
		send("HELLO", "3")
		if _, err := readShape(rd, false); err != nil {
			t.Fatal(err)
		}
	}
	send(args...)
	s, err := readShape(rd, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readShape reads one RESP2/RESP3 value and describes it: its type, the length of
// an aggregate and its elements' shapes, the text of simple strings and map keys,
// and errors (MOVED's slot and address aside). Verbatim strings count as strings.
func readShape(rd *bufio.Reader, mapKey bool) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	kind, rest := line[0], line[1:]
	switch kind {
	case ':', '_', ',', '#':
		return string(kind), nil
	case '+':
		return "+" + rest, nil
	case '-':
		if f := strings.Fields(rest); f[0] == "MOVED" {
			return "-MOVED <slot> <addr>", nil
		}
		return "-" + rest, nil
	case '$', '=':
		n, _ := strconv.Atoi(rest)
		if n < 0 {
			return "null", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return "", err
		}
		if mapKey && strings.Trim(string(b[:n]), "abcdefghijklmnopqrstuvwxyz-") == "" {
			return "$" + string(b[:n]), nil
		}
		return "$", nil
	case '*', '%', '~':
		n, _ := strconv.Atoi(rest)
		if kind == '%' {
			n *= 2
		}
		parts := make([]string, n)
		for i := range parts {
			// RESP2 sends maps as flat arrays: a word of lower-case letters at an even
			// place may be a key, so both sides show it (ids and addresses are no words).
			if parts[i], err = readShape(rd, i%2 == 0); err != nil {
				return "", err
			}
		}
		return string(kind) + strconv.Itoa(n) + "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", fmt.Errorf("unknown reply %q", line)
}

// textShape describes CLUSTER INFO by its field names (leaving out the counts of
// each bus message type, which Redis shows once nonzero) and CLUSTER NODES by the
// columns of each line and the flags.
func textShape(sub, text string) string {
	var shape []string
	switch strings.ToLower(sub) {
	case "info":
		for _, l := range strings.Split(strings.TrimSpace(text), "\r\n") {
			name, _, _ := strings.Cut(l, ":")
			if !strings.HasPrefix(name, "cluster_stats_messages_") || strings.Count(name, "_") == 3 {
				shape = append(shape, name)
			}
		}
	case "nodes":
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			f := strings.Fields(l)
			shape = append(shape, fmt.Sprintf("%d:%s", len(f), f[2]))
		}
		slices.Sort(shape)
	}
	return " " + strings.Join(shape, ",")
}
