package ha_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/lua"
)

// The partition test's settings.
const (
	partLimit   = 30_000                 // the one key's limit, per day: spent to the end once
	partMaxLag  = 2                      // min-replicas-max-lag, seconds
	partDown    = time.Second            // Sentinel's down-after-milliseconds
	partClients = 4                      // connections spending on each side
	partPace    = 4 * time.Millisecond   // between one connection's calls: ~1000 calls/s a side
	partHold    = 8 * time.Second        // from the cut to the heal
	partRate    = 2 * time.Second        // the admissions before the cut that measure the rate
	partKey     = "partition:quota"      // the key both sides spend
	partSettle  = 60 * time.Second       // bounds each wait for the Sentinels
	partWindow  = int64(24 * 3600 * 1e3) // the key's window, ms
	// partSlack is the scheduling of a loaded machine (servers, Sentinels and clients
	// share its cores), added to the bounds: Redis reaches max-lag + 2 s by design.
	partSlack = 500 * time.Millisecond
)

// partSystem is what runs on each side: rlserver, or redis-server with the reference
// Lua scripts.
type partSystem struct {
	name string
	// primary starts the primary inside ns, listening on every address of ns at port.
	primary func(t *testing.T, ns *netns, port string, args []string) *haNode
	// replica starts a replica of primary on the machine, at addr.
	replica func(t *testing.T, name, addr, primary string, args []string) *haNode
	// minArgs are the flags of min-replicas-to-write n and min-replicas-max-lag.
	minArgs func(n int) []string
	// sentinel is the Sentinels' lines to log in to the servers.
	sentinel string
	// spend spends 1 of partKey's limit.
	spend func(ctx context.Context, c lab.Caller) *redis.Cmd
	// prepare readies a server for spend (loads the script).
	prepare func(ctx context.Context, rdb *redis.Client) error
}

var partRequest = lab.Request(algo.KindFixed, partLimit, partWindow)

var partRLServer = partSystem{
	name: "rlserver",
	primary: func(t *testing.T, ns *netns, port string, args []string) *haNode {
		return startPartNode(t, "primary", net.JoinHostPort(ns.nsIP, port), haPass,
			ns.exec(append([]string{testenv.RLServerBin(t), "-addr", "0.0.0.0:" + port, "-requirepass", haPass,
				"-masterauth", haPass, "-loglevel", "INFO"}, args...)...))
	},
	replica: func(t *testing.T, name, addr, primary string, args []string) *haNode {
		return startPartNode(t, name, addr, haPass, append([]string{testenv.RLServerBin(t), "-addr", addr,
			"-requirepass", haPass, "-masterauth", haPass, "-loglevel", "INFO", "-replicaof", primary}, args...))
	},
	minArgs: func(n int) []string {
		return []string{"-min-replicas-to-write", strconv.Itoa(n), "-min-replicas-max-lag", strconv.Itoa(partMaxLag)}
	},
	sentinel: "sentinel auth-pass mymaster " + haPass + "\n",
	spend: func(ctx context.Context, c lab.Caller) *redis.Cmd {
		return c.Do(ctx, lab.Command(partRequest, partKey, nil)...)
	},
	prepare: func(context.Context, *redis.Client) error { return nil },
}

var partRedis = partSystem{
	name: "redis-server + Lua",
	primary: func(t *testing.T, ns *netns, port string, args []string) *haNode {
		dir := t.TempDir()
		return startPartNode(t, "primary", net.JoinHostPort(ns.nsIP, port), "",
			ns.exec(append([]string{"redis-server", "--port", port, "--bind", "0.0.0.0", "--protected-mode", "no",
				"--save", "", "--appendonly", "no", "--dir", dir}, args...)...))
	},
	replica: func(t *testing.T, name, addr, primary string, args []string) *haNode {
		host, port, _ := net.SplitHostPort(primary)
		return startPartNode(t, name, addr, "", append([]string{"redis-server", "--port", portOf(addr),
			"--bind", strings.Split(addr, ":")[0], "--protected-mode", "no", "--save", "", "--appendonly", "no",
			"--dir", t.TempDir(), "--replicaof", host, port}, args...))
	},
	minArgs: func(n int) []string {
		return []string{"--min-replicas-to-write", strconv.Itoa(n), "--min-replicas-max-lag", strconv.Itoa(partMaxLag)}
	},
	spend: func(ctx context.Context, c lab.Caller) *redis.Cmd {
		return lab.Call(ctx, c, true, partKey, partRequest)
	},
	prepare: func(ctx context.Context, rdb *redis.Client) error {
		return rdb.ScriptLoad(ctx, lua.For(partRequest).Source).Err()
	},
}

// portOf is addr's port.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// startPartNode starts argv as the node name answering at addr, killed when t ends.
func startPartNode(t *testing.T, name, addr, pass string, argv []string) *haNode {
	t.Helper()
	n := &haNode{t: t, name: name, addr: addr, spec: launch.Spec{Name: name, Addr: addr, Password: pass,
		Log: filepath.Join(t.TempDir(), name+".log"), Argv: argv}}
	n.start()
	t.Cleanup(n.kill)
	return n
}

// partFigures are one run's measures.
type partFigures struct {
	system      string
	minReplicas int
	rate        float64       // the primary's side's admissions a second, before the cut
	afterCut    int           // its admissions during the partition
	lastAdmit   time.Duration // from the cut to its last admission during the partition
	afterHeal   int           // its admissions after the heal, before it follows the new primary
	failover    time.Duration // from the cut to a replica promoted and named by the Sentinels
	other       int           // admissions on the promoted replica during the partition
	over        int           // admissions on both sides, beyond the limit
	bound       int           // what the clients can spend within max-lag + 1 s + down-after + partSlack
	noReplicas  int           // NOREPLICAS refusals on the primary's side
}

// TestPartition: the primary runs in a network namespace of the test's own, its two
// replicas and three Sentinels on this machine, all joined by a veth pair. Clients
// beside the primary (in its namespace) spend one key of limit 30,000 at ~1000 calls/s;
// the link is cut for 8 s. The Sentinels promote a replica, where clients spend too;
// after the heal the old primary follows the new one, and the limit is spent to its
// end there. The over-admission is every admission on both sides beyond the limit.
// With min-replicas-to-write 1 and min-replicas-max-lag 2, the old primary stops
// admitting within max-lag + 2 s (lag counted in whole seconds; Redis's replicas ack,
// and its count of good replicas is refreshed, once a second) and the over-admission
// stays within what its clients spend in max-lag + 1 s + down-after, each bound with
// partSlack for a loaded machine; without, it admits for the whole partition. After the heal the old
// primary may admit again for a moment, on both servers: its replicas' last acks,
// queued during the partition, arrive then and count as fresh until their
// connections reset; those admissions are in the over-admission too. Redis with the
// reference Lua scripts runs the same test, side by side; the table is logged.
//
//	go test -run TestPartition -v ./test/ha (Linux, as root)
func TestPartition(t *testing.T) {
	needBinaries(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the partition test needs iproute2's ip: apt-get install iproute2")
	}
	var rows []partFigures
	for _, sys := range []partSystem{partRLServer, partRedis} {
		for _, min := range []int{1, 0} {
			t.Run(fmt.Sprintf("%s/min-replicas-to-write=%d", sys.name, min), func(t *testing.T) {
				rows = append(rows, runPartition(t, sys, min))
			})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n|%s\n", "system",
		"min-replicas-to-write", "rate/s", "old side, partition", "its last admission", "old side, after heal",
		"failover", "NOREPLICAS", "promoted side", "over-admission", "bound", strings.Repeat("---|", 11))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %d | %v | %d | %v | %d | %d | %d | %d |\n", r.system, r.minReplicas,
			r.rate, r.afterCut, r.lastAdmit.Round(10*time.Millisecond), r.afterHeal,
			r.failover.Round(10*time.Millisecond), r.noReplicas, r.other, r.over, r.bound)
	}
	t.Log(b.String())
}

// runPartition runs the partition test on sys, with min-replicas-to-write min.
func runPartition(t *testing.T, sys partSystem, min int) partFigures {
	ctx := context.Background()
	ns := newNetns(t)
	args := sys.minArgs(min)
	free, err := launch.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	set := &haSet{primary: sys.primary(t, ns, portOf(free[0]), args)}
	// The primary's client connects from inside its namespace, so that it is reached
	// during the partition too.
	set.primary.rdb.Close()
	set.primary.rdb = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + portOf(free[0]), Dialer: ns.dial,
		Password: set.primary.spec.Password, MaxRetries: -1})
	for i, a := range free[1:] {
		r := sys.replica(t, "replica"+strconv.Itoa(i), net.JoinHostPort(ns.hostIP, portOf(a)), set.primary.addr, args)
		set.replicas = append(set.replicas, r)
	}
	for _, r := range set.replicas {
		poll.Until(t, 10*time.Second, r.name+" link up", func() bool { return r.info("master_link_status") == "up" })
	}
	host, port, _ := net.SplitHostPort(set.primary.addr)
	for i := range 3 {
		// announce-ip: a Sentinel would announce the address it reaches the primary
		// from (ns.hostIP), where it does not listen.
		p, err := launch.Sentinel(t.TempDir(), fmt.Sprintf("sentinel monitor mymaster %s %s 2\n"+
			"sentinel down-after-milliseconds mymaster %d\n"+
			"sentinel failover-timeout mymaster 10000\n"+
			"sentinel parallel-syncs mymaster 2\n"+
			"sentinel announce-ip 127.0.0.1\n%s", host, port, partDown.Milliseconds(), sys.sentinel))
		if err != nil {
			t.Fatal(err)
		}
		s := &haNode{t: t, name: "sentinel" + strconv.Itoa(i), addr: p.Addr, spec: launch.Spec{Log: p.LogPath}}
		s.up(p)
		t.Cleanup(s.kill)
		set.sentinels = append(set.sentinels, s)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range append(append([]*haNode{set.primary}, set.replicas...), set.sentinels...) {
				t.Logf("%s's log (%s), its end:\n%s", n.name, n.addr, n.logTail())
			}
		}
	})
	for _, s := range set.sentinels {
		testenv.WaitSentinel(t, s.rdb, "mymaster", 2, 2)
	}
	for _, n := range append([]*haNode{set.primary}, set.replicas...) {
		if err := sys.prepare(ctx, n.rdb); err != nil {
			t.Fatal(err)
		}
	}

	nsSide := startSpenders(sys, redis.Options{Addr: set.primary.rdb.Options().Addr, Dialer: ns.dial,
		Password: set.primary.spec.Password})
	time.Sleep(partRate + 500*time.Millisecond) // the rate is measured on the last partRate
	cutAt := time.Now()
	ns.cut()
	var promoted *haNode
	failover := poll.Until(t, partSettle, "a replica promoted", func() bool {
		addr := masterAddr(set.sentinels[0])
		for _, r := range set.replicas {
			if r.addr == addr && r.info("role") == "master" {
				promoted = r
				return true
			}
		}
		return false
	})
	otherSide := startSpenders(sys, redis.Options{Addr: promoted.addr, Password: promoted.spec.Password})
	time.Sleep(time.Until(cutAt.Add(partHold)))
	healAt := time.Now()
	ns.heal()
	poll.Until(t, partSettle, "the old primary following "+promoted.name, func() bool {
		return set.primary.info("role") == "slave" && set.primary.info("master_link_status") == "up" &&
			set.primary.info("master_port") == portOf(promoted.addr)
	})
	nsSide.halt()
	otherSide.halt()
	if settled := settledPrimary(t, set); settled != promoted {
		t.Fatalf("the Sentinels failed over again, from %s to %s", promoted.name, settled.name)
	}
	drained := drain(t, sys, promoted)

	f := partFigures{system: sys.name, minReplicas: min, failover: failover, other: len(otherSide.admits),
		noReplicas: nsSide.errs["NOREPLICAS"]}
	before := 0
	for _, a := range nsSide.admits {
		switch {
		case !a.Before(healAt):
			f.afterHeal++
		case !a.Before(cutAt):
			f.afterCut++
			f.lastAdmit = a.Sub(cutAt)
		case cutAt.Sub(a) <= partRate:
			before++
		}
	}
	f.rate = float64(before) / partRate.Seconds()
	f.over = len(nsSide.admits) + len(otherSide.admits) + drained - partLimit
	f.bound = int(f.rate * (float64(partMaxLag+1) + partDown.Seconds() + partSlack.Seconds()))
	t.Logf("%s, min-replicas-to-write %d: %.0f admissions/s before the cut; during the partition %d on the "+
		"old primary, the last %v after the cut, and %d after the heal; failover %v after the cut; %d on the "+
		"promoted replica, %d drained after the heal; over-admission %d (bound %d); errors on the old "+
		"primary's side: %v", sys.name, min, f.rate, f.afterCut, f.lastAdmit, f.afterHeal, failover, f.other,
		drained, f.over, f.bound, nsSide.errs)
	if f.over < 0 || drained == 0 {
		t.Fatalf("the limit was not spent to its end: over-admission %d, %d drained", f.over, drained)
	}
	lastBound := time.Duration(partMaxLag+2)*time.Second + partSlack
	if min > 0 {
		if f.lastAdmit > lastBound {
			t.Errorf("the old primary admitted %v after the cut, beyond max-lag + 2 s + %v", f.lastAdmit, partSlack)
		}
		if f.over > f.bound {
			t.Errorf("over-admission %d beyond the bound %d", f.over, f.bound)
		}
		if f.noReplicas == 0 {
			t.Errorf("no NOREPLICAS on the old primary's side: %v", nsSide.errs)
		}
	} else if f.lastAdmit <= lastBound {
		// Without the setting the old primary admits the whole partition: a run
		// where it did not cannot tell the setting's effect.
		t.Errorf("without min-replicas-to-write the old primary's last admission came %v after the cut, "+
			"not beyond %v", f.lastAdmit, lastBound)
	}
	return f
}

// spenders are connections spending partKey at partPace each until halt.
type spenders struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	admits []time.Time    // when each admission was answered
	errs   map[string]int // errors by their first word
}

// startSpenders starts partClients connections with opts, spending as sys does.
func startSpenders(sys partSystem, opts redis.Options) *spenders {
	s := &spenders{stop: make(chan struct{}), errs: map[string]int{}}
	opts.MaxRetries, opts.PoolSize = -1, 1
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	for range partClients {
		s.wg.Go(func() {
			rdb := redis.NewClient(&opts)
			defer rdb.Close()
			tick := time.NewTicker(partPace)
			defer tick.Stop()
			ctx := context.Background()
			for {
				select {
				case <-s.stop:
					return
				case <-tick.C:
				}
				r, err := sys.spend(ctx, rdb).Slice()
				s.mu.Lock()
				switch {
				case err != nil:
					word, _, _ := strings.Cut(err.Error(), " ")
					s.errs[word]++
				case len(r) > 0 && r[0] == int64(1):
					s.admits = append(s.admits, time.Now())
				}
				s.mu.Unlock()
			}
		})
	}
	return s
}

// halt stops the connections and waits for them.
func (s *spenders) halt() {
	close(s.stop)
	s.wg.Wait()
	slices.SortFunc(s.admits, time.Time.Compare)
}

// drain spends what is left of partKey's limit on n, in pipelines, and returns how
// many it admitted.
func drain(t *testing.T, sys partSystem, n *haNode) int {
	t.Helper()
	ctx := context.Background()
	admitted := 0
	for {
		pipe := n.rdb.Pipeline()
		cmds := make([]*redis.Cmd, 500)
		for i := range cmds {
			cmds[i] = sys.spend(ctx, pipe)
		}
		pipe.Exec(ctx) // each call's error is its own, below
		denied := false
		for _, c := range cmds {
			r, err := c.Slice()
			if err != nil || len(r) == 0 {
				t.Fatalf("draining %s on %s: %v, %v", partKey, n.name, r, err)
			}
			if r[0] == int64(1) {
				admitted++
			} else {
				denied = true
			}
		}
		if denied {
			return admitted
		}
	}
}
