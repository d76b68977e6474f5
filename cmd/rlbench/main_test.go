package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/lua"
)

// runExperiment runs rlbench -start at a small size with args, decodes the
// experiment's JSON into res (unless nil) and returns the results directory. Without
// redis-server it skips, saying how to install it (fails under RLSERVER_REQUIRE_REDIS=1).
func runExperiment(t *testing.T, res any, args ...string) string {
	t.Helper()
	testenv.RedisTool(t, "redis-server")
	dir := t.TempDir()
	var out strings.Builder
	args = append([]string{"-start", "-out", dir}, args...)
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("rlbench %v: %v\n%s", args, err, out.String())
	}
	t.Log(out.String())
	if res == nil {
		return dir
	}
	b, err := os.ReadFile(filepath.Join(dir, args[len(args)-1]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, res); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkPNG fails unless dir/name is a PNG image of a plausible size.
func checkPNG(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 200 {
		t.Errorf("%s: %dx%d pixels, want at least 200x200", name, b.Dx(), b.Dy())
	}
}

func TestBoundary(t *testing.T) {
	var res boundaryResult
	checkPNG(t, runExperiment(t, &res, "boundary"), "boundary.png")
	const tolerance = 5 // admitted calls: the sides' bursts are the same moment, not the same µs
	exact := map[string]int{"rl.fixed": 200, "rl.log": 100}
	if len(res.Rows) != len(boundaryKinds) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(boundaryKinds))
	}
	for _, r := range res.Rows {
		if want, ok := exact[r.Algorithm]; ok && (r.RedisLua != want || r.RLServer != want) {
			t.Errorf("%s: redis+lua %d, rlserver %d, want %d on both", r.Algorithm, r.RedisLua, r.RLServer, want)
		}
		if d := r.RLServer - r.RedisLua; d < -tolerance || d > tolerance {
			t.Errorf("%s: redis+lua %d, rlserver %d: more than %d apart", r.Algorithm, r.RedisLua, r.RLServer, tolerance)
		}
		if r.RLServer > 2*res.Limit || r.RLServer < 1 {
			t.Errorf("%s: rlserver admitted %d in a window of limit %d", r.Algorithm, r.RLServer, res.Limit)
		}
	}
}

func TestNonatomic(t *testing.T) {
	var res nonatomicResult
	runExperiment(t, &res, "nonatomic")
	if want := 1 + 2*len(kinds); len(res.Rows) != want {
		t.Fatalf("%d rows, want %d", len(res.Rows), want)
	}
	for _, r := range res.Rows {
		want := 0
		if strings.HasPrefix(r.Mode, "INCR") {
			want = nonatomicUsers / 10
		}
		if r.WithoutTTL != want {
			t.Errorf("%s %s: %d keys without TTL, want %d", r.Side, r.Mode, r.WithoutTTL, want)
		}
	}
}

func TestMemory(t *testing.T) {
	var res memoryResult
	checkPNG(t, runExperiment(t, &res, "-users", "2000", "-log-calls", "2000", "memory"), "memory.png")
	bytes := map[string]memoryRow{}
	for _, r := range res.Rows {
		bytes[r.Algorithm] = r
		if r.RedisUsed <= 0 || r.ServerStore <= 0 {
			t.Errorf("%s: redis %.1f B, rlserver %.1f B per user: want both positive", r.Algorithm, r.RedisUsed, r.ServerStore)
		}
	}
	if log, fixed := bytes["rl.log"], bytes["rl.fixed"]; log.RedisUsed <= 2*fixed.RedisUsed || log.ServerStore <= fixed.ServerStore {
		t.Errorf("a 100-entry log takes %.1f B (redis), %.1f B (rlserver) per user, a fixed window %.1f B, %.1f B: want the log larger",
			log.RedisUsed, log.ServerStore, fixed.RedisUsed, fixed.ServerStore)
	}
	if len(res.LogGrowth) != len(logLimits) {
		t.Fatalf("%d log-growth rows, want %d", len(res.LogGrowth), len(logLimits))
	}
	first, last := res.LogGrowth[0], res.LogGrowth[len(res.LogGrowth)-1]
	if last.RedisUsed < 100*first.RedisUsed || last.ServerStore <= first.ServerStore {
		t.Errorf("log bytes per user at limit %d: redis %.1f, rlserver %.1f; at %d: %.1f, %.1f: want growth (redis ≥100x)",
			first.Limit, first.RedisUsed, first.ServerStore, last.Limit, last.RedisUsed, last.ServerStore)
	}
}

func TestBench(t *testing.T) {
	var res benchResult
	checkPNG(t, runExperiment(t, &res, "-requests", "200", "-cell-time", "500ms", "-depths", "1,4", "-clients", "1,2", "bench"), "bench.png")
	if want := (1 + 2*len(kinds)) * 2 * 2; len(res.Rows) != want {
		t.Fatalf("%d rows, want %d", len(res.Rows), want)
	}
	for _, r := range res.Rows {
		if r.Requests < 1 || r.Requests > 200 || r.PerSecond <= 0 {
			t.Errorf("%s %s depth %d clients %d: %d requests at %.0f/s", r.Side, r.Command, r.Depth, r.Clients, r.Requests, r.PerSecond)
		}
		if !(r.P50Ms > 0 && r.P50Ms <= r.P95Ms && r.P95Ms <= r.P99Ms) {
			t.Errorf("%s %s depth %d clients %d: p50 %v p95 %v p99 %v, want 0 < p50 ≤ p95 ≤ p99",
				r.Side, r.Command, r.Depth, r.Clients, r.P50Ms, r.P95Ms, r.P99Ms)
		}
	}
}

// TestHistogramQuantile checks the histogram against exact quantiles of known
// samples: within the buckets' 1/2^subBits precision.
func TestHistogramQuantile(t *testing.T) {
	check := func(name string, samples []time.Duration) {
		t.Helper()
		var h histogram
		for _, d := range samples {
			h.record(d, 1)
		}
		sorted := slices.Sorted(slices.Values(samples))
		for _, q := range []float64{0.5, 0.95, 0.99, 1} {
			exact := float64(sorted[int(math.Ceil(q*float64(len(sorted))))-1]) / 1e6
			if got := h.quantile(q); math.Abs(got-exact) > exact/(1<<subBits)+1e-6 {
				t.Errorf("%s: q%.2f = %v ms, exact %v ms", name, q, got, exact)
			}
		}
	}
	var linear, skewed []time.Duration
	for i := range 10_000 {
		linear = append(linear, time.Duration(i+1)*time.Microsecond)
		skewed = append(skewed, time.Duration(math.Pow(1.002, float64(i)))*time.Microsecond)
	}
	check("linear 1 µs .. 10 ms", linear)
	check("exponential 1 µs .. 485 ms", skewed)
	check("small ns", []time.Duration{1, 2, 3, 5, 8, 13, 21, 34})
}

func TestFlags(t *testing.T) {
	check := func(args []string, wantErr string) {
		t.Helper()
		_, _, err := parseFlags(args)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%v: %v", args, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%v: error %v, want one containing %q", args, err, wantErr)
		}
	}
	check([]string{"-start", "boundary"}, "")
	check([]string{"-rlserver", "127.0.0.1:6380", "-redis", "[::1]:6379", "bench"}, "")
	check([]string{"boundary"}, "nothing to measure")
	check([]string{"-start", "-redis", "127.0.0.1:6379", "boundary"}, "drop -rlserver")
	check([]string{"-rlserver", "10.0.0.1:6380", "boundary"}, "not loopback")
	check([]string{"-start", "-depths", "1,x", "bench"}, "-depths")
	check([]string{"-start"}, "exactly one experiment")
	check([]string{"-start", "-users", "1", "memory"}, "-users")
	check([]string{"scale"}, "")
	check([]string{"-redis", "127.0.0.1:6379", "scale"}, "drop -rlserver")
	check([]string{"-scale-depth", "0", "scale"}, "must be positive")
	check([]string{"-scale-rounds", "0", "scale"}, "must be positive")
}

func TestOverhead(t *testing.T) {
	var res overheadResult
	runExperiment(t, &res, "-requests", "200", "-cell-time", "2s", "overhead")
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows, want bare and one per side", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.Requests != 200 {
			t.Errorf("%s: %d requests timed, want 200", r.Endpoint, r.Requests)
		}
		if !(r.P50Ms > 0 && r.P50Ms <= r.P95Ms && r.P95Ms <= r.P99Ms) {
			t.Errorf("%s: p50 %v p95 %v p99 %v, want 0 < p50 ≤ p95 ≤ p99", r.Endpoint, r.P50Ms, r.P95Ms, r.P99Ms)
		}
		if got := r.P50Ms - res.Rows[0].P50Ms; math.Abs(got-r.AddedP50Ms) > 1e-9 {
			t.Errorf("%s: added p50 %v, want p50 - bare p50 = %v", r.Endpoint, r.AddedP50Ms, got)
		}
	}
}

func TestUnknownExperiment(t *testing.T) {
	err := run(context.Background(), []string{"-start", "-out", "", "e3e"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `unknown experiment "e3e"`) {
		t.Errorf("rlbench e3e: %v, want unknown experiment", err)
	}
}

// TestMain lets the test binary be e2e's app replica, the overload experiment's
// application and a bench-slices client process, as rlbench itself is.
func TestMain(m *testing.M) {
	if spec := os.Getenv(replicaEnv); spec != "" {
		if err := runReplica(spec); err != nil {
			fmt.Fprintln(os.Stderr, "rlbench replica:", err)
			os.Exit(1)
		}
		return
	}
	if spec := os.Getenv(overloadAppEnv); spec != "" {
		if err := runOverloadApp(spec); err != nil {
			fmt.Fprintln(os.Stderr, "rlbench overload app:", err)
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
	code := m.Run()
	launch.RemoveBuilt()
	os.Exit(code)
}

func TestE2E(t *testing.T) {
	var res e2eResult
	runExperiment(t, &res, "-e2e-limit", "200", "-e2e-time", "1s", "e2e")
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want one per side", len(res.Rows))
	}
	// A 1-s run under -race on a loaded machine: a looser bound than the lesson's 0.05%,
	// and only above. Below, a starved load generator (other tests on the same 2 cores)
	// sends too few requests to use the whole limit: 5-50% short was seen that way,
	// which says nothing of the limiter. Over-admitting would.
	const maxOverPct = 2
	for _, r := range res.Rows {
		if float64(r.Allowed) > r.Expected*(1+maxOverPct/100.0) || r.Limited == 0 {
			t.Errorf("%s: %d allowed of %.0f expected, %d x429: want at most %d%% over, and some 429s",
				r.Side, r.Allowed, r.Expected, r.Limited, maxOverPct)
		}
		if r.ServedUs <= 0 || r.RefusedUs <= 0 {
			t.Errorf("%s: a 200 took %.0f µs and a 429 %.0f µs: want both timed", r.Side, r.ServedUs, r.RefusedUs)
		}
	}
}

// TestAll runs every experiment at the smallest sizes and checks what `all`
// writes: a JSON per experiment, the three charts, and summary.md with a row per
// experiment, both sides filled in.
func TestAll(t *testing.T) {
	dir := runExperiment(t, nil, "-users", "10", "-log-calls", "10", "-requests", "50", "-cell-time", "200ms",
		"-depths", "1", "-clients", "1", "-e2e-limit", "50", "-e2e-time", "300ms", "all")
	for _, e := range experiments {
		if _, err := os.Stat(filepath.Join(dir, e.name+".json")); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"boundary.png", "bench.png", "memory.png"} {
		checkPNG(t, dir, name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(string(b)) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[cells[0]] = cells
	}
	for _, e := range experiments {
		cells, ok := rows[e.name]
		if !ok {
			t.Errorf("summary.md has no row for %s:\n%s", e.name, b)
			continue
		}
		if len(cells) != 5 || slices.Contains(cells[2:4], "-") {
			t.Errorf("summary.md row %q: want 5 cells, both sides measured", cells)
		}
	}
}

// TestScale runs scale briefly: four targets in order, each answering, the clusters
// spreading keys over all three nodes, ratios against the single node of each side.
func TestScale(t *testing.T) {
	testenv.RedisTool(t, "redis-cli")
	var res scaleResult
	const rounds, clients, depth = 2, 2, 4
	dir := runExperiment(t, &res, "-scale-time", "200ms", "-scale-rounds", fmt.Sprint(rounds), "-scale-clients", fmt.Sprint(clients),
		"-scale-depth", fmt.Sprint(depth), "-scale-keys", "100000", "scale")
	checkPNG(t, dir, "scale.png")
	want := []struct {
		target string
		nodes  int
	}{{"rlserver", 1}, {"rlserver cluster", 3}, {"redis+lua", 1}, {"redis cluster+lua", 3}}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	for i, r := range res.Rows {
		if r.Target != want[i].target || r.Nodes != want[i].nodes || len(r.NodeKeys) != r.Nodes {
			t.Errorf("row %d: %s, %d nodes, keys %v; want %s on %d nodes", i, r.Target, r.Nodes, r.NodeKeys, want[i].target, want[i].nodes)
		}
		if r.Ops <= 0 || r.PerSecond <= 0 || !(r.P50Ms > 0 && r.P50Ms <= r.P99Ms) {
			t.Errorf("%s: %d ops at %.0f/s, p50 %v p99 %v: want ops, 0 < p50 ≤ p99", r.Target, r.Ops, r.PerSecond, r.P50Ms, r.P99Ms)
		}
		if len(r.Rounds) != rounds || slices.Min(r.Rounds) <= 0 || r.PerSecond < slices.Min(r.Rounds) || r.PerSecond > slices.Max(r.Rounds) {
			t.Errorf("%s: %.0f ops/s, by round %v: want %d rounds, each answered, the whole between them", r.Target, r.PerSecond, r.Rounds, rounds)
		}
		var keys int64
		for _, n := range r.NodeKeys {
			if n <= 0 {
				t.Errorf("%s: keys per node %v: want every node to hold keys", r.Target, r.NodeKeys)
			}
			keys += n
		}
		// Keys are drawn at random: a few repeat, and each round's first pipeline per
		// client is not timed.
		if untimed := rounds * clients * depth; keys < int64(r.Ops)/2 || keys > int64(r.Ops+untimed) {
			t.Errorf("%s: %d keys after %d timed calls and %d untimed", r.Target, keys, r.Ops, untimed)
		}
		base := res.Rows[i-i%2] // the single node of the same side
		if got := r.PerSecond / base.PerSecond; math.Abs(got-r.Ratio) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", r.Target, r.Ratio, got)
		}
	}
}

// TestScript checks `rlbench script`: a known command prints exactly its reference
// script, in any case; anything else fails, naming the known commands.
func TestScript(t *testing.T) {
	check := func(args []string, want, wantErr string) {
		t.Helper()
		var out strings.Builder
		err := run(context.Background(), append([]string{"script"}, args...), &out)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("script %v: %v", args, err)
		case wantErr == "" && out.String() != want:
			t.Errorf("script %v: printed %d bytes, want the %d of the script's Source", args, out.Len(), len(want))
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("script %v: error %v, want one containing %q", args, err, wantErr)
		case wantErr != "" && out.Len() != 0:
			t.Errorf("script %v: printed %q before failing", args, out.String())
		}
	}
	for _, name := range lua.Commands() {
		s := lua.Named(name)
		check([]string{name}, s.Source, "")
	}
	check([]string{"RL.ACQUIRE"}, lua.Named("rl.acquire").Source, "")
	check([]string{"rl.nope"}, "", `"rl.nope"`)
	check([]string{"rl.nope"}, "", "rl.acquire, rl.all")
	check(nil, "", "usage")
	check([]string{"rl.all", "rl.token"}, "", "usage")
}
