package rlserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestRedisClusterBackend runs package client's Lua backend on a three-master Redis
// Cluster started on loopback, through a go-redis ClusterClient: no script is loaded
// beforehand, so each node first answers NOSCRIPT and the client falls back to EVAL
// there. Then clusterChecks.
func TestRedisClusterBackend(t *testing.T) {
	addrs := testenv.StartRedisCluster(t, 3)
	c, err := client.NewLua(clusterClient(t, addrs), client.LuaOptions{Options: clientOptions})
	if err != nil {
		t.Fatal(err)
	}
	clusterChecks(t, "redis cluster+lua", c, addrs)
}

// TestRLServerClusterClient runs package client's native backend on three rlserver
// nodes in cluster mode, through a go-redis ClusterClient: clusterChecks, as on a
// Redis Cluster.
func TestRLServerClusterClient(t *testing.T) {
	testenv.RedisTool(t, "redis-server")
	addrs := testenv.StartRLCluster(t, 3, "-enable-debug-command", "-loglevel", "WARN")
	c, err := client.New(clusterClient(t, addrs), clientOptions)
	if err != nil {
		t.Fatal(err)
	}
	clusterChecks(t, "rlserver cluster", c, addrs)
}

// clusterClient is a ClusterClient over addrs that never retries (a retried call
// would count twice), closed when t ends.
func clusterClient(t *testing.T, addrs []string) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// clusterChecks holds c, a client over the cluster of three nodes at addrs, to what
// the client promises on one server: keys spread over every node, each on the node
// owning its slot only; clientScenarios pass; RL.ALL works on hash-tagged keys, and
// keys of several slots are refused with CROSSSLOT.
func clusterChecks(t *testing.T, name string, c *client.Client, addrs []string) {
	ctx := context.Background()
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = newClient(a)
		t.Cleanup(func() { nodes[i].Close() })
	}

	t.Run("spread", func(t *testing.T) {
		const keys = 3000
		l := client.Token(10, time.Hour)
		for i := range keys {
			res, err := c.Allow(ctx, fmt.Sprint("spread:", i), l)
			if err != nil || !res.Allowed || res.Remaining != 9 {
				t.Fatalf("key %d: %+v, %v; want allowed, 9 remaining", i, res, err)
			}
		}
		var total int64
		for i, n := range nodes {
			size, err := n.DBSize(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			// Each node owns a third of the slots: far fewer than a sixth of the keys
			// on one would be a routing fault, not chance.
			if size < keys/6 {
				t.Errorf("%s holds %d of %d keys, want about a third", addrs[i], size, keys)
			}
			total += size
		}
		if total != keys {
			t.Errorf("%d keys over the nodes, want %d", total, keys)
		}
		// A node answers EXISTS for its own slots and MOVED for the others': each key
		// must exist on exactly one node.
		for i := range 100 {
			key := fmt.Sprint("spread:", i)
			var on []string
			for j, n := range nodes {
				if n.Exists(ctx, key).Val() == 1 {
					on = append(on, addrs[j])
				}
			}
			if len(on) != 1 {
				t.Errorf("%s exists on %v, want one node", key, on)
			}
		}
		for _, n := range nodes {
			if err := n.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})

	runClientScenarios(t, []clientBackend{{name, c}})

	t.Run("RL.ALL", func(t *testing.T) {
		// Buckets, not fixed windows: no window boundary can fall between the calls.
		hour, day := client.Token(2, time.Hour), client.Token(3, 24*time.Hour)
		for user := range 30 { // 30 users: their hash tags land on every node
			tag := fmt.Sprintf("{user:%d}", user)
			rules := []client.Rule{{Key: tag + ":hour", Limit: hour}, {Key: tag + ":day", Limit: day}}
			for call, want := range []bool{true, true, false} {
				res, err := c.AllowAll(ctx, rules...)
				if err != nil || res.Allowed != want {
					t.Fatalf("%s call %d: %+v, %v; want allowed %v", tag, call, res, err, want)
				}
			}
			// The third call was refused by the hour: the day kept its last token, which
			// a peek finds (and reports as spent: Remaining 0).
			if res, err := c.Peek(ctx, tag+":day", day); err != nil || !res.Allowed || res.Remaining != 0 {
				t.Fatalf("%s:day after a refused RL.ALL: %+v, %v; want its last token there", tag, res, err)
			}
		}
		for i, n := range nodes {
			if size := n.DBSize(ctx).Val(); size == 0 {
				t.Errorf("%s holds none of the RL.ALL keys of 30 users", addrs[i])
			}
		}
		// Without a hash tag, two keys of different slots cannot go in one call.
		if a, b := nodes[0].ClusterKeySlot(ctx, "untagged:a").Val(), nodes[0].ClusterKeySlot(ctx, "untagged:b").Val(); a == b {
			t.Fatalf("untagged:a and untagged:b share slot %d: pick keys of two slots", a)
		}
		_, err := c.AllowAll(ctx, client.Rule{Key: "untagged:a", Limit: hour}, client.Rule{Key: "untagged:b", Limit: hour})
		// The lab.Caller's mistake, as a bad limit is, not the limiter's unavailability.
		if !errors.Is(err, client.ErrBadLimit) || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("RL.ALL on untagged keys of two slots: %v, want ErrBadLimit with CROSSSLOT", err)
		}
	})
}
