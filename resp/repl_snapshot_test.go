package resp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

// persistenceField returns one field of INFO persistence.
func persistenceField(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO persistence has no %s:\n%s", name, info)
	return ""
}

// TestSnapshotRestart: the state a server leaves is the state the next one starts
// with, however the first one stopped, unless SHUTDOWN NOSAVE said otherwise. The
// real clock runs: a bucket of 5 per hour is still drained a moment later.
func TestSnapshotRestart(t *testing.T) {
	const bucket = "RL.TOKEN k 5 3600000"
	bucketArgs := []any{"RL.TOKEN", "k", 5, 3600000}
	for _, tc := range []struct {
		name string
		stop func(rdb *redis.Client, stop func() error) error
		want []int64 // the reply to the first call after the restart
	}{
		{"Close (SIGTERM's path)", func(_ *redis.Client, stop func() error) error { return stop() }, []int64{0, 5, 0, 720000, 3600000}},
		{"SHUTDOWN", func(rdb *redis.Client, stop func() error) error {
			rdb.Shutdown(context.Background())
			return stop()
		}, []int64{0, 5, 0, 720000, 3600000}},
		{"SHUTDOWN SAVE", func(rdb *redis.Client, stop func() error) error {
			rdb.ShutdownSave(context.Background())
			return stop()
		}, []int64{0, 5, 0, 720000, 3600000}},
		{"SHUTDOWN NOSAVE", func(rdb *redis.Client, stop func() error) error {
			rdb.ShutdownNoSave(context.Background())
			return stop()
		}, []int64{1, 5, 4, 0, 720000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rl.snap")
			cfg := Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: time.Hour}} // only the final save
			a, stop := savingServer(t, cfg)
			rdb := redis.NewClient(&redis.Options{Addr: a.addr, MaxRetries: -1})
			defer rdb.Close()
			drained := time.Now()
			for range 5 {
				do(rdb, bucket)
			}
			if err := tc.stop(rdb, stop); err != nil {
				t.Fatalf("stopping: %v", err)
			}
			b, _ := savingServer(t, cfg)
			got, err := b.client(t, 3).Do(context.Background(), bucketArgs...).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			// The real clock ran for elapsed ms since the drain: the times shrank by
			// at most that much, and the rest is exact.
			elapsed := time.Since(drained).Milliseconds() + 1
			for i, w := range tc.want {
				if got[i] > w || got[i] < w-elapsed || i < 3 && got[i] != w {
					t.Errorf("after restart: %v, want %v (times less at most %d ms)", got, tc.want, elapsed)
					break
				}
			}
		})
	}
}

// TestSaveAndLastSave covers SAVE, LASTSAVE and INFO persistence with and without a file.
func TestSaveAndLastSave(t *testing.T) {
	off := startServer(t, Config{})
	rdb := off.client(t, 3)
	before := time.Now().Unix()
	run(t, rdb, []call{
		{"SAVE", errNoSnapshot},
		{"SHUTDOWN SAVE", errNoSnapshot},
		{"PING", "PONG"}, // still serving
	})
	if got := persistenceField(t, rdb, "snapshot_enabled"); got != "0" {
		t.Errorf("snapshot_enabled = %s, want 0", got)
	}
	if last, err := rdb.LastSave(context.Background()).Result(); err != nil || last < before-1 || last > time.Now().Unix() {
		t.Errorf("LASTSAVE = %d, %v; want the start time", last, err)
	}

	path := filepath.Join(t.TempDir(), "rl.snap")
	on := startServer(t, Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: time.Hour}})
	rdb = on.client(t, 3)
	for _, step := range []struct {
		cmd                  string
		changes, saves, last string
	}{
		{"PING", "0", "0", "-1"},
		{"RL.GCRA a 10 60000", "1", "0", "-1"},
		{"RL.GCRA b 10 60000 PEEK", "2", "0", "-1"}, // a PEEK counts: the store counts calls
		{"SAVE", "0", "1", "0"},
		{"DEL a", "1", "1", "0"},
		{"SAVE", "0", "2", "0"},
		{"RL.ACQUIRE l 2 60000 ID x", "1", "2", "0"},
		{"RL.ACQUIRE l 2 60000 ID y", "2", "2", "0"},
		{"SAVE", "0", "3", "0"},
		{"RL.RENEW l x 90000", "1", "3", "0"}, // keeps the key: counted by the store
		{"RL.RELEASE l x", "2", "3", "0"},
		{"RL.RELEASE l nobody", "2", "3", "0"}, // changes nothing
		{"RL.RELEASE l y", "3", "3", "0"},      // the last lease: the key goes
	} {
		do(rdb, step.cmd)
		for field, want := range map[string]string{"rdb_changes_since_last_save": step.changes,
			"rdb_saves": step.saves, "rdb_last_bgsave_time_sec": step.last, "rdb_last_bgsave_status": "ok"} {
			if got := persistenceField(t, rdb, field); got != want {
				t.Errorf("after %s: %s = %s, want %s", step.cmd, field, got, want)
			}
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("snapshot file: %v, %v; want mode 0600", fi, err)
	}
	if tmp, _ := filepath.Glob(path + ".tmp-*"); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestSaveFails: a save that cannot be written is an error for SAVE and SHUTDOWN, which
// then keeps serving, and INFO shows it.
func TestSaveFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no such dir", "rl.snap")
	ts := startServer(t, Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: time.Hour}})
	rdb := ts.client(t, 3)
	if got := do(rdb, "SAVE"); !strings.HasPrefix(got, "ERR snapshot failed: open "+filepath.Dir(path)) {
		t.Errorf("SAVE = %s", got)
	}
	run(t, rdb, []call{
		{"SHUTDOWN", "ERR Errors trying to SHUTDOWN. Check logs."},
		{"PING", "PONG"},
	})
	if got := persistenceField(t, rdb, "rdb_last_bgsave_status"); got != "err" {
		t.Errorf("rdb_last_bgsave_status = %s, want err", got)
	}
}

// TestSnapshotLoop: a change is saved in the background within the interval.
func TestSnapshotLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.snap")
	ts := startServer(t, Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: 5 * time.Millisecond}})
	rdb := ts.client(t, 3)
	do(rdb, "RL.FIXED k 10 60000")
	poll.Until(t, 10*time.Second, "a background save", func() bool { return persistenceField(t, rdb, "rdb_saves") != "0" })
	if got := persistenceField(t, rdb, "rdb_changes_since_last_save"); got != "0" {
		t.Errorf("rdb_changes_since_last_save = %s after the save, want 0", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// TestSnapshotLoadErrors: an unreadable snapshot stops NewServer with a plain message,
// unless SnapshotIgnoreCorrupt, which starts empty and keeps the file aside; a read
// error that is not about the contents stops it either way.
func TestSnapshotLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contents string // "" makes path a directory
		ignore   bool
		want     string // error prefix after "snapshot PATH: "; "" means it starts
	}{
		{"corrupt", "GARBAGE!", false, "snapshot is corrupt: bad magic \"GARBAGE!\", not an rlserver snapshot (to start empty instead, use -snapshot-ignore-corrupt)"},
		{"truncated", "RLSNAP\r\n\x01\x00", false, "snapshot is corrupt: truncated at byte 10, in the header"},
		{"corrupt, ignored", "GARBAGE!", true, ""},
		{"a directory", "", true, "read "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rl.snap")
			if tc.contents == "" {
				os.Mkdir(path, 0o700)
			} else if err := os.WriteFile(path, []byte(tc.contents), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := NewServer(Config{Config: core.Config{SnapshotPath: path, SnapshotIgnoreCorrupt: tc.ignore, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("NewServer: %v", err)
			case tc.want == "":
				if kept, err := os.ReadFile(path + ".corrupt"); err != nil || string(kept) != tc.contents {
					t.Errorf("the corrupt file was not kept aside: %q, %v", kept, err)
				}
			case err == nil || !strings.HasPrefix(err.Error(), "snapshot "+path+": "+tc.want):
				t.Errorf("NewServer: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := NewServer(Config{Config: core.Config{SnapshotInterval: -time.Second}}); err == nil ||
		err.Error() != "core: SnapshotInterval must be 0 (default) or positive, got -1s" {
		t.Errorf("negative SnapshotInterval: %v", err)
	}
	if _, err := NewServer(Config{Config: core.Config{SnapshotPath: filepath.Join(t.TempDir(), "absent"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}); err != nil {
		t.Errorf("a missing snapshot is a first start, got %v", err)
	}
}

// TestSnapshotFinalSaveError: a final save that fails is Serve's error, so that the
// process exits non-zero.
func TestSnapshotFinalSaveError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "rl.snap")
	os.Mkdir(filepath.Dir(path), 0o700)
	ts, stop := savingServer(t, Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: time.Hour}})
	do(ts.client(t, 3), "RL.FIXED k 10 60000")
	os.Remove(filepath.Dir(path))
	if err := stop(); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Serve = %v, want the failed save's error", err)
	}
}
