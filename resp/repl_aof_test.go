package resp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

// TestAOFRestart: what a server with appendonly yes admitted is there after it stops
// without a final save (SHUTDOWN NOSAVE), under each fsync policy, and after a
// BGREWRITEAOF too; a slice (RL.SLICE) as any spend.
func TestAOFRestart(t *testing.T) {
	for _, policy := range []aof.Fsync{aof.FsyncAlways, aof.FsyncEverySec, aof.FsyncNo} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aofdir")
			cfg := Config{Config: core.Config{AppendOnly: true, AOF: aof.Config{Dir: dir, Fsync: policy}}}
			ts, stop := savingServer(t, cfg)
			rdb := ts.client(t, 2)
			for range 3 {
				do(rdb, "RL.FIXED k 5 31536000000")
			}
			if got := do(rdb, "BGREWRITEAOF"); got != "Background append only file rewriting started" {
				t.Fatalf("BGREWRITEAOF: %s", got)
			}
			do(rdb, "RL.FIXED k 5 31536000000")
			do(rdb, "RL.SLICE GCRA s 5 31536000000 4") // a slice is logged as any spend
			rdb.ShutdownNoSave(context.Background())
			stop()
			ts2 := startServer(t, cfg)
			rdb2 := ts2.client(t, 2)
			if got := do(rdb2, "RL.FIXED k 5 31536000000"); got[:7] != "[1 5 0 " {
				t.Fatalf("after the restart: %s, want the fifth of 5 admitted", got)
			}
			if got := do(rdb2, "RL.SLICE GCRA s 5 31536000000 5"); got[:7] != "[1 5 0 " {
				t.Fatalf("after the restart: %s, want the slice's 4 of 5 spent", got)
			}
			if got := persistenceField(t, rdb2, "aof_enabled"); got != "1" {
				t.Fatalf("aof_enabled %s", got)
			}
		})
	}
}

// TestAOFConfig: CONFIG GET and SET of the log's parameters, Redis's errors for bad
// values, CONFIG SET appendonly yes at run time writing a base of the keys there.
func TestAOFConfig(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	ts := startServer(t, Config{Config: core.Config{AOF: aof.Config{Dir: filepath.Join(dir, "appendonlydir")}}})
	rdb := ts.client(t, 2)
	const spend = "RL.FIXED k 5 31536000000"         // a window of a year: never passes during the test
	if got := do(rdb, spend); got[:7] != "[1 5 4 " { // before the log: in its first base
		t.Fatalf("%s: %s", spend, got)
	}
	run(t, rdb, []call{
		{"CONFIG GET appendonly", "[appendonly no]"},
		{"CONFIG GET appendfsync", "[appendfsync everysec]"},
		{"CONFIG GET aof-load-truncated", "[aof-load-truncated yes]"},
		{"CONFIG GET auto-aof-rewrite-percentage", "[auto-aof-rewrite-percentage 100]"},
		{"CONFIG GET auto-aof-rewrite-min-size", "[auto-aof-rewrite-min-size 67108864]"},
		{"CONFIG GET appendfilename", "[appendfilename appendonly.aof]"},
		{"CONFIG GET appenddirname", "[appenddirname appendonlydir]"},
		{"CONFIG SET appendfsync sometimes", "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: always, everysec, no"},
		{"CONFIG SET appendonly maybe", "ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'"},
		{"CONFIG SET save 900", "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"},
		{"CONFIG SET appendfilename x.aof", "ERR CONFIG SET failed (possibly related to argument 'appendfilename') - can't set immutable config"},
		{"BGREWRITEAOF", "ERR Background append only file rewriting needs appendonly yes here (rlserver keeps no log while it is off)"},
		{"CONFIG SET appendonly yes appendfsync always auto-aof-rewrite-percentage 0", "OK"},
		{"CONFIG GET appendonly", "[appendonly yes]"},
		{"CONFIG GET appendfsync", "[appendfsync always]"},
		{"CONFIG GET auto-aof-rewrite-percentage", "[auto-aof-rewrite-percentage 0]"},
	})
	if got := do(rdb, spend); got[:7] != "[1 5 3 " {
		t.Fatalf("%s: %s", spend, got)
	}
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "save", "").Err(); err != nil {
		t.Fatalf("CONFIG SET save \"\": %v", err)
	}
	const noFile = "ERR CONFIG SET failed (possibly related to argument 'save') - save rules need a snapshot file: start with -snapshot, or with dbfilename and save lines"
	if err := rdb.ConfigSet(ctx, "save", "900 1").Err(); err == nil || err.Error() != noFile {
		t.Fatalf("CONFIG SET save \"900 1\" without a snapshot file: %v", err)
	}
	if got := persistenceField(t, rdb, "aof_fsync"); got != "always" {
		t.Fatalf("aof_fsync %s", got)
	}
	if got := persistenceField(t, rdb, "aof_last_write_status"); got != "ok" {
		t.Fatalf("aof_last_write_status %s", got)
	}
	ts.Close()
	ts2 := startServer(t, Config{Config: core.Config{AppendOnly: true, AOF: aof.Config{Dir: filepath.Join(dir, "appendonlydir")}}})
	if got := do(ts2.client(t, 2), spend); got[:7] != "[1 5 2 " {
		t.Fatalf("replayed: %s, want 2 left", got)
	}
}

// TestWait: WAIT answers the replicas that acknowledged the writes before it, at once
// when enough did, after its timeout otherwise; errors as Redis's.
func TestWait(t *testing.T) {
	p := startServer(t, Config{})
	r1 := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	pc, c1 := p.client(t, 2), r1.client(t, 2)
	waitLinkUp(t, c1)
	do(pc, "RL.FIXED w 5 60000")
	if got := do(pc, "WAIT 1 0"); got != "1" {
		t.Fatalf("WAIT 1 0 with one replica: %s", got)
	}
	if got := do(c1, "RL.FIXED w 5 60000 PEEK"); got[:7] != "[1 5 3 " {
		t.Fatalf("after WAIT, the replica holds %s", got)
	}
	begin := time.Now()
	if got := do(pc, "WAIT 2 200"); got != "1" || time.Since(begin) < 200*time.Millisecond {
		t.Fatalf("WAIT 2 200 with one replica: %s after %v", got, time.Since(begin))
	}
	run(t, pc, []call{
		{"WAIT 0 0", "1"},
		{"WAIT x 0", "ERR value is not an integer or out of range"},
		{"WAIT 1 -1", "ERR timeout is negative"},
	})
	if got := do(c1, "WAIT 0 0"); !strings.HasPrefix(got, "ERR WAIT cannot be used with replica instances") {
		t.Fatalf("WAIT on a replica: %s", got)
	}
}

// TestMinReplicas: with min-replicas-to-write 1 a primary admits while its replica is
// connected and refuses spends with NOREPLICAS once it is gone; PEEKs go on; INFO
// says min_slaves_good_slaves.
func TestMinReplicas(t *testing.T) {
	p := startServer(t, Config{})
	r1, stopReplica := savingServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	pc := p.client(t, 2)
	waitLinkUp(t, r1.client(t, 2))
	poll.Until(t, 10*time.Second, "the replica online", func() bool { return p.ackedReplicas(0) == 1 })
	run(t, pc, []call{
		{"CONFIG SET min-replicas-to-write 1 min-replicas-max-lag 1", "OK"},
		{"CONFIG GET min-replicas-to-write", "[min-replicas-to-write 1]"},
		{"CONFIG GET min-replicas-max-lag", "[min-replicas-max-lag 1]"},
		{"CONFIG SET min-replicas-to-write -1", "ERR CONFIG SET failed (possibly related to argument 'min-replicas-to-write') - argument must be between 0 and 2147483647 inclusive"},
	})
	const spend = "RL.FIXED m 5 31536000000"
	if got := do(pc, spend); got[:7] != "[1 5 4 " {
		t.Fatalf("with its replica: %s", got)
	}
	if got := replInfo(t, pc, "min_slaves_good_slaves"); got != "1" {
		t.Fatalf("min_slaves_good_slaves %s", got)
	}
	stopReplica()
	poll.Until(t, 10*time.Second, "NOREPLICAS", func() bool { return do(pc, spend) == errNoReplicas }) // admitted until then
	peek := do(pc, spend+" PEEK")
	if !strings.HasPrefix(peek, "[1 5 ") {
		t.Fatalf("a PEEK without replicas: %s", peek)
	}
	if got := do(pc, spend); got != errNoReplicas {
		t.Fatalf("a spend without replicas: %s", got)
	}
	if got := replInfo(t, pc, "min_slaves_good_slaves"); got != "0" {
		t.Fatalf("min_slaves_good_slaves %s", got)
	}
	run(t, pc, []call{{"CONFIG SET min-replicas-to-write 0", "OK"}})
	if got := do(pc, spend); got[:7] != peek[:7] {
		t.Fatalf("min-replicas-to-write 0: %s, want the PEEK's %s: a refused spend spent", got, peek)
	}
}
