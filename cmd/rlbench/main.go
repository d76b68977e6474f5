// Command rlbench reproduces the lesson (the Redis + Lua rate-limiting lab that
// docs/experiments.md describes) side by side on rlserver and on Redis running the
// reference Lua scripts, printing each figure beside the lesson's and writing
// results/<experiment>.json.
//
//	rlbench [flags] <experiment>
//	rlbench -start boundary
//	rlbench -rlserver 127.0.0.1:6380 -redis 127.0.0.1:6379 bench
//
// Experiments: boundary, nonatomic, memory, bench, overhead, e2e, all. boundary, bench and
// memory also draw results/<experiment>.png; all writes results/summary.md, each experiment's
// headline figure beside the lesson's. Traffic goes to loopback addresses only, and every
// loop is bounded in count and in time.
//
// scale, apart from all, starts its own servers (one rlserver, three in cluster mode, one
// redis-server, a three-master Redis Cluster), each in turn, and compares their aggregate
// throughput under the same load, writing results/scale.json and scale.png:
//
//	rlbench -scale-time 5s scale
//
// script prints a command's reference Lua script, to load into any Redis:
//
//	rlbench script rl.all | redis-cli -x SCRIPT LOAD
//
// client compares the Go client's auto-batching with go-redis's own pool, on an
// rlserver process it starts (make bench-client):
//
//	rlbench client [-rlserver-bin bin/rlserver] [-time 3s] [-goroutines 256]
//
// rls compares rlserver's Envoy rate limit service with envoyproxy/ratelimit on a
// redis-server, both started here, pinned apart from the load (make bench-rls):
//
//	rlbench rls [-rlserver-bin bin/rlserver] [-time 10s] [-streams 32] [-users 100000]
//
// overload offers an application of fixed capacity 0.5x to 3x its capacity, with no
// shedding, a static limit, failsafe-go's adaptive limiter, package shed, and three
// replicas sharing an RL.ACQUIRE limit on an rlserver process it starts, each in turn
// (make bench-overload; docs/overload.md):
//
//	rlbench overload [-workers 8] [-service 10ms] [-time 2s] [-warmup 1s] [-queue 100ms] [-rlserver-bin bin/rlserver]
//
// slices has 8 client processes call one hot key through the batched client, the
// Slicer (in-process decisions from RL.SLICE's slices) and count-then-flush, on an
// rlserver process it starts: decisions/s and round trips, then over-admission near
// the limit (make bench-slices):
//
//	rlbench slices [-rlserver-bin bin/rlserver] [-time 3s] [-windows 5] [-rate 100000]
//
// burst gives the lesson-002 figures on the real clock (a burst of 1000 on 100/s, a
// second sustained, three seconds at burst 1), rlserver beside golang.org/x/time/rate:
//
//	rlbench burst [-rlserver-bin bin/rlserver] [-goroutines 16] [-out results]
//
// groupcommit serves the least a RESP server does under appendfsync always (log a
// record a command, fdatasync, answer), in three models, for bench-persistence's
// ceilings (groupcommit.go):
//
//	rlbench groupcommit [-model conns|writer|loop] [-addr 127.0.0.1:16390] -file PATH
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

// config is what the flags set.
type config struct {
	rlserver string // rlserver address, empty to skip that side
	redis    string // Redis address, empty to skip that side
	start    bool   // launch both servers on loopback and stop them after
	out      string // results directory, empty for none

	users      int           // memory: users per algorithm (the log: a tenth of them)
	logCalls   int           // memory: most RL.LOG calls per side for the log-growth series
	requests   int           // bench: most commands per cell
	cellTime   time.Duration // bench: most time per cell
	depths     []int         // bench: pipeline depths
	clientSets []int         // bench: concurrent client counts
	e2eLimit   int           // e2e: the global limit per second
	e2eTime    time.Duration // e2e: how long the load runs per side
	e2eMax     int           // e2e: most requests per side

	rlserverBin  string        // scale: rlserver binary; empty builds ./cmd/rlserver
	scaleTime    time.Duration // scale: load time per target and round
	scaleRounds  int           // scale: rounds over the targets
	scaleClients int           // scale: concurrent load clients
	scaleDepth   int           // scale: pipeline depth
	scaleKeys    int           // scale: key space the keys are drawn from

	churnTime time.Duration // churn: how long the steady traffic runs
	churnLife time.Duration // churn: how long a key lives after its last admitted call
}

// experiment is one runnable experiment of the lab.
type experiment struct {
	name string
	run  func(ctx context.Context, cfg config, env *env, w io.Writer) (any, error)
}

// experiments is every experiment, in the order `all` runs them.
var experiments = []experiment{
	{"boundary", runBoundary},
	{"nonatomic", runNonatomic},
	{"memory", runMemory},
	{"bench", runBench},
	{"overhead", runOverhead},
	{"e2e", runE2E},
}

func main() {
	if spec := os.Getenv(overloadAppEnv); spec != "" {
		if err := runOverloadApp(spec); err != nil {
			fmt.Fprintln(os.Stderr, "rlbench overload app:", err)
			os.Exit(1)
		}
		return
	}
	if spec := os.Getenv(replicaEnv); spec != "" {
		if err := runReplica(spec); err != nil {
			fmt.Fprintln(os.Stderr, "rlbench replica:", err)
			os.Exit(1)
		}
		return
	}
	if spec := os.Getenv(slicesChildEnv); spec != "" {
		if err := runSlicesChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "rlbench slices client:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rlbench:", err)
		os.Exit(1)
	}
}

// run parses args, starts or connects to the servers, and runs the experiment
// they name, printing its table to w; `script <command>` only prints that script.
func run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) > 0 && args[0] == "script" {
		return runScript(args[1:], w)
	}
	if len(args) > 0 && args[0] == "client" {
		return runClientBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "rls" {
		return runRLSBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "edge" {
		return runEdgeBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "overload" {
		return runOverloadBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "slices" {
		return runSlicesBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "burst" {
		return runBurstBench(ctx, args[1:], w)
	}
	if len(args) > 0 && args[0] == "groupcommit" {
		return runGroupCommit(ctx, args[1:], w)
	}
	cfg, name, err := parseFlags(args)
	if err != nil {
		return err
	}
	if name == "churn" {
		fmt.Fprintln(w, "== churn ==")
		res, err := runChurn(ctx, cfg, w)
		if err != nil {
			return fmt.Errorf("churn: %w", err)
		}
		return writeResult(cfg.out, name, res)
	}
	if name == "scale" {
		fmt.Fprintln(w, "== scale ==")
		res, err := runScale(ctx, cfg, w)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		if err := writeResult(cfg.out, name, res); err != nil {
			return err
		}
		return writeCharts(cfg.out, name, res)
	}
	var todo []experiment
	for _, e := range experiments {
		if name == "all" || e.name == name {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return fmt.Errorf("unknown experiment %q: want boundary, nonatomic, memory, bench, overhead, e2e, all, scale or churn", name)
	}
	env, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer env.close()
	var summary []summaryRow
	for _, e := range todo {
		fmt.Fprintf(w, "== %s ==\n", e.name)
		res, err := e.run(ctx, cfg, env, w)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		if err := writeResult(cfg.out, e.name, res); err != nil {
			return err
		}
		if err := writeCharts(cfg.out, e.name, res); err != nil {
			return err
		}
		if h, ok := res.(headliner); ok {
			summary = append(summary, h.headline())
		}
		fmt.Fprintln(w)
	}
	if name == "all" {
		return writeSummary(cfg.out, summary)
	}
	return nil
}

// parseFlags reads the flags and the experiment's name, validating both.
func parseFlags(args []string) (config, string, error) {
	var cfg config
	fs := flag.NewFlagSet("rlbench", flag.ContinueOnError)
	fs.StringVar(&cfg.rlserver, "rlserver", "", "rlserver `address` (loopback)")
	fs.StringVar(&cfg.redis, "redis", "", "Redis `address` (loopback), running the reference scripts")
	fs.BoolVar(&cfg.start, "start", false, "start an in-process rlserver and a redis-server on loopback, stopped after (memory: a new rlserver process and redis-server per row)")
	fs.StringVar(&cfg.out, "out", "results", "results `dir` for <experiment>.json; empty for none")
	fs.IntVar(&cfg.users, "users", 100_000, "memory: users per algorithm (RL.LOG: a tenth, 100 entries each)")
	fs.IntVar(&cfg.logCalls, "log-calls", 200_000, "memory: most RL.LOG calls per side and limit in the growth series")
	fs.IntVar(&cfg.requests, "requests", 20_000, "bench, overhead: most commands (requests) per cell")
	fs.DurationVar(&cfg.cellTime, "cell-time", 2*time.Second, "bench, overhead: most time per cell")
	fs.IntVar(&cfg.e2eLimit, "e2e-limit", 500, "e2e: global limit per second")
	fs.DurationVar(&cfg.e2eTime, "e2e-time", 10*time.Second, "e2e: load duration per side")
	fs.IntVar(&cfg.e2eMax, "e2e-max", 2_000_000, "e2e: most requests per side")
	fs.StringVar(&cfg.rlserverBin, "rlserver-bin", "", "scale, churn, memory -start: rlserver `binary` to run; empty: go build ./cmd/rlserver")
	fs.DurationVar(&cfg.scaleTime, "scale-time", 2*time.Second, "scale: load time per target and round")
	fs.IntVar(&cfg.scaleRounds, "scale-rounds", 3, "scale: rounds, each loading every target in turn")
	fs.IntVar(&cfg.scaleClients, "scale-clients", 8, "scale: concurrent load clients")
	fs.IntVar(&cfg.scaleDepth, "scale-depth", 16, "scale: RL.TOKEN calls per pipeline")
	fs.IntVar(&cfg.scaleKeys, "scale-keys", 1_000_000, "scale: keys drawn at random from this many")
	fs.DurationVar(&cfg.churnTime, "churn-time", 10*time.Minute, "churn: how long the steady traffic runs")
	fs.DurationVar(&cfg.churnLife, "churn-life", 10*time.Minute, "churn: how long a key lives after its last admitted call")
	depths := fs.String("depths", "1,16", "bench: pipeline depths")
	clients := fs.String("clients", "1,8", "bench: concurrent clients")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rlbench [flags] boundary|nonatomic|memory|bench|overhead|e2e|all|scale|churn\n       rlbench script <command>\n       rlbench client [flags]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return cfg, "", errors.New("want exactly one experiment")
	}
	var err error
	if cfg.depths, err = intList(*depths); err != nil {
		return cfg, "", fmt.Errorf("-depths: %w", err)
	}
	if cfg.clientSets, err = intList(*clients); err != nil {
		return cfg, "", fmt.Errorf("-clients: %w", err)
	}
	if fs.Arg(0) == "scale" {
		switch {
		case cfg.rlserver != "" || cfg.redis != "":
			return cfg, "", errors.New("scale starts its own servers: drop -rlserver and -redis")
		case cfg.scaleTime <= 0 || cfg.scaleRounds < 1 || cfg.scaleClients < 1 || cfg.scaleDepth < 1 || cfg.scaleKeys < 1:
			return cfg, "", errors.New("-scale-time, -scale-rounds, -scale-clients, -scale-depth and -scale-keys must be positive")
		}
		return cfg, "scale", nil
	}
	if fs.Arg(0) == "churn" {
		switch {
		case cfg.rlserver != "" || cfg.redis != "":
			return cfg, "", errors.New("churn starts its own rlserver: drop -rlserver and -redis")
		case cfg.users < 1 || cfg.churnTime <= 0 || cfg.churnLife < time.Millisecond:
			return cfg, "", errors.New("-users, -churn-time and -churn-life (at least 1ms) must be positive")
		}
		return cfg, "churn", nil
	}
	switch {
	case cfg.start && (cfg.rlserver != "" || cfg.redis != ""):
		return cfg, "", errors.New("-start launches its own servers: drop -rlserver and -redis")
	case !cfg.start && cfg.rlserver == "" && cfg.redis == "":
		return cfg, "", errors.New("nothing to measure: give -rlserver, -redis, or -start")
	case cfg.users < 10:
		return cfg, "", errors.New("-users must be at least 10")
	case cfg.logCalls < 10:
		return cfg, "", errors.New("-log-calls must be at least 10")
	case cfg.requests < 1 || cfg.cellTime <= 0:
		return cfg, "", errors.New("-requests and -cell-time must be positive")
	case cfg.e2eLimit < 1 || cfg.e2eTime <= 0 || cfg.e2eMax < e2eConns:
		return cfg, "", fmt.Errorf("-e2e-limit and -e2e-time must be positive, -e2e-max at least %d", e2eConns)
	}
	for _, a := range []string{cfg.rlserver, cfg.redis} {
		if err := checkLoopback(a); err != nil {
			return cfg, "", err
		}
	}
	return cfg, fs.Arg(0), nil
}

// intList parses "1,16,64" into positive integers.
func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// checkLoopback refuses an address that is not on loopback: the experiments load
// a server hard, and must not do it to anything shared by mistake.
func checkLoopback(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not loopback: rlbench loads only local servers", addr)
	}
	return nil
}

// writeResult writes res as dir/name.json.
func writeResult(dir, name string, res any) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644)
}
