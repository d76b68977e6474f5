package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/aof"
)

// TestReplicaPositionFile: a replica started on a loaded log takes the position
// beside it; an unreadable position, a replica without a loaded log and a primary
// start with none and remove the file.
func TestReplicaPositionFile(t *testing.T) {
	id := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name      string
		text      string
		replicaOf string
		logged    bool // a log to load is there
		want      int64
		kept      bool
	}{
		{"a replica on its log", id + " 1234 3\n", "127.0.0.1:1", true, 1234, true},
		{"unreadable", "not a position\n", "127.0.0.1:1", true, 0, false},
		{"a short replication id", "abc 1234 3\n", "127.0.0.1:1", true, 0, false},
		{"a negative offset", id + " -5 3\n", "127.0.0.1:1", true, 0, false},
		{"no log loaded", id + " 1234 3\n", "127.0.0.1:1", false, 0, false},
		{"a primary", id + " 1234 3\n", "", true, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aof")
			cfg := Config{AppendOnly: true, AOF: aof.Config{Dir: dir}}
			if tc.logged {
				c := newCore(t, cfg)
				spend(c, "k")
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, aof.DefaultName+".replica")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg.ReplicaOf = tc.replicaOf
			c := newCore(t, cfg)
			defer c.Close()
			st := c.Replication().Status()
			if tc.want > 0 && (st.Applied != tc.want || st.ReplID != id) {
				t.Errorf("started at %s %d, want %s %d", st.ReplID, st.Applied, id, tc.want)
			}
			if tc.want == 0 && st.Applied != 0 {
				t.Errorf("started at offset %d, want none", st.Applied)
			}
			if _, err := os.Stat(path); (err == nil) != tc.kept {
				t.Errorf("the position file kept: %v, want %v", err == nil, tc.kept)
			}
		})
	}
}
