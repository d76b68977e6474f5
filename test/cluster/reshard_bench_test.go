package cluster_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// Sizes of BenchmarkReshard.
const (
	benchReshardKeys    = 1_000_000 // counter keys on the first node, some 61 a slot
	benchReshardClients = 8         // ClusterClient goroutines timing their calls
)

// reshardSide is one server of BenchmarkReshard: its two cluster nodes (the first
// owning every slot, the second empty), the call that makes a key and the counter
// call the clients make.
type reshardSide struct {
	addrs      [2]string
	clients    [2]*redis.Client
	load, call func(key string) []any
}

// BenchmarkReshard moves a quarter of the slots of a node holding a million counter
// keys to an empty one with redis-cli --cluster reshard (pipeline 100: a slot's keys
// in one MIGRATE) while 8 ClusterClient goroutines call random keys, and reports the
// keys moved per second and the p99 of the calls during the move against the p99
// over as long before it. Beside rlserver's RL.FIXED keys, the same on two Redis
// Cluster nodes with INCR keys of a 10-minute TTL, in the same run: redis-cli's
// round trips a slot bound both. By hand (make bench-reshard):
//
//	go test -run '^$' -bench '^BenchmarkReshard$' -benchtime 1x -v ./test/cluster/
func BenchmarkReshard(b *testing.B) {
	needBinaries(b)
	cli := testenv.RedisTool(b, "redis-cli")
	b.Run("rlserver", func(b *testing.B) {
		for range b.N {
			nodes := startEnabled(b, 2, "")
			fixed := func(k string) []any { return []any{"RL.FIXED", k, 1_000_000, 600000} }
			side := &reshardSide{load: fixed, call: fixed}
			for i, n := range nodes {
				side.addrs[i], side.clients[i] = n.addr, n.proc.client
			}
			benchReshard(b, cli, side, func() { waitKnown(b, nodes, 2) })
		}
	})
	b.Run("redis", func(b *testing.B) {
		for range b.N {
			side := &reshardSide{
				load: func(k string) []any { return []any{"SET", k, 1, "PX", 600000} },
				call: func(k string) []any { return []any{"INCR", k} },
			}
			for i := range side.addrs {
				dir := b.TempDir()
				p, err := launch.Redis(dir, "--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(p.Kill)
				side.addrs[i] = p.Addr
				side.clients[i] = redis.NewClient(&redis.Options{Addr: p.Addr})
				b.Cleanup(func() { side.clients[i].Close() })
			}
			benchReshard(b, cli, side, func() {
				for _, c := range side.clients {
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						info, _ := c.ClusterInfo(context.Background()).Result()
						if strings.Contains(info, "cluster_known_nodes:2\r\n") && strings.Contains(info, "cluster_state:ok\r\n") {
							break
						}
						if time.Now().After(deadline) {
							b.Fatalf("the Redis nodes do not know each other, or are down: %s", info)
						}
					}
				}
			})
		}
	})
}

// benchReshard gives the first node of side every slot and a million keys, meets
// the second, then times the reshard of a quarter of the slots under the calls.
func benchReshard(b *testing.B, cli string, side *reshardSide, waitMet func()) {
	ctx := context.Background()
	a, n := side.clients[0], side.clients[1]
	if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		b.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(side.addrs[0])
	if err := n.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		b.Fatal(err)
	}
	waitMet()
	for from := 0; from < benchReshardKeys; from += 10_000 {
		if _, err := a.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < from+10_000; i++ {
				p.Do(ctx, side.load(reshardKey(i))...)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{side.addrs[0]}, PoolSize: 64})
	defer cc.Close()
	before := timeCalls(b, cc, side, 5*time.Second, nil)
	id, err := n.ClusterMyID(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	aID, _ := a.ClusterMyID(ctx).Result()
	done := make(chan struct{})
	var during []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { during = timeCalls(b, cc, side, 0, done) })
	began := time.Now()
	redisCLI(b, cli, "--cluster", "reshard", side.addrs[0], "--cluster-from", aID, "--cluster-to", id,
		"--cluster-slots", "4096", "--cluster-yes", "--cluster-pipeline", "100")
	took := time.Since(began)
	close(done)
	wg.Wait()
	var sizes [2]int64
	for i, c := range side.clients {
		if sizes[i], err = c.DBSize(ctx).Result(); err != nil {
			b.Fatal(err)
		}
	}
	if sizes[0]+sizes[1] != benchReshardKeys {
		b.Fatalf("DBSIZE %v after the reshard, want %d keys in all", sizes, benchReshardKeys)
	}
	moved := sizes[1]
	p99b, p99d := p99(before), p99(during)
	b.ReportMetric(float64(moved)/took.Seconds(), "keys/s")
	b.ReportMetric(float64(p99b.Microseconds())/1000, "p99-before-ms")
	b.ReportMetric(float64(p99d.Microseconds())/1000, "p99-during-ms")
	b.Logf("%d keys moved in %v (%.0f keys/s); call p99 %v before (%d calls), %v during (%d calls)",
		moved, took, float64(moved)/took.Seconds(), p99b, len(before), p99d, len(during))
}

// timeCalls times side's calls on random keys from benchReshardClients
// goroutines, for d or until done is closed.
func timeCalls(b *testing.B, cc *redis.ClusterClient, side *reshardSide, d time.Duration, done chan struct{}) []time.Duration {
	if done == nil {
		done = make(chan struct{})
		time.AfterFunc(d, func() { close(done) })
	}
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	for g := range benchReshardClients {
		wg.Go(func() {
			var mine []time.Duration
			for i := g; ; i += 7919 {
				select {
				case <-done:
					mu.Lock()
					all = append(all, mine...)
					mu.Unlock()
					return
				default:
				}
				start := time.Now()
				if err := cc.Do(context.Background(), side.call(reshardKey(i%benchReshardKeys))...).Err(); err != nil {
					b.Error(err)
				}
				mine = append(mine, time.Since(start))
			}
		})
	}
	wg.Wait()
	return all
}

// p99 is the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)*99/100]
}
