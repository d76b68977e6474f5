package ha_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestReplicaRestartPartialSync: a replica with appendonly yes is killed with SIGKILL
// and restarted on its directory while the primary takes writes. It continues from
// the primary's backlog (RLSYNC with its replid and offset, +CONTINUE): the primary's
// sync_partial_ok goes up by one and sync_full does not, and the replica then holds
// what the primary holds. With a backlog too small for the writes made while it was
// down, the same restart is a full sync (sync_full up by one), and as exact. Promoted,
// the replica removes its position. The same restart of a redis-server replica with
// appendonly yes is logged beside, as the reference.
func TestReplicaRestartPartialSync(t *testing.T) {
	needBinaries(t)
	for _, tc := range []struct {
		name    string
		backlog string
		writes  int // on the primary while the replica is down
		full    bool
	}{
		{"within the backlog", "1mb", 2_000, false},
		{"beyond the backlog", "16kb", 5_000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restartReplica(t, tc.backlog, tc.writes, tc.full)
		})
	}
	t.Run("redis-server, the reference", restartRedisReplica)
}

// restartRedisReplica runs the restart within the backlog on redis-server, a replica
// with appendonly yes, and logs how its primary counted the sync: the reference.
func restartRedisReplica(t *testing.T) {
	ctx := context.Background()
	primary := redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t)})
	defer primary.Close()
	bin := testenv.RedisTool(t, "redis-server")
	addr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(primary.Options().Addr)
	start := func() *launch.Proc {
		p, err := launch.RedisAt(bin, dir, addr, "--appendonly", "yes", "--replicaof", host, port)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start()
	replica := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer replica.Close()
	field := func(rdb *redis.Client, name string) string {
		info := rdb.Info(ctx, "everything").Val()
		for _, line := range strings.Split(info, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == name {
				return v
			}
		}
		return ""
	}
	caughtUp := func() bool {
		return field(replica, "master_link_status") == "up" &&
			field(replica, "slave_repl_offset") == field(primary, "master_repl_offset")
	}
	set := func(from, to int) {
		pipe := primary.Pipeline()
		for i := from; i < to; i++ {
			pipe.Set(ctx, "k"+strconv.Itoa(i%3000), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 10*time.Second, "the replica's first sync", caughtUp)
	set(0, 3000)
	poll.Until(t, 10*time.Second, "the replica caught up", caughtUp)
	time.Sleep(1500 * time.Millisecond) // appendfsync everysec: the log synced
	fullBefore, partialBefore := field(primary, "sync_full"), field(primary, "sync_partial_ok")
	p.Kill()
	set(3000, 5000)
	p = start()
	t.Cleanup(p.Kill)
	poll.Until(t, 20*time.Second, "the restarted replica caught up", caughtUp)
	t.Logf("redis-server, appendonly yes: the primary's sync_full %s → %s, sync_partial_ok %s → %s",
		fullBefore, field(primary, "sync_full"), partialBefore, field(primary, "sync_partial_ok"))
	if a, b := primary.DBSize(ctx).Val(), replica.DBSize(ctx).Val(); a != b || a != 3000 {
		t.Errorf("DBSIZE: primary %d, replica %d, want 3000", a, b)
	}
}

// restartReplica runs TestReplicaRestartPartialSync with the primary's backlog size,
// writes made while the replica is down, and whether a full sync is expected.
func restartReplica(t *testing.T, backlog string, writes int, full bool) {
	ctx := context.Background()
	primary := startRL(t, "primary", "-repl-backlog-size", backlog)
	dir := t.TempDir()
	replica := startRL(t, "replica", "-replicaof", primary.addr, "-appendonly", "-dir", dir)
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []*haNode{primary, replica} {
				t.Logf("%s's log, its end:\n%s", n.name, n.logTail())
			}
		}
	})
	spend := func(from, to int) {
		t.Helper()
		pipe := primary.rdb.Pipeline()
		for i := from; i < to; i++ {
			pipe.Do(ctx, "RL.FIXED", "k"+strconv.Itoa(i%3000), 50, 86400000)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp := func() bool {
		return replica.info("master_link_status") == "up" &&
			replica.info("slave_repl_offset") == primary.info("master_repl_offset")
	}
	poll.Until(t, 10*time.Second, "the replica's first sync", caughtUp)
	spend(0, 3000)
	poll.Until(t, 10*time.Second, "the replica caught up", caughtUp)
	// The replica writes its position once its log's sync covers it: every second.
	posFile := filepath.Join(dir, "appendonlydir", "appendonly.aof.replica")
	offset := primary.info("master_repl_offset")
	poll.Until(t, 10*time.Second, "the replica's position at offset "+offset, func() bool {
		b, _ := os.ReadFile(posFile)
		f := strings.Fields(string(b))
		return len(f) == 3 && f[1] == offset
	})
	fullBefore, partialBefore := primary.info("sync_full"), primary.info("sync_partial_ok")

	replica.kill()
	spend(3000, 3000+writes)
	replica.start()
	poll.Until(t, 20*time.Second, "the restarted replica caught up", caughtUp)
	fullAfter, partialAfter := primary.info("sync_full"), primary.info("sync_partial_ok")
	t.Logf("primary's sync_full %s → %s, sync_partial_ok %s → %s (backlog %s, %d writes while the replica was down)",
		fullBefore, fullAfter, partialBefore, partialAfter, backlog, writes)
	wantFull, wantPartial := fullBefore, plus1(t, partialBefore)
	if full {
		wantFull, wantPartial = plus1(t, fullBefore), partialBefore
	}
	if fullAfter != wantFull || partialAfter != wantPartial {
		t.Errorf("sync_full %s, sync_partial_ok %s after the restart; want %s and %s", fullAfter, partialAfter,
			wantFull, wantPartial)
	}

	// The replica holds what the primary holds, key by key.
	for i := range 3000 {
		key := "k" + strconv.Itoa(i)
		want := fmt.Sprint(primary.rdb.Do(ctx, "RL.FIXED", key, 50, 86400000, "PEEK").Slice())
		got := fmt.Sprint(replica.rdb.Do(ctx, "RL.FIXED", key, 50, 86400000, "PEEK").Slice())
		// The reply's last field, the time to the window's reset, moves between calls.
		if strings.Join(strings.Fields(want)[:3], " ") != strings.Join(strings.Fields(got)[:3], " ") {
			t.Fatalf("%s on the replica: %s, on the primary: %s", key, got, want)
		}
	}
	if a, b := primary.rdb.DBSize(ctx).Val(), replica.rdb.DBSize(ctx).Val(); a != b || a != 3000 {
		t.Errorf("DBSIZE: primary %d, replica %d, want 3000", a, b)
	}

	// Promoted, it takes writes of its own: its files no longer stand in any
	// primary's stream, and the position goes.
	if err := replica.rdb.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the position removed", func() bool {
		_, err := os.Stat(posFile)
		return os.IsNotExist(err)
	})
}

// plus1 is the decimal s plus 1.
func plus1(t *testing.T, s string) string {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return strconv.Itoa(n + 1)
}
