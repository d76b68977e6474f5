package rlserver_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testenv"
)

// Sizes of BenchmarkReshard.
const (
	benchReshardKeys    = 1_000_000 // counter keys on the first node, some 61 a slot
	benchReshardClients = 8         // ClusterClient goroutines timing their calls
)

// BenchmarkReshard moves a quarter of the slots of a node holding a million
// RL.FIXED keys to an empty one with redis-cli --cluster reshard (pipeline 100: a
// slot's keys in one MIGRATE) while 8 ClusterClient goroutines call random keys,
// and reports the keys moved per second and the p99 of the calls during the move
// against the p99 over as long before it. By hand (make bench-reshard):
//
//	go test -run '^$' -bench '^BenchmarkReshard$' -benchtime 1x -v .
func BenchmarkReshard(b *testing.B) {
	needBinaries(b)
	cli := testenv.RedisTool(b, "redis-cli")
	for range b.N {
		nodes := startEnabled(b, 2, "")
		ctx := context.Background()
		a, n := nodes[0].proc.client, nodes[1].proc.client
		if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
			b.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(nodes[0].addr)
		if err := n.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			b.Fatal(err)
		}
		waitKnown(b, nodes, 2)
		for from := 0; from < benchReshardKeys; from += 10_000 {
			if _, err := a.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := from; i < from+10_000; i++ {
					p.Do(ctx, "RL.FIXED", reshardKey(i), 1_000_000, 600000)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, PoolSize: 64})
		before := timeCalls(b, cc, 5*time.Second, nil)
		id, err := n.ClusterMyID(ctx).Result()
		if err != nil {
			b.Fatal(err)
		}
		aID, _ := a.ClusterMyID(ctx).Result()
		done := make(chan struct{})
		var during []time.Duration
		var wg sync.WaitGroup
		wg.Go(func() { during = timeCalls(b, cc, 0, done) })
		began := time.Now()
		redisCLI(b, cli, "--cluster", "reshard", nodes[0].addr, "--cluster-from", aID, "--cluster-to", id,
			"--cluster-slots", "4096", "--cluster-yes", "--cluster-pipeline", "100")
		took := time.Since(began)
		close(done)
		wg.Wait()
		cc.Close()
		sizes := dbsizes(b, nodes)
		if sum(sizes) != benchReshardKeys {
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
}

// timeCalls times RL.FIXED calls on random keys from benchReshardClients
// goroutines, for d or until done is closed.
func timeCalls(b *testing.B, cc *redis.ClusterClient, d time.Duration, done chan struct{}) []time.Duration {
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
				if err := cc.Do(context.Background(), "RL.FIXED", reshardKey(i%benchReshardKeys), 1_000_000, 600000).Err(); err != nil {
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
