package cluster_test

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestClusterBadInputAsRedis sends the cluster commands' bad input to a real
// three-master Redis Cluster and to three -cluster-enabled rlserver nodes, both built
// by redis-cli --cluster create (so node 0 owns slots 0-5460 on both): SETSLOT of a
// slot that is not the node's, of an unknown node, FORGET of an unknown id,
// REPLICATE of an unknown id, of itself, by a master with slots and keys, REPLICAS
// of an unknown id, slots
// busy or repeated, MIGRATE to a node that is not there, MEET of bad addresses and
// of a server that is no cluster node. The errors must be Redis's, word for word,
// and nothing may change: every node's table and keys are as before.
func TestClusterBadInputAsRedis(t *testing.T) {
	needBinaries(t)
	cli := testenv.RedisTool(t, "redis-cli")
	redisAddrs := testenv.StartRedisCluster(t, 3)
	nodes := startEnabled(t, 3, "")
	rlAddrs := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	redisCLI(t, cli, append(append([]string{"--cluster", "create"}, rlAddrs...), "--cluster-yes")...)
	waitKnown(t, nodes, 3)
	standalone := testenv.StartRedis(t)
	dead := testenv.DeadAddr(t)
	deadHost, deadPort, _ := net.SplitHostPort(dead)
	ctx := context.Background()

	// The node 0 of each, node 1's id, and the key {b} (slot 3300, node 0's) set.
	type side struct {
		name    string
		node0   *redis.Client
		all     []*redis.Client
		myID    string
		otherID string
	}
	sides := []*side{{name: "redis"}, {name: "rlserver"}}
	for i, addrs := range [][]string{redisAddrs, rlAddrs} {
		sd := sides[i]
		for _, a := range addrs {
			c := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			sd.all = append(sd.all, c)
		}
		sd.node0 = sd.all[0]
		var err error
		if sd.myID, err = sd.node0.ClusterMyID(ctx).Result(); err != nil {
			t.Fatal(err)
		}
		if sd.otherID, err = sd.all[1].ClusterMyID(ctx).Result(); err != nil {
			t.Fatal(err)
		}
	}
	if err := sides[0].node0.Set(ctx, "{b}", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sides[1].node0.Do(ctx, "RL.FIXED", "{b}", 5, 600000).Err(); err != nil {
		t.Fatal(err)
	}
	before := clusterState(t, sides[1].all)

	const unknown = "0123456789012345678901234567890123456789"
	cases := [][]any{
		{"CLUSTER", "SETSLOT", 10000, "MIGRATING", "%other"},
		{"CLUSTER", "SETSLOT", 100, "IMPORTING", "%other"},
		{"CLUSTER", "SETSLOT", 100, "MIGRATING", unknown},
		{"CLUSTER", "SETSLOT", 10000, "IMPORTING", unknown},
		{"CLUSTER", "SETSLOT", 100, "NODE", unknown},
		{"CLUSTER", "SETSLOT", 3300, "NODE", "%other"}, // {b} is there
		{"CLUSTER", "SETSLOT", 16384, "STABLE"},
		{"CLUSTER", "SETSLOT", -1, "STABLE"},
		{"CLUSTER", "SETSLOT", 100, "BOGUS"},
		{"CLUSTER", "SETSLOT", 100, "NODE"},
		{"CLUSTER", "FORGET", unknown},
		{"CLUSTER", "FORGET", "%me"},
		{"CLUSTER", "REPLICATE", unknown},
		{"CLUSTER", "REPLICATE", "%me"},
		{"CLUSTER", "REPLICATE", "%other"}, // node 0 has slots and {b}
		{"CLUSTER", "REPLICATE"},
		{"CLUSTER", "REPLICAS", unknown},
		{"CLUSTER", "REPLICAS", "%other"}, // a master without replicas: []
		{"CLUSTER", "SLAVES", unknown},
		{"CLUSTER", "ADDSLOTS", 100},
		{"CLUSTER", "ADDSLOTS", "x"},
		{"CLUSTER", "DELSLOTS", 100, 100},
		{"CLUSTER", "ADDSLOTSRANGE", 5, 1},
		{"CLUSTER", "ADDSLOTSRANGE", 5},
		{"CLUSTER", "COUNTKEYSINSLOT", 16384},
		{"CLUSTER", "COUNTKEYSINSLOT", "x"},
		{"CLUSTER", "GETKEYSINSLOT", 100, -1},
		{"CLUSTER", "SET-CONFIG-EPOCH", 5},
		{"CLUSTER", "SET-CONFIG-EPOCH", -5},
		{"CLUSTER", "RESET"},
		{"CLUSTER", "RESET", "MAYBE"},
		{"CLUSTER", "MEET", "127.0.0.1", "notaport"},
		{"CLUSTER", "MEET", "127.0.0.1", "7000", "x"},
		{"CLUSTER", "MEET", "999.1.1.1", "7000"},
		{"CLUSTER", "MEET", "127.0.0.1", "0"},
		{"CLUSTER", "MEET", "127.0.0.1", "60000"},
		{"CLUSTER", "MEET", "127.0.0.1", "7000", "70000"},
		{"MIGRATE", deadHost, deadPort, "", 0, 500, "KEYS", "{b}"},
		{"MIGRATE", deadHost, deadPort, "{b}", 0, 500, "KEYS", "{b}"},
		{"MIGRATE", deadHost, deadPort, "{b}", 0, 500, "AUTH"},
		{"MIGRATE", deadHost, deadPort, "{b}", "x", 500},
		{"MIGRATE", deadHost, deadPort, "{nothere}", 0, 500},
	}
	for _, args := range cases {
		var replies [2]string
		for i, sd := range sides {
			a := make([]any, len(args))
			for j, v := range args {
				switch v {
				case "%other":
					v = sd.otherID
				case "%me":
					v = sd.myID
				}
				a[j] = v
			}
			v, err := sd.node0.Do(ctx, a...).Result()
			replies[i] = anyAddr.ReplaceAllString(fmt.Sprint(v, " ", err), "host:port")
		}
		if replies[0] != replies[1] {
			t.Errorf("%v: Redis %q, rlserver %q", args, replies[0], replies[1])
		}
	}

	// rlserver only: MIGRATE to a real Redis, which refuses the payload, and MEET
	// of a server that is no cluster node (Redis answers OK, and its handshake fails).
	host, port, _ := net.SplitHostPort(standalone)
	err := sides[1].node0.Do(ctx, "MIGRATE", host, port, "", 0, 1000, "KEYS", "{b}").Err()
	if want := "ERR Target instance replied with error: ERR DUMP payload version or checksum are wrong"; err == nil || err.Error() != want {
		t.Errorf("MIGRATE to Redis: %v, want %q", err, want)
	}
	if n, err := redis.NewClient(&redis.Options{Addr: standalone}).DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("Redis after the MIGRATE holds %d keys (%v), want 0", n, err)
	}
	if v, err := sides[1].node0.Do(ctx, "CLUSTER", "MEET", host, port).Result(); err != nil || v != "OK" {
		t.Errorf("MEET of Redis: %v %v, want OK as Redis answers", v, err)
	}
	time.Sleep(300 * time.Millisecond) // an exchange or two
	if after := clusterState(t, sides[1].all); after != before {
		t.Errorf("the bad input changed the cluster:\nbefore %s\nafter  %s", before, after)
	}
}

// anyAddr matches an address in a reply (MOVED's), which differs between clusters.
var anyAddr = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// clusterState is every node's CLUSTER NODES, DBSIZE and {b}'s state, as text.
func clusterState(t *testing.T, nodes []*redis.Client) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, c := range nodes {
		text, err := c.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s dbsize %d\n", text, n)
	}
	v, err := nodes[0].Do(ctx, "RL.FIXED", "{b}", 5, 600000, "PEEK").Slice()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "{b}: %v\n", v[:3]) // allowed, limit, remaining; not the time left
	return b.String()
}
