package resp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/store"
)

func TestParseMemory(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1048576", 1 << 20, true}, {"100mb", 100 << 20, true}, {"1GB", 1 << 30, true},
		{"500k", 500_000, true}, {"2m", 2_000_000, true}, {"3g", 3_000_000_000, true}, {"7b", 7, true},
		{"", 0, false}, {"-1", 0, false}, {"1tb", 0, false}, {"mb", 0, false}, {"99999999999gb", 0, false},
	} {
		got, err := ParseMemory(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// infoField returns one field of INFO section.
func infoField(t *testing.T, ts *testServer, section, field string) string {
	t.Helper()
	info := do(ts.client(t, 3), "INFO "+section)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	return ""
}

func TestMaxMemoryNoEviction(t *testing.T) {
	ts := startServer(t, Config{Config: core.Config{Shards: 1, MaxMemory: 64 << 10, MaxMemoryPolicy: store.PolicyNoEviction}})
	ts.core.SetClock(t0)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	n := 0
	var oom error
	for ; n < 100_000; n++ {
		if _, oom = rdb.Do(ctx, "RL.TOKEN", fmt.Sprintf("k:%014d", n), 10, 60000).Result(); oom != nil {
			break
		}
	}
	if want := "OOM command not allowed when used memory > 'maxmemory'."; oom == nil || oom.Error() != want {
		t.Fatalf("after %d keys: %v, want %q", n, oom, want)
	}
	run(t, rdb, []call{
		{"DBSIZE", fmt.Sprint(n)},
		{"RL.TOKEN k:00000000000000 10 60000", "[1 10 8 0 12000]"}, // an existing key still works
		{"CONFIG GET maxmemory*", "[maxmemory 65536 maxmemory-policy noeviction]"},
	})
	if got := do(rdb, "DBSIZE"); got != fmt.Sprint(n) {
		t.Fatalf("DBSIZE %s after refusals, want %d", got, n)
	}
	for field, want := range map[string]string{
		"maxmemory": "65536", "maxmemory_human": "64.00K", "maxmemory_policy": "noeviction",
	} {
		if got := infoField(t, ts, "memory", field); got != want {
			t.Errorf("INFO %s = %q, want %q", field, got, want)
		}
	}
	if got := infoField(t, ts, "stats", "evicted_keys"); got != "0" {
		t.Errorf("evicted_keys = %s, want 0", got)
	}
}

func TestMaxMemoryVolatileTTL(t *testing.T) {
	ts := startServer(t, Config{Config: core.Config{Shards: 1, MaxMemory: 64 << 10}})
	rdb := ts.client(t, 3)
	ctx := context.Background()
	for n := range 3000 {
		if err := rdb.Do(ctx, "RL.TOKEN", fmt.Sprintf("k:%014d", n), 10, 60000).Err(); err != nil {
			t.Fatalf("key %d: %v", n, err)
		}
	}
	evicted := infoField(t, ts, "stats", "evicted_keys")
	keys := do(rdb, "DBSIZE")
	if evicted == "0" || fmt.Sprint(3000-atoiT(t, evicted)) != keys {
		t.Fatalf("evicted_keys %s, DBSIZE %s, for 3000 keys", evicted, keys)
	}
	if got := atoiT(t, infoField(t, ts, "memory", "used_memory_dataset")); got > 64<<10 {
		t.Fatalf("used_memory_dataset %d over maxmemory", got)
	}
	run(t, rdb, []call{{"CONFIG GET maxmemory-policy", "{maxmemory-policy:volatile-ttl}"}})
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}
