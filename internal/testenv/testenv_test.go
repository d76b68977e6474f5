package testenv_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestHelpers starts each kind of address in a subtest of its own and sends it one
// command; once the subtest has ended, nothing may listen there any more.
func TestHelpers(t *testing.T) {
	cases := []struct {
		name  string
		start func(testing.TB) string
		cmd   []any
		want  string // a part of the reply, or of the error
	}{
		{"rlserver", func(tb testing.TB) string { return testenv.StartServer(tb, resp.Config{}) },
			[]any{"PING"}, "PONG"},
		{"rlserver without debug", func(tb testing.TB) string { return testenv.StartServer(tb, resp.Config{}) },
			[]any{"DEBUG", "CLOCK", "REAL"}, "DEBUG command not allowed"},
		{"rlserver with debug", func(tb testing.TB) string {
			return testenv.StartServer(tb, resp.Config{EnableDebugCommand: true})
		}, []any{"DEBUG", "CLOCK", "REAL"}, "OK"},
		{"redis-server", func(tb testing.TB) string { return testenv.StartRedis(tb) },
			[]any{"PING"}, "PONG"},
		{"redis-server extra args", func(tb testing.TB) string {
			return testenv.StartRedis(tb, "--maxmemory-policy", "allkeys-lru")
		}, []any{"CONFIG", "GET", "maxmemory-policy"}, "allkeys-lru"},
		{"dead", testenv.DeadAddr, []any{"PING"}, "connection refused"},
		{"stalled", testenv.StalledAddr, []any{"PING"}, "i/o timeout"},
	}
	for _, tc := range cases {
		var addr string
		t.Run(tc.name, func(t *testing.T) {
			addr = tc.start(t)
			if got := send(addr, tc.cmd); !strings.Contains(got, tc.want) {
				t.Fatalf("%v at %s: %q, want it to contain %q", tc.cmd, addr, got, tc.want)
			}
		})
		if addr == "" { // skipped: no redis-server
			continue
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s: %s still accepts connections after its test ended", tc.name, addr)
		}
	}
}

// send runs cmd at addr over RESP2 and returns the reply, or the error, as text.
// The 200 ms read budget ends the wait on a server that never answers.
func send(addr string, cmd []any) string {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1,
		DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), cmd...).Result()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(v)
}

// TestStartServerEndsAtOnce ends tests right after StartServer, as a skip does: Close
// then usually comes before Serve has begun, and
// that is no Serve failure.
func TestStartServerEndsAtOnce(t *testing.T) {
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { testenv.StartServer(t, resp.Config{}) })
	}
}

// TestRedisCluster starts a three-master Redis Cluster and writes keys through a
// ClusterClient: every master must own a third of the slots and hold some keys,
// the sum being all of them; once the subtest has ended, no node listens.
func TestRedisCluster(t *testing.T) {
	const keys = 300
	var addrs []string
	t.Run("cluster", func(t *testing.T) {
		addrs = testenv.StartRedisCluster(t, 3)
		ctx := context.Background()
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
		defer cc.Close()
		for i := range keys {
			if err := cc.Set(ctx, fmt.Sprint("key:", i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var total int64
		for _, a := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
			n, err := rdb.DBSize(ctx).Result()
			info := rdb.ClusterInfo(ctx).Val()
			rdb.Close()
			if err != nil || n == 0 || !strings.Contains(info, "cluster_slots_assigned:16384") {
				t.Errorf("%s: %d keys (%v), cluster info %q: want some keys, all slots assigned", a, n, err, info)
			}
			total += n
		}
		if total != keys {
			t.Errorf("%d keys over the nodes, want %d", total, keys)
		}
	})
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after its test ended", a)
		}
	}
}
