package resp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

// smallDisk mounts a tmpfs of size bytes for the test and returns its path. Without
// the right to mount (not root) the test is skipped, or fails under
// RLSERVER_REQUIRE_ROOT=1, as CI sets.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("mount -t tmpfs: %v %s (the disk-full test needs root)", err, out)
		if os.Getenv("RLSERVER_REQUIRE_ROOT") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; RLSERVER_REQUIRE_ROOT=1 turns this skip into a failure")
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// waitingClient is a client that waits for a reply as long as it takes.
func waitingClient(t *testing.T, ts *testServer) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// metricValue reads a gauge of the server's registry.
func metricValue(t *testing.T, ts *testServer, name string) (float64, bool) {
	t.Helper()
	mfs, err := ts.core.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestAOFDiskFull: the log on a small tmpfs fills while a client spends new keys.
// Writes are then refused with MISCONF, PEEKs and reads go on, INFO and the metric
// say so; once space is freed writes resume by themselves; every acknowledged spend
// is in the log after a restart, and the log's files are whole. Under always, the
// reply of a spend made as the disk filled waits for its record to be on disk.
func TestAOFDiskFull(t *testing.T) {
	for _, policy := range []aof.Fsync{aof.FsyncEverySec, aof.FsyncAlways} {
		t.Run(policy.String(), func(t *testing.T) { diskFull(t, policy) })
	}
}

func diskFull(t *testing.T, policy aof.Fsync) {
	disk := smallDisk(t, 256<<10)
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 200<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Config: core.Config{AppendOnly: true, AOF: aof.Config{Dir: filepath.Join(disk, "aof"), Fsync: policy, RewritePercentage: -1}}}
	ts, stop := savingServer(t, cfg)
	ctx := context.Background()
	rdb := ts.client(t, 2)
	spender := waitingClient(t, ts) // under always, the first spend the disk refused waits on it
	const window = "31536000000"
	acked := 0
	refused := ""
	pending := make(chan error, 1)
	for i := 0; refused == ""; i++ {
		if i > 200000 {
			t.Fatal("the disk never filled")
		}
		done := make(chan error, 1)
		go func() { done <- spender.Do(ctx, "RL.FIXED", fmt.Sprintf("key:%d", i), 5, window).Err() }()
		select {
		case err := <-done:
			if err != nil {
				refused = err.Error()
				break
			}
			acked++
			continue
		case <-time.After(2 * time.Second):
			// always: the reply waits for the disk; another client sees the refusal
			pending = done
			acked++ // acknowledged once the disk has room again, checked below
			spender = waitingClient(t, ts)
			refused = spender.Do(ctx, "RL.FIXED", "another", 5, window).Err().Error()
		}
	}
	if !strings.HasPrefix(refused, "MISCONF Errors writing to the AOF file: write: ") ||
		!strings.Contains(refused, "no space left on device") {
		t.Fatalf("refusal %q", refused)
	}
	if got := do(rdb, "RL.FIXED key:0 5 "+window+" PEEK"); !strings.HasPrefix(got, "[1 5 3 ") {
		t.Fatalf("a PEEK on a full disk: %s", got)
	}
	if got := persistenceField(t, rdb, "aof_last_write_status"); got != "err" {
		t.Fatalf("aof_last_write_status %s", got)
	}
	if v, ok := metricValue(t, ts, "rlserver_aof_last_write_ok"); !ok || v != 0 {
		t.Fatalf("rlserver_aof_last_write_ok %v %v", v, ok)
	}
	os.Remove(filler)
	poll.Until(t, 10*time.Second, "writes to resume", func() bool {
		return spender.Do(ctx, "RL.FIXED", "after", 5, window).Err() == nil
	})
	acked++
	if len(pending) == 1 || policy == aof.FsyncAlways {
		select {
		case err := <-pending:
			if err != nil {
				t.Fatalf("the spend that waited on the disk: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the spend that waited on the disk never answered")
		}
	}
	if got := persistenceField(t, rdb, "aof_last_write_status"); got != "ok" {
		t.Fatalf("aof_last_write_status %s after space returned", got)
	}
	if v, _ := metricValue(t, ts, "rlserver_aof_last_write_ok"); v != 1 {
		t.Fatalf("rlserver_aof_last_write_ok %v after space returned", v)
	}
	rdb.ShutdownNoSave(ctx)
	stop()
	checks, err := aof.Check(filepath.Join(disk, "aof", aof.DefaultName+".manifest"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Err != nil {
			t.Fatalf("after a full disk: %s: %v", c.Path, c.Err)
		}
	}
	again := startServer(t, cfg)
	r2 := again.client(t, 2)
	missing := 0
	for i := range acked - 1 {
		if got := do(r2, fmt.Sprintf("RL.FIXED key:%d 5 %s PEEK", i, window)); !strings.HasPrefix(got, "[1 5 3 ") {
			missing++
		}
	}
	if got := do(r2, "RL.FIXED after 5 "+window+" PEEK"); !strings.HasPrefix(got, "[1 5 3 ") {
		missing++
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged spends missing after the restart", missing, acked)
	}
	t.Logf("%s: %d spends acknowledged, refused with %q, all there after the restart", policy, acked, refused)
}
