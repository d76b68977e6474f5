package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// reshardKeysPerNode is N of TestReshard: 3·N keys drained on three nodes, a
// quarter of them moved to a fourth while clients call them.
const reshardKeysPerNode = 10_000

// enabledNode is a -cluster-enabled rlserver of TestReshard: its address, directory
// (nodes.conf and the snapshot), process, and the time its clock is frozen at.
type enabledNode struct {
	addr, dir string
	password  string   // -requirepass, if any
	extra     []string // more flags
	proc      *process
	frozen    int64
}

// start runs the node's rlserver, from its directory's nodes.conf and snapshot, and
// freezes its clock (DEBUG CLOCK SET).
func (n *enabledNode) start() error {
	args := []string{"-cluster-enabled", "-cluster-config-file", filepath.Join(n.dir, "nodes.conf"),
		"-snapshot", filepath.Join(n.dir, "dump.rls")}
	if n.password != "" {
		args = append(args, "-requirepass", n.password)
	}
	p, err := startNode(n.dir, n.addr, append(args, n.extra...)...)
	if err != nil {
		return err
	}
	if n.password != "" {
		p.client.Close()
		p.client = redis.NewClient(&redis.Options{Addr: n.addr, Password: n.password, MaxRetries: -1})
	}
	n.proc = p
	return p.client.Do(context.Background(), "DEBUG", "CLOCK", "SET", n.frozen).Err()
}

// frozenClock is the time the nodes of one cluster are frozen at: the middle of the
// next 10-minute window. RL.FIXED k 5 600000's windows are aligned to the epoch, so
// on the real clock a drained key would admit calls again at the next multiple of
// ten minutes, which a test of a minute or two crosses one time in ten; frozen, the
// window never ends, and the keys' deadlines stay ahead of the real time across a
// restart (a snapshot's keys already fresh in real time would not load).
func frozenClock() int64 {
	const window = 600 * int64(time.Second/time.Microsecond)
	return (time.Now().UnixMicro()/window+1)*window + window/2
}

// startEnabled starts n empty -cluster-enabled nodes, with password as their
// -requirepass if not empty, stopped when t ends.
func startEnabled(t testing.TB, n int, password string) []*enabledNode {
	t.Helper()
	addrs, err := launch.FreeAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*enabledNode, n)
	frozen := frozenClock()
	for i, a := range addrs {
		nodes[i] = &enabledNode{addr: a, dir: t.TempDir(), password: password, frozen: frozen}
		if err := nodes[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			if n.proc != nil {
				n.proc.stop()
			}
		}
	})
	return nodes
}

// redisCLI runs redis-cli with args and returns its output; a failure is fatal.
func redisCLI(t testing.TB, cli string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, tail(string(out)))
	}
	return string(out)
}

// tail is the end of a long output.
func tail(s string) string { return s[max(0, len(s)-3000):] }

// clusterCheck runs redis-cli --cluster check against the address last in args,
// the options before it, until it finds nothing wrong: every node agreeing, no
// open slot, every slot covered. It tries for 10 s, as Redis's own cluster tests
// wait for --cluster check to pass: a move's SETSLOT NODE reaches every node at
// once, but a claim a node sent before it may still arrive and hold the slot for
// the old owner until the next exchange.
func clusterCheck(t *testing.T, cli string, args ...string) {
	t.Helper()
	argv := slices.Concat(args[:len(args)-1], []string{"--cluster", "check", args[len(args)-1]})
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(cli, argv...).CombinedOutput()
		problem := checkProblem(string(out), err)
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("--cluster check: %s:\n%s", problem, tail(string(out)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkProblem is what is wrong in redis-cli --cluster check's output, or "".
func checkProblem(out string, err error) string {
	for _, want := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
		if !strings.Contains(out, want) {
			return fmt.Sprintf("no %q", want)
		}
	}
	if strings.Contains(out, "[ERR]") || strings.Contains(out, "[WARNING]") {
		return "an error or warning"
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// waitKnown waits until every node's table holds exactly want nodes.
func waitKnown(t testing.TB, nodes []*enabledNode, want int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range nodes {
		for {
			info, err := n.proc.client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(want)+"\r\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not know %d nodes: %v %s", n.addr, want, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// waitAgree waits until every node's CLUSTER NODES gives every node the same slots,
// as redis-cli --cluster checks before a reshard or rebalance: a node just added
// knows the others at once but learns each one's slots from that node's own table,
// within an exchange (100 ms) of meeting it.
func waitAgree(t testing.TB, nodes []*enabledNode) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var first, last string
		agree := true
		for i, n := range nodes {
			text, err := n.proc.client.ClusterNodes(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			var sig []string
			for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
				f := strings.Fields(l)
				var slots []string
				for _, x := range f[8:] {
					if !strings.HasPrefix(x, "[") {
						slots = append(slots, x)
					}
				}
				sig = append(sig, f[0]+":"+strings.Join(slots, ","))
			}
			slices.Sort(sig)
			last = strings.Join(sig, "|")
			if i == 0 {
				first = last
			} else if last != first {
				agree = false
			}
		}
		if agree {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes do not agree about the slots: %s against %s", first, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dbsizes are the nodes' DBSIZE.
func dbsizes(t testing.TB, nodes []*enabledNode) []int64 {
	t.Helper()
	sizes := make([]int64, len(nodes))
	for i, n := range nodes {
		v, err := n.proc.client.DBSize(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		sizes[i] = v
	}
	return sizes
}

// sum adds up xs.
func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// reshardKey is TestReshard's key i.
func reshardKey(i int) string { return "rs:" + strconv.Itoa(i) }

// hammer calls the drained keys at random from its goroutines through a
// ClusterClient until stopped, counting calls, calls admitted (none may be: every
// key is drained for ten minutes) and calls that failed after go-redis's redirects.
type hammer struct {
	calls, admitted, failed atomic.Int64
	firstErr                atomic.Value
	stop                    chan struct{}
	once                    sync.Once
	wg                      sync.WaitGroup
}

func startHammer(cc *redis.ClusterClient, keys, goroutines int) *hammer {
	h := &hammer{stop: make(chan struct{})}
	for g := range goroutines {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-h.stop:
					return
				default:
				}
				k := reshardKey(rng.IntN(keys))
				v, err := cc.Do(context.Background(), "RL.FIXED", k, 5, 600000).Slice()
				h.calls.Add(1)
				// A pause between calls leaves redis-cli some CPU on a box of two cores,
				// where 32 goroutines calling flat out stretch each of its round trips.
				time.Sleep(time.Millisecond)
				switch {
				case err != nil:
					h.failed.Add(1)
					h.firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %v", k, err))
					time.Sleep(10 * time.Millisecond) // a node down: no spinning
				case v[0] != int64(0):
					h.admitted.Add(1)
					h.firstErr.CompareAndSwap(nil, fmt.Sprintf("%s admitted: %v", k, v))
				}
			}
		}()
	}
	return h
}

// halt stops the goroutines; it may run more than once.
func (h *hammer) halt() {
	h.once.Do(func() { close(h.stop) })
	h.wg.Wait()
}

// finish stops the goroutines and fails t for any call admitted, and unless
// failuresOK (a node was down meanwhile) for any call failed.
func (h *hammer) finish(t *testing.T, what string, failuresOK bool) {
	t.Helper()
	h.halt()
	t.Logf("%s: %d calls, %d admitted, %d failed", what, h.calls.Load(), h.admitted.Load(), h.failed.Load())
	if h.admitted.Load() != 0 || h.failed.Load() != 0 && !failuresOK {
		t.Fatalf("%s: %d calls admitted, %d failed; first: %v", what, h.admitted.Load(), h.failed.Load(), h.firstErr.Load())
	}
	if h.calls.Load() == 0 {
		t.Fatalf("%s: no call made", what)
	}
}

// TestReshard builds a cluster of -cluster-enabled rlserver nodes with the real
// redis-cli, as a Redis Cluster is built, and grows it while it serves: create of
// three empty nodes, 3·N keys drained (RL.FIXED k 5 600000, five calls each),
// add-node of a fourth, and a reshard of 4096 slots to it while 32 go-redis
// ClusterClient goroutines keep calling the keys. Afterwards the cluster checks OK,
// every key is still there once (DBSIZE sums to 3·N, the new node holds about a
// quarter) and no drained key admitted a single call, during the move or after;
// redis-py's RedisCluster calls the keys too, and neither client's calls fail.
// Then every node restarts, its topology back from nodes.conf.
func TestReshard(t *testing.T) {
	needBinaries(t)
	cli := testenv.RedisTool(t, "redis-cli")
	nodes := startEnabled(t, 4, "")
	addrs := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	out := redisCLI(t, cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...)
	if !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("--cluster create:\n%s", tail(out))
	}
	clusterCheck(t, cli, addrs[0])

	const keys = 3 * reshardKeysPerNode
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	began := time.Now()
	drainKeys(t, cc, keys)
	t.Logf("%d keys drained in %v", keys, time.Since(began))
	if got := sum(dbsizes(t, nodes[:3])); got != keys {
		t.Fatalf("DBSIZE sums to %d, want %d", got, keys)
	}

	out = redisCLI(t, cli, "--cluster", "add-node", nodes[3].addr, addrs[0])
	if !strings.Contains(out, "[OK] New node added correctly.") {
		t.Fatalf("--cluster add-node:\n%s", tail(out))
	}
	waitKnown(t, nodes, 4)
	waitAgree(t, nodes)
	newID, err := nodes[3].proc.client.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}

	h := startHammer(cc, keys, 32)
	py := startPyHammer(t, addrs, keys)
	began = time.Now()
	redisCLI(t, cli, "--cluster", "reshard", addrs[0], "--cluster-from", "all", "--cluster-to", newID,
		"--cluster-slots", "4096", "--cluster-yes")
	took := time.Since(began)
	time.Sleep(500 * time.Millisecond) // calls after the move, on the new map
	h.finish(t, "during the reshard", false)
	py.finish(t)
	sizes := dbsizes(t, nodes)
	t.Logf("reshard of 4096 slots in %v; DBSIZE %v", took, sizes)
	clusterCheck(t, cli, addrs[0])
	if got := sum(sizes); got != keys {
		t.Fatalf("DBSIZE sums to %d (%v), want %d", got, sizes, keys)
	}
	if sizes[3] < keys/5 || sizes[3] > keys*3/10 {
		t.Fatalf("the new node holds %d of %d keys, want about a quarter", sizes[3], keys)
	}
	expectDrained(t, cc, keys)

	t.Run("restart", func(t *testing.T) {
		for _, n := range nodes {
			n.proc.stop()
			n.proc = nil
		}
		for _, n := range nodes {
			if err := n.start(); err != nil {
				t.Fatal(err)
			}
		}
		waitKnown(t, nodes, 4)
		waitAgree(t, nodes)
		clusterCheck(t, cli, addrs[0])
		if got := dbsizes(t, nodes); sum(got) != keys || got[3] != sizes[3] {
			t.Fatalf("DBSIZE after the restart %v, before %v", got, sizes)
		}
		cc.ReloadState(ctx)
		expectDrained(t, cc, keys)
	})

	// Drained by a rebalance to weight 0, the fourth node leaves by del-node; reset
	// and added again, empty, a rebalance with --cluster-use-empty-masters gives it
	// its share back.
	t.Run("rebalance-del-node", func(t *testing.T) {
		redisCLI(t, cli, "--cluster", "rebalance", addrs[0], "--cluster-weight", newID+"=0")
		clusterCheck(t, cli, addrs[0])
		if got := dbsizes(t, nodes); sum(got) != keys || got[3] != 0 {
			t.Fatalf("DBSIZE after draining the fourth node: %v", got)
		}
		out := redisCLI(t, cli, "--cluster", "del-node", addrs[0], newID)
		if !strings.Contains(out, "Sending CLUSTER RESET SOFT to the deleted node.") {
			t.Fatalf("--cluster del-node:\n%s", tail(out))
		}
		waitKnown(t, nodes[:3], 3)
		waitKnown(t, nodes[3:], 1)
		clusterCheck(t, cli, addrs[0])
		// A client of its own: cc knows the deleted node, whose CLUSTER SLOTS, after
		// its RESET, maps no slot (as a Redis node's would), and go-redis may read
		// the map from it.
		three := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		expectDrained(t, three, keys)
		three.Close()

		if err := nodes[3].proc.client.Do(ctx, "CLUSTER", "RESET", "HARD").Err(); err != nil {
			t.Fatal(err)
		}
		redisCLI(t, cli, "--cluster", "add-node", nodes[3].addr, addrs[0])
		waitKnown(t, nodes, 4)
		waitAgree(t, nodes)
		redisCLI(t, cli, "--cluster", "rebalance", addrs[0], "--cluster-use-empty-masters")
		clusterCheck(t, cli, addrs[0])
		got := dbsizes(t, nodes)
		if sum(got) != keys || got[3] < keys/5 {
			t.Fatalf("DBSIZE after the rebalance: %v", got)
		}
		cc.ReloadState(ctx)
		expectDrained(t, cc, keys)
	})
}

// pyHammerScript is redis-py's RedisCluster calling the drained keys at random until
// the stop file exists, then printing its calls, those admitted, those failed and
// the first of either.
const pyHammerScript = `import os, random, sys
from redis.cluster import ClusterNode, RedisCluster
nodes = [a.rsplit(":", 1) for a in sys.argv[1].split(",")]
keys, stop = int(sys.argv[2]), sys.argv[3]
rc = RedisCluster(startup_nodes=[ClusterNode(h, int(p)) for h, p in nodes])
calls = admitted = failed = 0
first = "-"
while not os.path.exists(stop):
    k = "rs:%d" % random.randrange(keys)
    try:
        v = rc.execute_command("RL.FIXED", k, 5, 600000)
        if v[0] != 0:
            admitted += 1
            first = first if first != "-" else "%s-admitted-%r" % (k, v)
    except Exception as e:
        failed += 1
        first = first if first != "-" else "%s:%r" % (k, e)
    calls += 1
print(calls, admitted, failed, first.replace(" ", "_"))
`

// pyHammer is pyHammerScript running; nil without redis-py.
type pyHammer struct {
	cmd      *exec.Cmd
	out, log *strings.Builder // stdout, the counts; stderr, where redis-py logs each redirect it follows
	stop     string
}

// pyRedis is a Python 3 that imports redis (redis-py): RLSERVER_PYTHON, python3 or
// /usr/bin/python3 (Debian's python3-redis, which a pyenv python3 first on PATH may
// lack), or "".
func pyRedis() string {
	for _, c := range []string{os.Getenv("RLSERVER_PYTHON"), "python3", "/usr/bin/python3"} {
		if c != "" && exec.Command(c, "-c", "import redis.cluster").Run() == nil {
			return c
		}
	}
	return ""
}

// startPyHammer starts redis-py's RedisCluster calling the keys beside the go-redis
// goroutines: a second client's handling of MOVED, ASK and TRYAGAIN. Without
// redis-py it says so and returns nil; RLSERVER_REQUIRE_REDIS=1 makes that a failure.
func startPyHammer(t *testing.T, addrs []string, keys int) *pyHammer {
	t.Helper()
	python := pyRedis()
	if python == "" {
		const hint = "no python3 imports redis (redis-py: apt-get install python3-redis, or set RLSERVER_PYTHON)"
		if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
			t.Fatal(hint)
		}
		t.Log(hint + ": go-redis alone calls during the reshard")
		return nil
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "hammer.py")
	if err := os.WriteFile(script, []byte(pyHammerScript), 0o644); err != nil {
		t.Fatal(err)
	}
	py := &pyHammer{out: &strings.Builder{}, log: &strings.Builder{}, stop: filepath.Join(dir, "stop")}
	py.cmd = exec.Command(python, script, strings.Join(addrs, ","), strconv.Itoa(keys), py.stop)
	py.cmd.Stdout, py.cmd.Stderr = py.out, py.log
	if err := py.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return py
}

// finish stops the script and fails t for any call admitted or failed.
func (py *pyHammer) finish(t *testing.T) {
	t.Helper()
	if py == nil {
		return
	}
	if err := os.WriteFile(py.stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := py.cmd.Wait(); err != nil {
		t.Fatalf("redis-py: %v\n%s%s", err, py.out.String(), tail(py.log.String()))
	}
	var calls, admitted, failed int
	var first string
	if _, err := fmt.Sscan(py.out.String(), &calls, &admitted, &failed, &first); err != nil {
		t.Fatalf("redis-py's output %q: %v", py.out.String(), err)
	}
	t.Logf("redis-py during the reshard: %d calls, %d admitted, %d failed", calls, admitted, failed)
	if admitted != 0 || failed != 0 || calls == 0 {
		t.Fatalf("redis-py: %d calls, %d admitted, %d failed: %s", calls, admitted, failed, first)
	}
}

// expectDrained calls every key once more: each must be limited.
func expectDrained(t *testing.T, cc *redis.ClusterClient, keys int) {
	t.Helper()
	ctx := context.Background()
	cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range keys {
			p.Do(ctx, "RL.FIXED", reshardKey(i), 5, 600000)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if v, err := c.(*redis.Cmd).Slice(); err != nil || v[0] != int64(0) {
			t.Fatalf("%s after the move: %v %v, want limited", reshardKey(i), v, err)
		}
	}
}

// TestReshardFix kills redis-cli with SIGKILL in the middle of a reshard, which
// leaves a slot open (MIGRATING on one node, IMPORTING on the other, its keys
// split between them), then runs redis-cli --cluster fix: afterwards the cluster
// checks OK, no key is lost or doubled, and every drained key is still drained.
// The nodes have a password, as in production: redis-cli sends it (-a) and MIGRATE
// carries it (AUTH), and the nodes' table exchange uses it.
func TestReshardFix(t *testing.T) {
	needBinaries(t)
	cli := testenv.RedisTool(t, "redis-cli")
	const password = "s3cret"
	nodes := startEnabled(t, 4, password)
	addrs := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	auth := []string{"-a", password, "--no-auth-warning"}
	redisCLI(t, cli, slices.Concat(auth, []string{"--cluster", "create"}, addrs, []string{"--cluster-yes"})...)
	const keys = 20_000 // some 1.2 keys a slot: a slot open at the kill has keys on both sides
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64, Password: password})
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	drainKeys(t, cc, keys)
	redisCLI(t, cli, slices.Concat(auth, []string{"--cluster", "add-node", nodes[3].addr, addrs[0]})...)
	waitKnown(t, nodes, 4)
	waitAgree(t, nodes)
	newID, err := nodes[3].proc.client.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	reshard := exec.Command(cli, slices.Concat(auth, []string{"--cluster", "reshard", addrs[0], "--cluster-from", "all",
		"--cluster-to", newID, "--cluster-slots", "4096", "--cluster-yes"})...)
	if err := reshard.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed while the new node is importing a slot: redis-cli has marked it open and
	// may have moved some of its keys. redis-cli is frozen before each look, so the
	// slot seen open is still open when it is killed.
	time.Sleep(time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := freeze(reshard.Process); err != nil {
			t.Fatal(err)
		}
		text, err := nodes[3].proc.client.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "-<-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new node never imported a slot")
		}
		if err := thaw(reshard.Process); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // redis-cli runs on between looks
	}
	reshard.Process.Kill()
	reshard.Wait()
	time.Sleep(time.Second) // the tables' exchange spreads the last slot's new owner
	out := redisCLI(t, cli, slices.Concat(auth, []string{"--cluster", "fix", addrs[0], "--cluster-yes"})...)
	if !strings.Contains(out, ">>> Fixing open slot") {
		t.Fatalf("--cluster fix found no open slot to fix:\n%s", tail(out))
	}
	clusterCheck(t, cli, slices.Concat(auth, []string{addrs[0]})...)
	if got := dbsizes(t, nodes); sum(got) != keys {
		t.Fatalf("DBSIZE after the fix %v, sum %d, want %d", got, sum(got), keys)
	}
	cc.ReloadState(ctx)
	expectDrained(t, cc, keys)
}

// drainKeys spends all 5 calls of RL.FIXED k 5 600000 on reshardKey(0…keys-1),
// pipelined 1000 keys at a time, and fails t unless every call was admitted.
func drainKeys(t *testing.T, cc *redis.ClusterClient, keys int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < keys; from += 1000 {
		cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < min(from+1000, keys); i++ {
				for range 5 {
					p.Do(ctx, "RL.FIXED", reshardKey(i), 5, 600000)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			if v, err := c.(*redis.Cmd).Slice(); err != nil || v[0] != int64(1) {
				t.Fatalf("draining: %v %v", v, err)
			}
		}
	}
}
