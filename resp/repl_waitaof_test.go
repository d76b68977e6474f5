package resp

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
)

// TestWaitAOF: WAITAOF answers as Redis 7.2's tests/unit/wait.tcl expects (the
// installed redis-server, 7.0, has no WAITAOF to compare with side by side): [1 0]
// under appendfsync always at once and under everysec within its second, [0 0] after
// the timeout under no, Redis's errors for bad arguments, for numlocal without
// appendonly and on a replica; a replica without appendonly never counts, as in
// Redis; one with it counts once its log synced the write (its FACK), never under its
// appendfsync no.
func TestWaitAOF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aofdir")
	p := startServer(t, Config{Config: core.Config{AppendOnly: true, AOF: aof.Config{Dir: dir, Fsync: aof.FsyncNo}}})
	pc := p.client(t, 2)
	do(pc, "RL.FIXED k 5 60000")
	begin := time.Now()
	if got := do(pc, "WAITAOF 1 0 50"); got != "[0 0]" || time.Since(begin) < 50*time.Millisecond {
		t.Fatalf("WAITAOF 1 0 50 under appendfsync no: %s after %v, want [0 0] at the timeout", got, time.Since(begin))
	}
	for _, policy := range []string{"everysec", "always"} {
		do(pc, "CONFIG SET appendfsync "+policy)
		do(pc, "RL.FIXED k 5 60000")
		if got := do(pc, "WAITAOF 1 0 0"); got != "[1 0]" {
			t.Fatalf("WAITAOF 1 0 0 under appendfsync %s: %s", policy, got)
		}
	}
	r1 := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	c1 := r1.client(t, 2)
	waitLinkUp(t, c1)
	do(pc, "RL.FIXED k 5 60000")
	begin = time.Now()
	if got := do(pc, "WAITAOF 0 1 100"); got != "[1 0]" || time.Since(begin) < 100*time.Millisecond {
		t.Fatalf("WAITAOF 0 1 100 with a replica without appendonly: %s after %v", got, time.Since(begin))
	}

	// A replica with appendonly yes reports the offset its log synced (FACK): it
	// counts once its sync covers the write, never under its appendfsync no. (A
	// key of its own each time: a refused call writes nothing to wait for.)
	r2 := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr, AppendOnly: true,
		AOF: aof.Config{Dir: filepath.Join(t.TempDir(), "replica"), Fsync: aof.FsyncAlways}}})
	c2 := r2.client(t, 2)
	waitLinkUp(t, c2)
	do(pc, "RL.FIXED fack1 5 60000")
	if got := do(pc, "WAITAOF 1 1 5000"); got != "[1 1]" {
		t.Fatalf("WAITAOF 1 1 5000 with a replica under appendfsync always: %s", got)
	}
	begin = time.Now()
	if got := do(pc, "WAITAOF 0 2 200"); got != "[1 1]" || time.Since(begin) < 200*time.Millisecond {
		t.Fatalf("WAITAOF 0 2 200 with one replica of two logging: %s after %v", got, time.Since(begin))
	}
	do(c2, "CONFIG SET appendfsync no")
	do(pc, "RL.FIXED fack2 5 60000")
	if got := do(pc, "WAITAOF 0 1 300"); got != "[1 0]" {
		t.Fatalf("WAITAOF 0 1 300 with the replica under appendfsync no: %s", got)
	}
	do(c2, "CONFIG SET appendfsync everysec")
	begin = time.Now()
	if got := do(pc, "WAITAOF 0 1 5000"); got != "[1 1]" {
		t.Fatalf("WAITAOF 0 1 5000 with the replica under appendfsync everysec: %s after %v", got, time.Since(begin))
	}
	t.Logf("a replica under everysec counted after %v", time.Since(begin))

	run(t, pc, []call{
		{"WAITAOF 2 0 0", "ERR value is out of range, value must between 0 and 1"},
		{"WAITAOF -1 0 0", "ERR value is out of range, value must between 0 and 1"},
		{"WAITAOF 0 -1 0", "ERR value is out of range, must be positive"},
		{"WAITAOF x 0 0", "ERR value is not an integer or out of range"},
		{"WAITAOF 0 x 0", "ERR value is not an integer or out of range"},
		{"WAITAOF 0 0 x", "ERR timeout is not an integer or out of range"},
		{"WAITAOF 0 0 -1", "ERR timeout is negative"},
		{"WAITAOF 0 0", "ERR wrong number of arguments for 'waitaof' command"},
		{"CONFIG SET appendonly no", "OK"},
		{"WAITAOF 1 0 0", errWaitAOFOff},
		{"WAITAOF 0 0 0", "[0 1]"}, // the replica logging has synced it all
	})
	if got := do(c1, "WAITAOF 0 0 0"); !strings.HasPrefix(got, "ERR WAITAOF cannot be used with replica instances") {
		t.Fatalf("WAITAOF on a replica: %s", got)
	}
}

// TestMinSlavesAliases: Redis's older names of min-replicas-to-write and
// min-replicas-max-lag set and get the same values.
func TestMinSlavesAliases(t *testing.T) {
	rdb := startServer(t, Config{}).client(t, 2)
	run(t, rdb, []call{
		{"CONFIG SET min-slaves-to-write 2 min-slaves-max-lag 7", "OK"},
		{"CONFIG GET min-replicas-to-write", "[min-replicas-to-write 2]"},
		{"CONFIG GET min-replicas-max-lag", "[min-replicas-max-lag 7]"},
		{"CONFIG SET min-replicas-to-write 1", "OK"},
		{"CONFIG GET min-slaves-to-write", "[min-slaves-to-write 1]"},
		{"CONFIG SET min-slaves-max-lag x", "ERR CONFIG SET failed (possibly related to argument 'min-slaves-max-lag') - argument couldn't be parsed into an integer"},
		{"RL.FIXED k 5 60000", errNoReplicas},
	})
}
