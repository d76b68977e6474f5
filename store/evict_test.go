package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

func TestNewValidatesMemoryConfig(t *testing.T) {
	tests := []struct {
		cfg     Config
		wantErr string
	}{
		{Config{Shards: 1, MaxMemory: 16 << 10}, ""},
		{Config{Shards: 4, MaxMemory: 1 << 20, Policy: PolicyNoEviction}, ""},
		{Config{Shards: 4, MaxMemory: 60000}, "store: MaxMemory must be 0 (no limit) or at least 65536 bytes (16 KiB per shard), got 60000"},
		{Config{Shards: 1, MaxMemory: -1}, "store: MaxMemory must be 0 (no limit) or at least 16384 bytes (16 KiB per shard), got -1"},
		{Config{Shards: 1, Policy: 7}, "store: Policy must be PolicyVolatileTTL or PolicyNoEviction, got 7"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if got := fmt.Sprint(err); tt.wantErr == "" && err != nil || tt.wantErr != "" && got != tt.wantErr {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.wantErr)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tt := range []struct {
		name string
		want Policy
		ok   bool
	}{
		{"volatile-ttl", PolicyVolatileTTL, true},
		{"NOEVICTION", PolicyNoEviction, true},
		{"allkeys-lru", 0, false},
	} {
		p, err := ParsePolicy(tt.name)
		if (err == nil) != tt.ok || tt.ok && (p != tt.want || p.String() != map[Policy]string{PolicyVolatileTTL: "volatile-ttl", PolicyNoEviction: "noeviction"}[p]) {
			t.Errorf("ParsePolicy(%q) = %v, %v", tt.name, p, err)
		}
	}
}

// fixedKey creates a 16-byte RL.FIXED key fresh at the end of its window.
func fixedKey(t *testing.T, s *Store, key string, window, now int64) error {
	t.Helper()
	_, err := s.Do([]byte(key), request(algo.KindFixed, 10, window), now)
	if err != nil && !errors.Is(err, ErrOOM) {
		t.Fatalf("Do(%s): %v", key, err)
	}
	return err
}

// Filling past the budget evicts the keys closest to fresh and keeps memory bounded.
func TestEvictVolatileTTL(t *testing.T) {
	const budget = 64 << 10
	s := newStore(t, Config{Shards: 1, MaxMemory: budget})
	groups := []struct {
		prefix string
		n      int
		window int64
	}{
		{"hour", 500, 3600 * sec},  // created first, fresh in an hour
		{"soon", 300, 10 * sec},    // created next, fresh within 10 s: go first
		{"late", 1000, 7200 * sec}, // created last, fresh last: the ones that overflow
	}
	for _, g := range groups {
		for i := range g.n {
			if err := fixedKey(t, s, fmt.Sprintf("%s:%011d", g.prefix, i), g.window, t0); err != nil {
				t.Fatalf("volatile-ttl refused a key: %v", err)
			}
			if b := s.Stats().Bytes; b > budget {
				t.Fatalf("%s %d: %d bytes, over the %d budget", g.prefix, i, b, budget)
			}
		}
	}
	left := map[string]int{}
	for _, g := range groups {
		for i := range g.n {
			if s.Exists([]byte(fmt.Sprintf("%s:%011d", g.prefix, i)), t0) {
				left[g.prefix]++
			}
		}
	}
	st := s.Stats()
	gone := 1800 - st.Keys
	t.Logf("kept %v, evicted %d, %d bytes", left, st.Evicted, st.Bytes)
	if st.Evicted == 0 || uint64(gone) != st.Evicted || st.Expired != 0 {
		t.Fatalf("Evicted %d, Expired %d, keys gone %d", st.Evicted, st.Expired, gone)
	}
	if left["hour"] < 500 && left["soon"] > 0 {
		t.Errorf("evicted hour keys while %d soon keys were left", left["soon"])
	}
	if left["late"] < 1000 && left["hour"] > 0 {
		t.Errorf("evicted late keys while %d hour keys were left", left["hour"])
	}
	if left["soon"] == 300 {
		t.Error("no soon key evicted")
	}
}

// A key that is due already is expired, not evicted, when eviction meets it.
func TestEvictCountsDueKeysAsExpired(t *testing.T) {
	s := newStore(t, Config{Shards: 1, MaxMemory: 32 << 10})
	n := 0
	for ; s.Stats().Evicted == 0; n++ {
		fixedKey(t, s, fmt.Sprintf("k:%014d", n), 3600*sec, t0)
	}
	before := s.Stats()
	// 1 ms later a 1 ms window is fresh again: created at t0, it waits in the wheel
	// (Do never sweeps twice within one ms) and is the first in line.
	fixedKey(t, s, "due:00000000000", ms, t0)
	fixedKey(t, s, fmt.Sprintf("k:%014d", n), 3600*sec, t0+ms)
	after := s.Stats()
	if after.Expired != before.Expired+1 {
		t.Fatalf("Expired %d -> %d, Evicted %d -> %d", before.Expired, after.Expired, before.Evicted, after.Evicted)
	}
}

func TestNoEviction(t *testing.T) {
	const budget = 64 << 10
	s := newStore(t, Config{Shards: 1, MaxMemory: budget, Policy: PolicyNoEviction})
	n := 0
	for ; n < 100_000; n++ {
		if err := fixedKey(t, s, fmt.Sprintf("k:%014d", n), 3600*sec, t0); err != nil {
			break
		}
	}
	if n == 100_000 {
		t.Fatal("never refused a key")
	}
	// Every kind's slabs too, so that none has a record or the room for a new slab left.
	for i, k := range kinds {
		for err := error(nil); err == nil; n++ {
			_, err = s.Do(fmt.Appendf(nil, "fill:%d:%010d", i, n), request(k, 10, 3600*sec), t0)
			if err != nil && !errors.Is(err, ErrOOM) {
				t.Fatal(err)
			}
		}
		n--
	}
	st := s.Stats()
	if st.Bytes > budget || st.Keys != n || st.Evicted != 0 {
		t.Fatalf("after %d keys: %+v", n, st)
	}
	// Refused for every kind, RL.LOG included, and the refusal changes nothing.
	for _, k := range kinds {
		if _, err := s.Do([]byte("new:0000000000000"), request(k, 10, sec), t0); !errors.Is(err, ErrOOM) {
			t.Errorf("%v on a new key: %v, want ErrOOM", k, err)
		}
	}
	if got := s.Stats(); got.Keys != n || got.Allowed != st.Allowed || got.Limited != st.Limited {
		t.Fatalf("a refused call changed the store: %+v, was %+v", got, st)
	}
	// Existing keys keep working.
	d, err := s.Do([]byte("k:00000000000000"), request(algo.KindFixed, 10, 3600*sec), t0)
	if err != nil || !d.Allowed || d.Remaining != 8 {
		t.Fatalf("existing key: %+v, %v", d, err)
	}
	// A deleted key makes room for one new key of its size.
	s.Delete([]byte("k:00000000000001"), t0)
	if err := fixedKey(t, s, "new:000000000000", 3600*sec, t0); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if err := fixedKey(t, s, "new:000000000001", 3600*sec, t0); !errors.Is(err, ErrOOM) {
		t.Fatalf("second new key: %v, want ErrOOM", err)
	}
}

// SetMaxMemory bounds a running store, refuses a bad bound changing nothing, and lifts
// the bound again.
func TestSetMaxMemory(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	if err := s.SetMaxMemory(1000, PolicyNoEviction); err == nil {
		t.Fatal("a bound under one page was accepted")
	}
	n := 0
	for ; n < 5000; n++ {
		if fixedKey(t, s, fmt.Sprintf("k:%014d", n), 3600*sec, t0) != nil {
			t.Fatalf("refused key %d with no bound (the bad SetMaxMemory changed something)", n)
		}
	}
	if err := s.SetMaxMemory(16<<10, PolicyNoEviction); err != nil {
		t.Fatal(err)
	}
	if err := fixedKey(t, s, "one-more", 3600*sec, t0); !errors.Is(err, ErrOOM) {
		t.Fatalf("over the new bound under noeviction: %v, want ErrOOM", err)
	}
	if err := s.SetMaxMemory(0, PolicyVolatileTTL); err != nil {
		t.Fatal(err)
	}
	if err := fixedKey(t, s, "one-more", 3600*sec, t0); err != nil {
		t.Fatalf("with the bound lifted: %v", err)
	}
}
