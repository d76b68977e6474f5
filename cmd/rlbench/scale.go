package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/lua"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// scaleNodes is how many nodes the clustered targets have: Redis Cluster's least
// number of masters.
const scaleNodes = 3

// scaleResult is scale.json.
type scaleResult struct {
	Clients int        `json:"clients"`
	Depth   int        `json:"pipeline_depth"`
	Keys    int        `json:"key_space"`
	Rounds  int        `json:"rounds"`
	Seconds float64    `json:"seconds_per_target_and_round"`
	CPUs    int        `json:"cpus"`
	Command string     `json:"command"`
	Rows    []scaleRow `json:"rows"`
}

// scaleRow is one target's figures over every round. Ratio is its ops/s over the
// single node's of the same side (1 for the single nodes themselves).
type scaleRow struct {
	Target    string    `json:"target"`
	Side      string    `json:"side"`
	Nodes     int       `json:"nodes"`
	Ops       int       `json:"ops"`
	PerSecond float64   `json:"per_second"`
	Rounds    []float64 `json:"per_second_by_round"`
	Ratio     float64   `json:"ratio_to_one_node"`
	P50Ms     float64   `json:"p50_ms"`
	P99Ms     float64   `json:"p99_ms"`
	NodeKeys  []int64   `json:"keys_per_node"`
}

// scaleRequest is every call of the load: a bucket of 1,000 per day. A key gets a
// few calls in a run, so each call is allowed and writes (the costly path), and
// keeps its key for a day's thousandth (86 s), so the keys per node show the
// spread after the run.
var scaleRequest = lab.Request(algo.KindToken, 1000, 86_400_000)

// scaleTarget is one deployment under load: its client (a *redis.Client for one
// node, a *redis.ClusterClient for a cluster) and the nodes' addresses.
type scaleTarget struct {
	name   string
	side   string // "rlserver" or "redis+lua"
	script bool
	addrs  []string
	client redis.UniversalClient
}

// runScale measures the aggregate throughput of one rlserver, three rlserver nodes
// in cluster mode, one redis-server running the token script, and a three-master
// Redis Cluster running it, under the same load: -scale-clients goroutines sending
// pipelines of -scale-depth RL.TOKEN calls on keys drawn at random from -scale-keys.
// It starts every server itself, on loopback, then loads each target in turn for
// -scale-time, -scale-rounds times over: on a shared machine a burst of someone
// else's work then falls on one round of one target, not on a whole target.
func runScale(ctx context.Context, cfg config, w io.Writer) (scaleResult, error) {
	res := scaleResult{Clients: cfg.scaleClients, Depth: cfg.scaleDepth, Keys: cfg.scaleKeys, Rounds: cfg.scaleRounds,
		Seconds: cfg.scaleTime.Seconds(), CPUs: runtime.NumCPU(),
		Command: fmt.Sprintf("rl.token %d per %d ms", scaleRequest.Limit, scaleRequest.Window/1000)}
	dir, bin, err := rlserverIn(ctx, cfg.rlserverBin, "scale")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var s stopper
	defer s.stop()
	starts := []struct {
		name, side string
		start      func(dir string) (scaleTarget, error)
	}{
		{"rlserver", "rlserver", func(dir string) (scaleTarget, error) {
			return startRLServers(bin, dir, 1, cfg.scaleClients, &s)
		}},
		{"rlserver cluster", "rlserver", func(dir string) (scaleTarget, error) {
			return startRLServers(bin, dir, scaleNodes, cfg.scaleClients, &s)
		}},
		{"redis+lua", "redis+lua", func(dir string) (scaleTarget, error) {
			return startRedisNodes(ctx, dir, 1, cfg.scaleClients, &s)
		}},
		{"redis cluster+lua", "redis+lua", func(dir string) (scaleTarget, error) {
			return startRedisNodes(ctx, dir, scaleNodes, cfg.scaleClients, &s)
		}},
	}
	var targets []scaleTarget
	for i, st := range starts {
		tdir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(tdir, 0o755); err != nil {
			return res, err
		}
		tg, err := st.start(tdir)
		if err != nil {
			return res, fmt.Errorf("%s: %w", st.name, err)
		}
		tg.name, tg.side = st.name, st.side
		targets = append(targets, tg)
	}

	hists := make([]histogram, len(targets))
	elapsed := make([]time.Duration, len(targets))
	res.Rows = make([]scaleRow, len(targets))
	prefix := fmt.Sprintf("scale:%d:", time.Now().UnixNano())
	bar := newProgress(cfg.scaleRounds*len(targets), "scale")
	defer bar.done()
	for range cfg.scaleRounds {
		for i, tg := range targets {
			h, took, err := scaleLoad(ctx, cfg, tg, prefix)
			if err != nil {
				return res, fmt.Errorf("%s: %w", tg.name, err)
			}
			hists[i].merge(&h)
			elapsed[i] += took
			res.Rows[i].Rounds = append(res.Rows[i].Rounds, float64(h.total)/took.Seconds())
			bar.add(1)
		}
	}
	for i, tg := range targets {
		r := &res.Rows[i]
		r.Target, r.Side, r.Nodes = tg.name, tg.side, len(tg.addrs)
		r.Ops = int(hists[i].total)
		r.PerSecond = float64(hists[i].total) / elapsed[i].Seconds()
		r.P50Ms, r.P99Ms = hists[i].quantile(0.50), hists[i].quantile(0.99)
		// Each node's keys: how the load spread over the nodes.
		for _, a := range tg.addrs {
			c := newClient(a)
			n, err := c.DBSize(ctx).Result()
			c.Close()
			if err != nil {
				return res, fmt.Errorf("%s: DBSIZE: %w", a, err)
			}
			r.NodeKeys = append(r.NodeKeys, n)
		}
	}
	for i := range res.Rows {
		for _, base := range res.Rows {
			if base.Side == res.Rows[i].Side && base.Nodes == 1 && base.PerSecond > 0 {
				res.Rows[i].Ratio = res.Rows[i].PerSecond / base.PerSecond
			}
		}
	}
	fmt.Fprintf(w, "aggregate throughput, %d clients x pipelines of %d RL.TOKEN calls on %d random keys, %d rounds of %v per target, %d CPUs:\n",
		res.Clients, res.Depth, res.Keys, res.Rounds, cfg.scaleTime, res.CPUs)
	t := newTable("target", "nodes", "ops", "ops/s", "rounds min-max", "x one node", "p50 ms", "p99 ms", "keys per node")
	for _, r := range res.Rows {
		var keys []string
		for _, k := range r.NodeKeys {
			keys = append(keys, strconv.FormatInt(k, 10))
		}
		t.row(r.Target, strconv.Itoa(r.Nodes), strconv.Itoa(r.Ops), strconv.FormatFloat(r.PerSecond, 'f', 0, 64),
			strconv.FormatFloat(slices.Min(r.Rounds), 'f', 0, 64)+"-"+strconv.FormatFloat(slices.Max(r.Rounds), 'f', 0, 64),
			strconv.FormatFloat(r.Ratio, 'f', 2, 64), ms(r.P50Ms), ms(r.P99Ms), strings.Join(keys, " / "))
	}
	t.write(w)
	return res, nil
}

// scaleLoad runs one round of the load on tg and returns the calls' round trips
// and the round's time. Each client first sends one pipeline untimed (its
// connections dialled, the script cached on every node), then all send pipelines
// until -scale-time is up.
func scaleLoad(ctx context.Context, cfg config, tg scaleTarget, prefix string) (histogram, time.Duration, error) {
	script := lua.Named(scaleRequest.Kind.Command())
	send := func(pipe redis.Pipeliner, rng *rand.Rand) error {
		for range cfg.scaleDepth {
			key := prefix + strconv.Itoa(rng.IntN(cfg.scaleKeys))
			if tg.script {
				pipe.EvalSha(ctx, script.SHA1, []string{key}, lua.Args(scaleRequest)...)
			} else {
				pipe.Do(ctx, lab.Command(scaleRequest, key, nil)...)
			}
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			return err
		}
		for _, c := range cmds {
			if ok, err := allowed(scaleRequest.Kind, c.(*redis.Cmd)); err != nil || !ok {
				return fmt.Errorf("%v: %v, allowed %v: want an allowed five-integer reply", c.Args(), err, ok)
			}
		}
		return nil
	}
	hists := make([]histogram, cfg.scaleClients)
	errs := make([]error, cfg.scaleClients)
	var warm, done sync.WaitGroup
	warm.Add(cfg.scaleClients)
	begin := make(chan struct{})
	var deadline time.Time
	for c := range cfg.scaleClients {
		done.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			pipe := tg.client.Pipeline()
			errs[c] = send(pipe, rng)
			warm.Done()
			<-begin
			for errs[c] == nil && time.Now().Before(deadline) {
				start := time.Now()
				if errs[c] = send(pipe, rng); errs[c] == nil {
					hists[c].record(time.Since(start), cfg.scaleDepth)
				}
			}
		})
	}
	warm.Wait()
	began := time.Now()
	deadline = began.Add(cfg.scaleTime)
	close(begin)
	done.Wait()
	took := time.Since(began)
	var h histogram
	for c := range hists {
		h.merge(&hists[c])
	}
	return h, took, errors.Join(errs...)
}

// stopper stops what runScale started (processes, clients), in reverse order.
type stopper struct{ stops []func() }

func (s *stopper) add(f func()) { s.stops = append(s.stops, f) }

func (s *stopper) stop() {
	for _, f := range slices.Backward(s.stops) {
		f()
	}
}

// rlserverIn makes a temporary directory for an experiment that runs rlserver as a
// process of its own, as deployed, and returns it with the binary to run: bin
// (-rlserver-bin), or cmd/rlserver built into the directory. The caller removes dir.
func rlserverIn(ctx context.Context, bin, experiment string) (dir, binary string, err error) {
	if dir, err = os.MkdirTemp("", "rlbench-"+experiment+"-"); err != nil {
		return "", "", err
	}
	if bin == "" {
		if bin, err = launch.BuildRLServer(ctx, dir); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("%w (or give -rlserver-bin)", err)
		}
	}
	return dir, bin, nil
}

// startRLServers starts n rlserver processes (built from cmd/rlserver: the scale
// experiment runs each node as deployed, where the other experiments run rlserver in
// rlbench's process) on free loopback ports, in cluster mode (-cluster-nodes,
// -cluster-self) when n > 1, and returns a client for them: a ClusterClient over a
// cluster.
func startRLServers(bin, dir string, n, clients int, s *stopper) (scaleTarget, error) {
	addrs, err := launch.FreeAddrs(n)
	if err != nil {
		return scaleTarget{}, err
	}
	for i, addr := range addrs {
		args := []string{"-loglevel", "WARN"}
		if n > 1 {
			args = append(args, "-cluster-nodes", strings.Join(addrs, ","), "-cluster-self", strconv.Itoa(i))
		}
		p, err := launch.RLServerAt(bin, dir, addr, args...)
		if err != nil {
			return scaleTarget{}, err
		}
		s.add(p.Kill)
	}
	c := scaleClient(addrs, clients)
	s.add(func() { c.Close() })
	return scaleTarget{addrs: addrs, client: c}, nil
}

// startRedisNodes starts one redis-server, or a Redis Cluster of n masters when
// n > 1, loads the token script on every node and returns a client.
func startRedisNodes(ctx context.Context, dir string, n, clients int, s *stopper) (scaleTarget, error) {
	var nodes []*launch.Proc
	if n == 1 {
		p, err := launch.Redis(dir)
		if err != nil {
			return scaleTarget{}, err
		}
		nodes = append(nodes, p)
	} else {
		var err error
		if nodes, err = launch.RedisCluster(ctx, dir, n); err != nil {
			return scaleTarget{}, err
		}
	}
	var addrs []string
	for _, p := range nodes {
		s.add(p.Kill)
		addrs = append(addrs, p.Addr)
	}
	c := scaleClient(addrs, clients)
	s.add(func() { c.Close() })
	// A ClusterClient loads a script on every master.
	if err := c.ScriptLoad(ctx, lua.Named(algo.KindToken.Command()).Source).Err(); err != nil {
		return scaleTarget{}, fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	return scaleTarget{addrs: addrs, client: c, script: true}, nil
}

// scaleClient is a client that never retries, with a connection per load
// client on each node: a *redis.Client for one address, a *redis.ClusterClient
// for several.
func scaleClient(addrs []string, clients int) redis.UniversalClient {
	if len(addrs) == 1 {
		return redis.NewClient(&redis.Options{Addr: addrs[0], MaxRetries: -1, PoolSize: clients})
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1, PoolSize: clients})
}

// scalePanels is one panel: each target's ops/s as a bar, coloured by side as
// the other charts colour their lines.
func scalePanels(r scaleResult) ([]*plot.Plot, error) {
	if len(r.Rows) == 0 {
		return nil, nil
	}
	p := newPanel(fmt.Sprintf("aggregate throughput, %d clients x depth %d, %d CPUs", r.Clients, r.Depth, r.CPUs),
		"", "RL.TOKEN calls per second")
	p.Legend.Left = false
	var names []string
	inLegend := map[string]bool{}
	for i, row := range r.Rows {
		names = append(names, fmt.Sprintf("%s (%d)", row.Target, row.Nodes))
		bar, err := plotter.NewBarChart(plotter.Values{row.PerSecond}, vg.Points(40))
		if err != nil {
			return nil, err
		}
		bar.XMin = float64(i)
		bar.Color = plotutil.Color(slices.Index(sides, row.Side))
		p.Add(bar)
		if !inLegend[row.Side] {
			p.Legend.Add(row.Side, bar)
			inLegend[row.Side] = true
		}
	}
	p.NominalX(names...)
	return []*plot.Plot{p}, nil
}
