package ha_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
)

// BenchmarkReplication is make bench-replication. On loopback, in one run, it
// measures the throughput redis-benchmark gets from a primary with 2 replicas and from
// one with none (RL.TOKEN over 1M keys, 50 connections, -P 16), three rounds in turn,
// medians (the replicas' processes share this machine's cores with the primary); the
// replication lag meanwhile (a key written on the loaded primary, polled on both
// replicas); and the failover time after kill -9 of the loaded primary watched by three
// Sentinels (quorum 2, down-after 1000 ms), until a Sentinel names a replica that says
// role:master, with the lag at the kill in bytes of effects. By hand:
//
//	go test -run '^$' -bench '^BenchmarkReplication$' -benchtime 1x -v ./test/ha/
func BenchmarkReplication(b *testing.B) {
	needBinaries(b)
	bench := testenv.RedisTool(b, "redis-benchmark")
	for range b.N {
		alone := startRL(b, "alone")
		set := startHA(b, false)
		var rpsAlone, rpsReplicated []float64
		var lags []time.Duration
		for range 3 {
			rpsAlone = append(rpsAlone, redisBenchmark(b, bench, alone.addr, 300_000))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { lags = append(lags, probeLag(b, set, stop)...) })
			rpsReplicated = append(rpsReplicated, redisBenchmark(b, bench, set.primary.addr, 300_000))
			close(stop)
			wg.Wait()
		}
		alone.kill()
		slices.Sort(rpsAlone)
		slices.Sort(rpsReplicated)
		slices.Sort(lags)
		none, two := rpsAlone[1], rpsReplicated[1]
		b.ReportMetric(none, "rps-0-replicas")
		b.ReportMetric(two, "rps-2-replicas")
		b.ReportMetric(100*(1-two/none), "%-slower")
		if len(lags) > 0 {
			b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
			b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "lag-max-ms")
		}
		b.Logf("RL.TOKEN -P 16: %.0f req/s with no replica, %.0f with 2 (%.1f%% lower); lag under load p50 %v, max %v over %d probes",
			none, two, 100*(1-two/none), lags[len(lags)/2], lags[len(lags)-1], len(lags))
		for _, n := range append(set.replicas, set.primary) {
			n.kill()
		}

		// Failover under load.
		ha := startHA(b, true)
		ctx, cancel := context.WithCancel(context.Background())
		host, port, _ := net.SplitHostPort(ha.primary.addr)
		load := exec.CommandContext(ctx, bench, "-h", host, "-p", port, "-a", haPass, "--threads", "2",
			"-c", "50", "-r", "1000000", "-n", "100000000", "-P", "16", "-q", "RL.TOKEN", "key:__rand_int__", "100", "60000")
		if err := load.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		offset, _ := strconv.ParseInt(ha.primary.info("master_repl_offset"), 10, 64)
		killed := time.Now()
		ha.primary.kill()
		var behind []int64
		for _, r := range ha.replicas {
			o, _ := strconv.ParseInt(r.info("slave_repl_offset"), 10, 64)
			behind = append(behind, offset-o)
		}
		cancel()
		load.Wait()
		failover := poll.Until(b, 30*time.Second, "failover", func() bool {
			addr := masterAddr(ha.sentinels[0])
			for _, r := range ha.replicas {
				if r.addr == addr && r.info("role") == "master" {
					return true
				}
			}
			return false
		})
		b.ReportMetric(float64(failover.Milliseconds()), "failover-ms")
		b.ReportMetric(float64(slices.Max(behind)), "lag-at-kill-bytes")
		b.Logf("failover %v after kill -9 (down-after 1000 ms); the replicas were %v bytes behind the offset "+
			"read just before the kill (negative: they had more, the primary kept writing), at %s",
			failover, behind, killed.Format(time.RFC3339))
	}
}

// redisBenchmark runs redis-benchmark's RL.TOKEN at -P 16 on addr and returns req/s.
func redisBenchmark(tb testing.TB, bench, addr string, n int) float64 {
	tb.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(bench, "-h", host, "-p", port, "-a", haPass, "--threads", "2", "-c", "50",
		"-r", "1000000", "-n", strconv.Itoa(n), "-P", "16", "--csv",
		"RL.TOKEN", "key:__rand_int__", "100", "60000").Output()
	if err != nil {
		tb.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Split(lines[len(lines)-1], `","`)
	if len(f) < 2 {
		tb.Fatalf("redis-benchmark said %q", out)
	}
	rps, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
	if err != nil {
		tb.Fatalf("redis-benchmark said %q", out)
	}
	return rps
}

// probeLag writes a key on the primary every 50 ms until stop and returns how long
// each took to show on both replicas.
func probeLag(tb testing.TB, set *haSet, stop <-chan struct{}) []time.Duration {
	ctx := context.Background()
	var lags []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return lags
		case <-time.After(50 * time.Millisecond):
		}
		key := fmt.Sprintf("probe:%d:%d", time.Now().UnixNano(), i)
		if set.primary.rdb.Do(ctx, "RL.FIXED", key, 5, 86400000).Err() != nil {
			continue
		}
		begin := time.Now()
		for _, r := range set.replicas {
			for r.rdb.Exists(ctx, key).Val() != 1 && time.Since(begin) < 5*time.Second {
				time.Sleep(100 * time.Microsecond)
			}
		}
		lags = append(lags, time.Since(begin))
	}
}
