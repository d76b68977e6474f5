package clients_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
)

// TestCluster runs each library's cluster client on three rlserver nodes in
// cluster mode (their clocks frozen): redis-py's RedisCluster (and, for its first
// part — CLUSTER KEYSLOT, a MULTI across nodes refused whole — on a real Redis
// Cluster, the ground truth), ioredis's Cluster and node-redis's createCluster, in
// RESP2 and RESP3. Then each script's 300 spread keys must lie over every node, on
// the node owning their slot.
func TestCluster(t *testing.T) {
	t.Parallel()
	redisTools(t)
	rl, rc := strings.Join(rlCluster(t, 3), ","), strings.Join(redisCluster(t), ",")
	runs := []scriptRun{
		{"redis-py/redis", python, []string{"cluster.py", "redis", rc}},
		{"redis-py/rlserver", python, []string{"cluster.py", "rlserver", rl}},
	}
	prefixes := map[string]string{"redis-py/rlserver": "pyc:"}
	for _, proto := range []string{"2", "3"} {
		runs = append(runs,
			scriptRun{"ioredis/RESP" + proto, node, []string{"cluster_ioredis.js", rl, proto}},
			scriptRun{"node-redis/RESP" + proto, node, []string{"cluster_node_redis.js", rl, proto}})
		prefixes["ioredis/RESP"+proto], prefixes["node-redis/RESP"+proto] = "ioc"+proto+":", "nrc"+proto+":"
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			runScript(t, r.name, append([]string{r.interp(t)}, r.args...)...)
			if p := prefixes[r.name]; p != "" {
				checkSpread(t, strings.Split(rl, ","), p+"spread:*", 300)
			}
		})
	}
}

// checkSpread requires the keys matching pattern to number want over the nodes at
// addrs, a sixth of them at least on each (each owns a third of the slots).
func checkSpread(t *testing.T, addrs []string, pattern string, want int) {
	t.Helper()
	ctx := context.Background()
	total := 0
	var counts []int
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		keys, err := rdb.Keys(ctx, pattern).Result()
		rdb.Close()
		if err != nil {
			t.Fatalf("KEYS %s on %s: %v", pattern, a, err)
		}
		counts = append(counts, len(keys))
		total += len(keys)
	}
	if total != want || min(counts[0], counts[1], counts[2]) < want/6 {
		t.Errorf("keys %s per node: %v, want %d over all, each node about a third", pattern, counts, want)
	}
}

// rlCluster starts n rlserver nodes in cluster mode on loopback, the slots split
// evenly, their clocks frozen; it stops them when tb ends and returns their
// addresses. A port taken before its node binds it starts the whole cluster again,
// up to three times.
func rlCluster(tb testing.TB, n int) []string {
	tb.Helper()
	if suite.buildErr != nil {
		tb.Fatal(suite.buildErr)
	}
	var err error
	for range 3 {
		var addrs []string
		if addrs, err = launch.FreeAddrs(n); err != nil {
			tb.Fatal(err)
		}
		var procs []*launch.Proc
		for i, addr := range addrs {
			var p *launch.Proc
			p, err = launch.RLServerAt(suite.serverBin, suite.dir, addr, "-enable-debug-command", "-loglevel", "WARN",
				"-cluster-nodes", strings.Join(addrs, ","), "-cluster-self", strconv.Itoa(i))
			if err != nil {
				break
			}
			procs = append(procs, p)
		}
		if err == nil {
			tb.Cleanup(func() {
				for _, p := range procs {
					p.Stop()
				}
			})
			for _, a := range addrs {
				freeze(tb, a)
			}
			return addrs
		}
		for _, p := range procs {
			p.Stop()
		}
	}
	tb.Fatal(fmt.Errorf("an rlserver cluster: %w", err))
	return nil
}

// redisCluster starts a Redis Cluster of three masters and stops it when tb ends.
func redisCluster(tb testing.TB) []string {
	tb.Helper()
	procs, err := launch.RedisCluster(context.Background(), tb.TempDir(), 3)
	if err != nil {
		tb.Fatal(err)
	}
	addrs := make([]string, len(procs))
	for i, p := range procs {
		tb.Cleanup(p.Kill)
		addrs[i] = p.Addr
	}
	return addrs
}
