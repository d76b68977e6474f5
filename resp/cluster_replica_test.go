package resp_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestClusterReplicaInProcess makes one in-process node the replica of another
// (CLUSTER REPLICATE): it holds the master's keys, answers MOVED to it with or
// without READONLY, and both tables say so. Promoted (REPLICAOF NO ONE), it owns the
// slots and the keys, and the old master, hearing its higher epoch, follows it;
// reset, it is an empty master.
// Run with -race, it checks the table's changes against the replication's.
func TestClusterReplicaInProcess(t *testing.T) {
	ctx := context.Background()
	a, b := metNodes(t)
	aID, bID := a.ClusterMyID(ctx).Val(), b.ClusterMyID(ctx).Val()
	for range 5 {
		if err := a.Do(ctx, "RL.FIXED", "k", 5, testenv.YearWindowMs).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Do(ctx, "CLUSTER", "REPLICATE", aID).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the replica's sync", func() bool { return b.DBSize(ctx).Val() == 1 })
	poll.Until(t, 10*time.Second, "the master's table showing its replica", func() bool {
		return strings.Contains(a.ClusterNodes(ctx).Val(), bID+" "+b.Options().Addr+"@0 slave "+aID+" ")
	})
	if !strings.Contains(b.ClusterNodes(ctx).Val(), "myself,slave "+aID) {
		t.Fatalf("the replica's table:\n%s", b.ClusterNodes(ctx).Val())
	}
	moved := "MOVED " + strconv.Itoa(int(cluster.Slot([]byte("k")))) + " " + a.Options().Addr
	conn := b.Conn()
	defer conn.Close()
	for _, readonly := range []bool{false, true} {
		if readonly {
			conn.ReadOnly(ctx)
		}
		if err := conn.Do(ctx, "RL.FIXED", "k", 5, testenv.YearWindowMs).Err(); err == nil || err.Error() != moved {
			t.Fatalf("the replica, READONLY %v: %v, want %s", readonly, err, moved)
		}
	}

	if err := b.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Do(ctx, "RL.FIXED", "k", 5, testenv.YearWindowMs).Slice(); err != nil || v[0] != int64(0) {
		t.Fatalf("the promoted replica on the drained key: %v %v", v, err)
	}
	poll.Until(t, 10*time.Second, "the old master following its promoted replica", func() bool {
		return strings.Contains(a.ClusterNodes(ctx).Val(), "myself,slave "+bID) && a.Do(ctx, "ROLE").Val().([]any)[0] == "slave"
	})
	toB := "MOVED " + strconv.Itoa(int(cluster.Slot([]byte("k")))) + " " + b.Options().Addr
	if err := a.Do(ctx, "RL.FIXED", "k", 5, testenv.YearWindowMs).Err(); err == nil || err.Error() != toB {
		t.Fatalf("the old master: %v, want %s", err, toB)
	}
	if err := a.Do(ctx, "REPLICAOF", "127.0.0.1", 1).Err(); err == nil || !strings.Contains(err.Error(), "no cluster node at 127.0.0.1:1") {
		t.Fatalf("REPLICAOF of no node: %v", err)
	}
	// CLUSTER RESET of a replica, keys and all: an empty master, as Redis's.
	if err := a.Do(ctx, "CLUSTER", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	if n, role := a.DBSize(ctx).Val(), a.Do(ctx, "ROLE").Val().([]any)[0]; n != 0 || role != "master" {
		t.Fatalf("after RESET: %d keys, role %v", n, role)
	}
	if nodes := a.ClusterNodes(ctx).Val(); strings.Count(nodes, "\n") != 1 || !strings.Contains(nodes, "myself,master - ") {
		t.Fatalf("after RESET:\n%s", nodes)
	}
}

// TestClusterStaticNoReplicas: -cluster-nodes nodes have no replicas: -replicaof is
// refused at start, REPLICAOF and CLUSTER REPLICATE at run time.
func TestClusterStaticNoReplicas(t *testing.T) {
	top, err := cluster.New([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := resp.Config{Cluster: top, Config: core.Config{Logger: slog.New(slog.DiscardHandler), ReplicaOf: "127.0.0.1:7001"}}
	if _, err := resp.NewServer(cfg); err == nil || !strings.Contains(err.Error(), "-cluster-nodes") {
		t.Fatalf("NewServer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReplicaOf = ""
	rdb := serveOn(t, ln, cfg)
	ctx := context.Background()
	if err := rdb.Do(ctx, "REPLICAOF", "127.0.0.1", 7001).Err(); err == nil || err.Error() != "ERR REPLICAOF not allowed in cluster mode." {
		t.Fatalf("REPLICAOF: %v", err)
	}
	if err := rdb.Do(ctx, "CLUSTER", "REPLICATE", top.Nodes()[1].ID).Err(); err == nil || err.Error() != "ERR "+cluster.ErrStatic.Error() {
		t.Fatalf("CLUSTER REPLICATE: %v", err)
	}
}

// TestClusterReplicaOfIgnoredWithSlots: a node whose config file gives it slots was
// promoted since its -replicaof was written: it starts a master of its slots.
func TestClusterReplicaOfIgnoredWithSlots(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	top, err := cluster.Open(filepath.Join(t.TempDir(), "nodes.conf"), "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	if err := top.AssignSlots([]cluster.Range{{First: 0, Last: cluster.Slots - 1}}, false); err != nil {
		t.Fatal(err)
	}
	rdb := serveOn(t, ln, resp.Config{Cluster: top, Config: core.Config{ReplicaOf: "127.0.0.1:1", Logger: slog.New(slog.DiscardHandler)}})
	ctx := context.Background()
	if role := rdb.Do(ctx, "ROLE").Val().([]any)[0]; role != "master" {
		t.Fatalf("ROLE %v", role)
	}
	if err := rdb.Do(ctx, "RL.FIXED", "k", 5, 600000).Err(); err != nil {
		t.Fatal(err)
	}
}
