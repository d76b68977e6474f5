// Package testenv starts what the tests of several packages run against: an
// rlserver in-process, a real redis-server or Redis Cluster, and loopback addresses that refuse or
// never answer. Each helper undoes its work when its test ends.
//
// Tests that need Redis programs skip, saying how to install them, when the programs
// are not on PATH, unless RLSERVER_REQUIRE_REDIS=1 (as CI sets): then they fail.
//
// Package resp's own tests cannot use this package, which imports resp: they keep
// their own server helper.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/resp"
)

// StartServer runs an rlserver in-process on a free loopback port with cfg (its log
// discarded unless cfg.Logger is set), closes it when tb ends, and returns its
// address. Serve returning an error fails tb.
func StartServer(tb testing.TB, cfg resp.Config) string {
	tb.Helper()
	_, addr := Serve(tb, cfg)
	return addr
}

// Serve is StartServer for a test that needs the server itself (its MetricsHandler).
func Serve(tb testing.TB, cfg resp.Config) (*resp.Server, string) {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := resp.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		// ErrServerClosed: the test ended (a skip, say) before Serve began, and Close
		// came first. That is no Serve failure.
		if err := <-done; err != nil && !errors.Is(err, resp.ErrServerClosed) {
			tb.Errorf("rlserver Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

// RedisTool returns the path of a Redis program (redis-server, redis-cli), or skips
// tb, saying how to install it, when it is not on PATH; under
// RLSERVER_REQUIRE_REDIS=1 it fails tb instead.
func RedisTool(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	hint := name + " is not on PATH; install it to test against a real Redis " +
		"(Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
	if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
		tb.Fatal(hint + " (RLSERVER_REQUIRE_REDIS=1 makes this a failure)")
	}
	tb.Skip(hint + "; RLSERVER_REQUIRE_REDIS=1 turns this skip into a failure")
	return ""
}

// StartRedis starts a redis-server on a free loopback port, without persistence and
// with extraArgs after its own arguments, stops it when tb ends, and returns its
// address. Without redis-server it skips or fails tb as RedisTool does.
func StartRedis(tb testing.TB, extraArgs ...string) string {
	tb.Helper()
	bin := RedisTool(tb, "redis-server")
	var lastErr error
	for range 3 { // the port is free when picked, but may be taken before redis binds it
		port := freePort(tb)
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", tb.TempDir(), "--loglevel", "warning"}, extraArgs...)
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitPing(addr, exited); lastErr == nil {
			tb.Cleanup(stop)
			return addr
		}
		stop()
	}
	tb.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// StartRedisCluster starts n redis-servers (n ≥ 3, Redis's least) as a Redis
// Cluster of n masters and no replicas on free loopback ports, the 16,384 slots split
// by redis-cli --cluster create; it returns once every node says cluster_state:ok and
// all nodes give the same slot map, and stops them when tb ends. Without redis-server
// or redis-cli it skips or fails tb as RedisTool does.
func StartRedisCluster(tb testing.TB, n int) []string {
	tb.Helper()
	if n < 3 {
		tb.Fatalf("StartRedisCluster: a Redis Cluster needs at least 3 masters, got %d", n)
	}
	cli := RedisTool(tb, "redis-cli")
	addrs := make([]string, n)
	for i := range addrs {
		// nodes.conf sits in the node's own --dir: one per node, as Redis requires.
		addrs[i] = StartRedis(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := waitClusterOK(ctx, addrs); err != nil {
		tb.Fatal(err)
	}
	return addrs
}

// clusterWait bounds forming a cluster: redis-cli --cluster create waits for the
// nodes to join (about a second on loopback), then gossip spreads the slot map.
const clusterWait = 30 * time.Second

// waitClusterOK waits until every node at addrs answers cluster_state:ok and the
// same CLUSTER SLOTS as the first: go-redis's ClusterClient reads the map from any
// one node, and a node that has not heard of the others yet would send it MOVED loops.
func waitClusterOK(ctx context.Context, addrs []string) error {
	rdbs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer rdbs[i].Close()
	}
	var last string
	for {
		var first string
		ok := true
		for i, rdb := range rdbs {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok, last = false, fmt.Sprintf("%s: %v %q", addrs[i], err, info)
				break
			}
			slots, err := slotMap(ctx, rdb)
			if err != nil {
				ok, last = false, fmt.Sprintf("%s: CLUSTER SLOTS: %v", addrs[i], err)
				break
			}
			if i == 0 {
				first = slots
			} else if slots != first {
				ok, last = false, fmt.Sprintf("%s says %s, %s says %s", addrs[0], first, addrs[i], slots)
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Redis Cluster did not settle within %v: %s", clusterWait, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// slotMap is a node's CLUSTER SLOTS as text, ranges in order: "0-5460@host:port ...".
func slotMap(ctx context.Context, rdb *redis.Client) (string, error) {
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	slices.SortFunc(slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	var b strings.Builder
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			return "", fmt.Errorf("slots %d-%d have no node", s.Start, s.End)
		}
		fmt.Fprintf(&b, "%d-%d@%s ", s.Start, s.End, s.Nodes[0].Addr)
	}
	return b.String(), nil
}

// freePort returns a loopback port for a Redis node, cluster-capable (lab.FreeClusterPort).
func freePort(tb testing.TB) int {
	tb.Helper()
	port, err := lab.FreeClusterPort()
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// waitPing waits up to 10 s for a server at addr to answer PING, giving up early
// once exited is closed.
func waitPing(addr string, exited <-chan struct{}) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = rdb.Ping(context.Background()).Err(); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return err
}

// DeadAddr returns a loopback address where nothing listens: connecting is refused.
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// StalledAddr returns the address of a loopback server that accepts connections and
// never answers, closed with its connections when tb ends.
func StalledAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
