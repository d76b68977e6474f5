package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// rlsPolicy is the benchmark's policy, in envoyproxy/ratelimit's format so both
// servers load the same file: a rule per descriptor key (user, and k2…k5 for the
// requests of 5 descriptors), a limit no user of the run reaches.
const rlsPolicy = `domain: bench
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: k2
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: k3
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: k4
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: k5
    rate_limit: {unit: hour, requests_per_unit: 1000000}
`

// rlsKeys are the descriptor keys of rlsPolicy, in the order a request takes them.
var rlsKeys = []string{"user", "k2", "k3", "k4", "k5"}

// rlsTarget is one side of the benchmark: a gRPC address and the processes behind it.
type rlsTarget struct {
	name  string
	addr  string
	procs []*launch.Proc // the server's processes (theirs: ratelimit and redis-server)
	redis string         // theirs: redis-server's address, for its key count
	conn  *grpc.ClientConn
	sink  *spanSink // the traced rlserver's OTLP receiver
}

// runRLSBench is `rlbench rls` (make bench-rls): ShouldRateLimit/s of 1 and of 5 descriptors
// over -users users at -streams concurrent streams, rlserver's -rls-addr against
// envoyproxy/ratelimit on a redis-server, all started here on loopback, the servers
// pinned to -server-cpu and this load generator to -load-cpu (taskset), each side
// loaded in turn, in alternating order over -rounds rounds. Then, on fresh keys, the
// RSS each server's processes grow by per active descriptor value, once settled. The
// headlines:
//
//	bench-rls: rlserver <n> vs envoyproxy/ratelimit <m> ShouldRateLimit/s = <r>x; p50 ...; p99 ...
//	bench-rls descriptors: a request of 5 costs <r>x one of 1 on rlserver (...), <r>x on envoyproxy/ratelimit
//	bench-rls tracing: rlserver -tracing at 1% sampling <n> vs off <m> ShouldRateLimit/s = <r>x
//	bench-rls memory: rlserver <a> vs envoyproxy/ratelimit+redis <b> B RSS per active descriptor value = <r>x
//
// The tracing figure is a third server, rlserver with envoyproxy/ratelimit's tracing
// variables at TRACING_SAMPLING_RATE 0.01, exporting over OTLP/gRPC to a receiver in
// this process, loaded with requests of 1 descriptor in the same rounds.
func runRLSBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench rls", flag.ContinueOnError)
	bin := fs.String("rlserver-bin", "", "rlserver `binary`; empty: go build ./cmd/rlserver")
	theirBin := fs.String("ratelimit-bin", "", "envoyproxy/ratelimit's service_cmd `binary`; empty: $RATELIMIT_BIN, PATH, $(go env GOPATH)/bin")
	streams := fs.Int("streams", 32, "concurrent ShouldRateLimit streams")
	load := fs.Duration("time", 10*time.Second, "load time per side and round")
	rounds := fs.Int("rounds", 2, "rounds, each loading both sides")
	users := fs.Int("users", 100_000, "users drawn at random from this many (the descriptor's values)")
	serverCPU := fs.Int("server-cpu", 0, "CPU the servers are pinned to; -1: no pinning")
	loadCPU := fs.Int("load-cpu", 1, "CPU this load generator is pinned to; -1: no pinning")
	memUsers := fs.Int("memory-users", 100_000, "values made active for the memory figure; 0: skip it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *streams < 1 || *load <= 0 || *rounds < 1 || *users < 1 || *memUsers < 0 || fs.NArg() != 0 {
		return errors.New("rls: -streams, -time, -rounds and -users must be positive, and no argument follows the flags")
	}
	if *theirBin == "" {
		var err error
		if *theirBin, err = launch.RatelimitBin(); err != nil {
			return err
		}
	}
	dir, binary, err := rlserverIn(ctx, *bin, "rls")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := pinApart(*serverCPU, *loadCPU); err != nil {
		return err
	}
	ours, theirs, err := startRLSTargets(binary, *theirBin, dir, *serverCPU)
	for _, t := range []*rlsTarget{ours, theirs} {
		if t != nil {
			defer t.stop()
		}
	}
	if err != nil {
		return err
	}
	traced, spans, err := startTracedTarget(binary, dir, *serverCPU)
	if traced != nil {
		defer traced.stop()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== rls: ShouldRateLimit, 1 and 5 descriptors over %d users, %d streams, %v per side and round, %d rounds; servers on CPU %d, load on CPU %d ==\n",
		*users, *streams, *load, *rounds, *serverCPU, *loadCPU)
	targets := []*rlsTarget{ours, theirs, traced}
	// Five runs in one: each server with requests of 1 and of 5 descriptors, and the
	// traced rlserver with 1; run k of a round is (server, descriptors) =
	// runs[(k+r)%5], so who goes first alternates.
	runs := [][2]int{{0, 1}, {1, 1}, {0, 5}, {1, 5}, {2, 1}}
	reqs := map[int][]*pb.RateLimitRequest{1: rlsRequests("u", *users, 1), 5: rlsRequests("u", *users, 5)}
	hists := make([]histogram, len(runs))
	errs := make([]int, len(runs))
	took := make([]time.Duration, len(runs))
	for r := range *rounds {
		for k := range runs {
			i := (k + r) % len(runs) // a shared machine drifts
			h, e, d := spreadRLS(ctx, targets[runs[i][0]].conn, *streams, *load, reqs[runs[i][1]])
			hists[i].merge(&h)
			errs[i] += e
			took[i] += d
		}
	}
	t := newTable("server", "descriptors", "calls", "ShouldRateLimit/s", "p50 ms", "p99 ms", "errors")
	rate := make([]float64, len(runs))
	for i, run := range runs {
		rate[i] = float64(hists[i].total) / took[i].Seconds()
		t.row(targets[run[0]].name, strconv.Itoa(run[1]), strconv.Itoa(int(hists[i].total)), fmt.Sprintf("%.0f", rate[i]),
			ms(hists[i].quantile(0.5)), ms(hists[i].quantile(0.99)), strconv.Itoa(errs[i]))
	}
	t.write(w)
	fmt.Fprintf(w, "bench-rls: rlserver %.0f vs envoyproxy/ratelimit %.0f ShouldRateLimit/s = %.2fx; p50 %s vs %s ms; p99 %s vs %s ms\n",
		rate[0], rate[1], rate[0]/rate[1], ms(hists[0].quantile(0.5)), ms(hists[1].quantile(0.5)),
		ms(hists[0].quantile(0.99)), ms(hists[1].quantile(0.99)))
	fmt.Fprintf(w, "bench-rls descriptors: a request of 5 costs %.2fx one of 1 on rlserver (%.0f vs %.0f ShouldRateLimit/s), %.2fx on envoyproxy/ratelimit\n",
		rate[0]/rate[2], rate[2], rate[0], rate[1]/rate[3])
	fmt.Fprintf(w, "bench-rls tracing: rlserver -tracing at 1%% sampling %.0f vs off %.0f ShouldRateLimit/s = %.3fx; p50 %s vs %s ms; p99 %s vs %s ms; %d spans received\n",
		rate[4], rate[0], rate[4]/rate[0], ms(hists[4].quantile(0.5)), ms(hists[0].quantile(0.5)),
		ms(hists[4].quantile(0.99)), ms(hists[0].quantile(0.99)), spans.count())
	if *memUsers == 0 {
		return nil
	}
	return rlsMemory(ctx, w, targets[:2], *memUsers, *streams)
}

// startRLSTargets starts rlserver with -rls-addr, and envoyproxy/ratelimit on a
// redis-server, both under rlsPolicy, pinned to cpu (unless negative).
func startRLSTargets(ours, theirs, dir string, cpu int) (*rlsTarget, *rlsTarget, error) {
	cfgDir := filepath.Join(dir, "runtime", "rl", "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "bench.yaml"), []byte(rlsPolicy), 0o644); err != nil {
		return nil, nil, err
	}
	rlsAddr, err := launch.FreeAddr()
	if err != nil {
		return nil, nil, err
	}
	srv, err := launch.RLServer(ours, dir, "-loglevel", "WARN", "-rls-addr", rlsAddr, "-limits", cfgDir)
	if err != nil {
		return nil, nil, err
	}
	o := &rlsTarget{name: "rlserver", addr: rlsAddr, procs: []*launch.Proc{srv}}
	rds, err := launch.Redis(dir)
	if err != nil {
		return o, nil, err
	}
	th := &rlsTarget{name: "envoyproxy/ratelimit + redis-server", procs: []*launch.Proc{rds}, redis: rds.Addr}
	rl, _, err := launch.Ratelimit(theirs, dir, rds.Addr, filepath.Join(dir, "runtime"), "rl", "REDIS_POOL_SIZE=32")
	if err != nil {
		return o, th, err
	}
	th.addr, th.procs = rl.Addr, append(th.procs, rl)
	for _, t := range []*rlsTarget{o, th} {
		for _, p := range t.procs {
			if cpu >= 0 {
				if err := pin(p.Pid(), cpu); err != nil {
					return o, th, err
				}
			}
		}
		if t.conn, err = grpc.NewClient(t.addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			return o, th, err
		}
	}
	return o, th, nil
}

func (t *rlsTarget) stop() {
	if t.conn != nil {
		t.conn.Close()
	}
	for _, p := range t.procs {
		p.Stop()
	}
	if t.sink != nil {
		t.sink.srv.Stop() // after the server, which flushes its spans as it stops
	}
}

// pin moves every thread of process pid to cpu.
func pin(pid, cpu int) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", strconv.Itoa(cpu), strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -a -p -c %d %d: %v: %s (give -server-cpu -1 -load-cpu -1 not to pin)", cpu, pid, err, out)
	}
	return nil
}

// rlsRequests are n requests of domain bench, one per user prefix+i, each of the
// first descriptors keys of rlsKeys with the user as value, made before the load so
// that the generator spends its CPU on calls.
func rlsRequests(prefix string, n, descriptors int) []*pb.RateLimitRequest {
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		user := prefix + strconv.Itoa(i)
		r := &pb.RateLimitRequest{Domain: "bench"}
		for _, k := range rlsKeys[:descriptors] {
			r.Descriptors = append(r.Descriptors, &rlv3.RateLimitDescriptor{
				Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: k, Value: user}}})
		}
		reqs[i] = r
	}
	return reqs
}

// spreadRLS has n streams call ShouldRateLimit with random requests of reqs for d;
// an error or an answer but OK counts as an error.
func spreadRLS(ctx context.Context, conn *grpc.ClientConn, n int, d time.Duration, reqs []*pb.RateLimitRequest) (histogram, int, time.Duration) {
	c := pb.NewRateLimitServiceClient(conn)
	return spread(n, d, func(rng *rand.Rand) error {
		resp, err := c.ShouldRateLimit(ctx, reqs[rng.IntN(len(reqs))])
		if err == nil && resp.OverallCode != pb.RateLimitResponse_OK {
			err = errors.New(resp.OverallCode.String())
		}
		return err
	})
}

// rlsMemory makes n new descriptor values active on each side and prints the RSS
// its processes grew by, per value, and the keys the store holds.
func rlsMemory(ctx context.Context, w io.Writer, targets []*rlsTarget, n, streams int) error {
	reqs := rlsRequests("m", n, 1) // values no load phase used
	per := make([]float64, 2)
	t := newTable("server", "values", "RSS before MB", "RSS after MB", "B per value")
	for i, tg := range targets {
		before, err := rssOf(tg.procs)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var failed error
		var mu sync.Mutex
		c := pb.NewRateLimitServiceClient(tg.conn)
		for s := range streams {
			wg.Go(func() {
				for j := s; j < n; j += streams {
					if _, err := c.ShouldRateLimit(ctx, reqs[j]); err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		if failed != nil {
			return fmt.Errorf("%s: %w", tg.name, failed)
		}
		after, err := settledRSS(tg.procs)
		if err != nil {
			return err
		}
		per[i] = float64(after-before) / float64(n)
		t.row(tg.name, strconv.Itoa(n), fmt.Sprintf("%.1f", float64(before)/(1<<20)), fmt.Sprintf("%.1f", float64(after)/(1<<20)), fmt.Sprintf("%.0f", per[i]))
	}
	t.write(w)
	if keys, err := redisKeys(ctx, targets[1].redis); err == nil {
		fmt.Fprintf(w, "(redis-server holds %d keys)\n", keys)
	}
	fmt.Fprintf(w, "bench-rls memory: rlserver %.0f vs envoyproxy/ratelimit+redis %.0f B RSS per active descriptor value = %.2fx\n",
		per[0], per[1], per[0]/per[1])
	return nil
}

// settledRSS is rssOf once it has settled: after a burst of calls both servers' allocators
// hand back what they freed over a few seconds (Go's scavenger, jemalloc's decay), so
// the RSS right after the burst counts garbage the values do not hold. It samples every
// second until two samples differ by less than 0.5%, for at most 20 s.
func settledRSS(procs []*launch.Proc) (int64, error) {
	last, err := rssOf(procs)
	for range 20 {
		if err != nil {
			return 0, err
		}
		time.Sleep(time.Second)
		var now int64
		if now, err = rssOf(procs); err == nil && abs(now-last)*200 < last {
			return now, nil
		}
		last = now
	}
	return last, err
}

func abs(n int64) int64 { return max(n, -n) }

// rssOf sums the resident set of procs, from /proc.
func rssOf(procs []*launch.Proc) (int64, error) {
	var sum int64
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
		if err != nil {
			return 0, err
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err != nil {
					return 0, err
				}
				sum += kb << 10
			}
		}
	}
	return sum, nil
}

func redisKeys(ctx context.Context, addr string) (int64, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return rdb.DBSize(ctx).Result()
}

// pinApart gives the servers started after it one Go thread each (their start pins
// them to serverCPU), and pins this process, the load generator, to loadCPU with one
// thread of its own; a negative CPU pins nothing.
func pinApart(serverCPU, loadCPU int) error {
	if serverCPU >= 0 {
		os.Setenv("GOMAXPROCS", "1")
	}
	if loadCPU >= 0 {
		if err := pin(os.Getpid(), loadCPU); err != nil {
			return err
		}
		runtime.GOMAXPROCS(1)
	}
	return nil
}
