package clients_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
)

// sentinelPass is the servers' -requirepass and -masterauth, the Sentinels'
// auth-pass and the clients' password, as docs/ha.md sets them up.
const sentinelPass = "clients-test-pass"

// TestSentinelFailover: an rlserver primary, two replicas and three real Redis
// Sentinels, all behind a password; redis-py's Sentinel, ioredis (sentinels) and node-redis's
// createSentinel each drain a key through the primary. Once the drained keys are on
// both replicas the primary is killed with SIGKILL; each client must find the
// primary the Sentinels promote, write there, and find its key still drained.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	py, nodeBin := python(t), node(t)
	redisTools(t)
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	ctx := context.Background()
	start := func(args ...string) (*launch.Proc, *redis.Client) {
		addr, err := launch.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		log, err := launch.LogIn(suite.dir, "rlserver")
		if err != nil {
			t.Fatal(err)
		}
		p, err := launch.Start(launch.Spec{Name: "rlserver", Addr: addr, Password: sentinelPass, Log: log,
			Argv: append([]string{suite.serverBin, "-addr", addr, "-loglevel", "WARN",
				"-requirepass", sentinelPass, "-masterauth", sentinelPass}, args...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr, Password: sentinelPass, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		return p, rdb
	}
	primary, _ := start()
	var replicas []*redis.Client
	for range 2 {
		_, rdb := start("-replicaof", primary.Addr)
		replicas = append(replicas, rdb)
		poll.Until(t, 10*time.Second, "a replica's link", func() bool { return infoField(rdb, "master_link_status") == "up" })
	}
	host, port, _ := net.SplitHostPort(primary.Addr)
	var sentinels []string
	for range 3 {
		p, err := launch.Sentinel(t.TempDir(), fmt.Sprintf("sentinel monitor mymaster %s %s 2\n"+
			"sentinel down-after-milliseconds mymaster 1000\n"+
			"sentinel failover-timeout mymaster 10000\n"+
			"sentinel auth-pass mymaster %s\n", host, port, sentinelPass))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		sentinels = append(sentinels, p.Addr)
	}
	for _, a := range sentinels {
		s := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer s.Close()
		testenv.WaitSentinel(t, s, "mymaster", 2, 2)
	}

	addrs := strings.Join(sentinels, ",")
	scripts := []*script{
		startScript(t, "redis-py", py, "sentinel.py", addrs, sentinelPass),
		startScript(t, "ioredis", nodeBin, "sentinel_ioredis.js", addrs, sentinelPass),
		startScript(t, "node-redis", nodeBin, "sentinel_node_redis.js", addrs, sentinelPass),
	}
	for _, s := range scripts {
		if !s.waitFor("ready") {
			s.finish()
			t.FailNow()
		}
	}
	for _, r := range replicas {
		poll.Until(t, 5*time.Second, "the drained keys on a replica", func() bool {
			return r.Exists(ctx, "pys:drained", "ios:drained", "nrs:drained").Val() == 3
		})
	}
	killed := time.Now()
	primary.Kill()
	for _, s := range scripts {
		s.send("killed")
	}
	for _, s := range scripts {
		s.finish()
	}
	t.Logf("the three clients wrote on the new primary within %v of the kill", time.Since(killed).Round(time.Millisecond))
}

// infoField is one field of the server's INFO, "" if absent.
func infoField(rdb *redis.Client, field string) string {
	info, _ := rdb.Info(context.Background(), "replication").Result()
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}
