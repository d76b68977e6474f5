package resp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// enabledNode runs a -cluster-enabled server in this process, its table in a file
// of t's own, and returns a client on it.
func enabledNode(t *testing.T) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	top, err := cluster.Open(filepath.Join(t.TempDir(), "nodes.conf"), "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, resp.Config{Cluster: top, Config: core.Config{Logger: slog.New(slog.DiscardHandler)}})
}

// serveOn serves cfg on ln until t ends, and returns a RESP2 client on it.
func serveOn(t *testing.T, ln net.Listener, cfg resp.Config) *redis.Client {
	t.Helper()
	srv, err := resp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// metNodes are two -cluster-enabled nodes, a owning every slot and b having met it.
func metNodes(t *testing.T) (a, b *redis.Client) {
	t.Helper()
	ctx := context.Background()
	a, b = enabledNode(t), enabledNode(t)
	if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, cluster.Slots-1).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(a.Options().Addr)
	if err := b.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestMigrateUnderCalls moves slots between two in-process nodes, as redis-cli
// --cluster reshard does (IMPORTING, MIGRATING, GETKEYSINSLOT and MIGRATE until
// none is left, NODE on both), while 8 ClusterClient goroutines call the drained
// keys: none may be admitted, none may fail, and every key ends on the new node.
// Run with -race, it checks the slot locks against the calls.
func TestMigrateUnderCalls(t *testing.T) {
	ctx := context.Background()
	a, b := metNodes(t)
	aID, _ := a.ClusterMyID(ctx).Result()
	bID, _ := b.ClusterMyID(ctx).Result()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if n, _ := a.ClusterNodes(ctx).Result(); len(n) > 0 && countLines(n) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a never learned of b")
		}
		time.Sleep(10 * time.Millisecond)
	}
	const keys = 30 // each in a slot of its own (its hash tag's)
	slots := map[int]bool{}
	for i := range keys {
		k := fmt.Sprintf("{m%d}:k", i)
		slots[int(cluster.Slot([]byte(k)))] = true
		for range 3 {
			if err := a.Do(ctx, "RL.FIXED", k, 3, testenv.YearWindowMs).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Options().Addr}})
	defer cc.Close()
	var calls, bad atomic.Int64
	var counted [keys]atomic.Int64 // the calls each counting key admitted
	var first atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v, err := cc.Do(ctx, "RL.FIXED", fmt.Sprintf("{m%d}:k", i%keys), 3, testenv.YearWindowMs).Slice()
				calls.Add(1)
				if err != nil || v[0] != int64(0) {
					bad.Add(1)
					first.CompareAndSwap(nil, fmt.Sprint(v, err))
				}
				// A counting key beside it, in its slot: a call lost in the move
				// would leave its count below the calls admitted.
				v, err = cc.Do(ctx, "RL.FIXED", fmt.Sprintf("{m%d}:n", i%keys), 1_000_000, testenv.YearWindowMs).Slice()
				if err != nil || v[0] != int64(1) {
					bad.Add(1)
					first.CompareAndSwap(nil, fmt.Sprint(v, err))
				} else {
					counted[i%keys].Add(1)
				}
			}
		}()
	}
	for slot := range slots {
		for _, step := range [][]any{
			{b, "CLUSTER", "SETSLOT", slot, "IMPORTING", aID},
			{a, "CLUSTER", "SETSLOT", slot, "MIGRATING", bID},
		} {
			if err := step[0].(*redis.Client).Do(ctx, step[1:]...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		bHost, bPort, _ := net.SplitHostPort(b.Options().Addr)
		for {
			ks, err := a.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 3).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			if len(ks) == 0 {
				break
			}
			args := []any{"MIGRATE", bHost, bPort, "", 0, 5000, "KEYS"}
			for _, k := range ks {
				args = append(args, k)
			}
			if err := a.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []*redis.Client{b, a} {
			if err := n.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", bID).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if bad.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d calls, %d admitted or failed; first: %v", calls.Load(), bad.Load(), first.Load())
	}
	if n, _ := b.DBSize(ctx).Result(); n != 2*keys {
		t.Fatalf("b holds %d keys, want %d", n, 2*keys)
	}
	for i := range keys {
		v, err := b.Do(ctx, "RL.FIXED", fmt.Sprintf("{m%d}:n", i), 1_000_000, testenv.YearWindowMs, "COST", 0, "PEEK").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if used := 1_000_000 - v[2].(int64); used != counted[i].Load() {
			t.Errorf("{m%d}:n counts %d calls, %d were admitted", i, used, counted[i].Load())
		}
	}
	if n, _ := a.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("a holds %d keys, want 0", n)
	}
	t.Logf("%d calls during the move of %d slots", calls.Load(), len(slots))
}

// countLines counts the lines of a CLUSTER NODES reply.
func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
