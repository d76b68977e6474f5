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
// appendonly and on a replica; replicas count 0, as Redis's without appendonly.
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
		{"WAITAOF 0 0 0", "[0 0]"},
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
