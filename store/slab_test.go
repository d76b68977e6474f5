package store

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// Keys of every length from empty to past the widest record's room, of a tat kind and
// of a wide one, land in each slab and in chunks; every one is found, scanned, snapshotted and removed at its own
// deadline, though 16 records share one id in their slab's wheel.
func TestRecordsOfEveryStride(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	var keys []string
	deadline := map[string]int64{}
	for n := range maxInlineKey + 10 {
		for i, kind := range []algo.Kind{algo.KindGCRA, algo.KindToken} { // tat and wide records
			key := string(bytes.Repeat([]byte{"aA"[i] + byte(n%26)}, n))
			if n == 0 && i > 0 {
				continue // one empty key
			}
			window := int64(n+1)*10*ms + int64(i)*5*ms // each key its own deadline
			if _, err := s.Do([]byte(key), request(kind, 1, window), t0); err != nil {
				t.Fatal(err)
			}
			ttl, ok := s.TTL([]byte(key), t0)
			if !ok || ttl < window {
				t.Fatalf("TTL of a new %d-byte %s key = %d, %v; want at least %d", n, kind, ttl, ok, window)
			}
			keys = append(keys, key)
			deadline[key] = t0 + ttl
		}
	}
	used := map[int]bool{}
	s.shards[0].each(func(slot uint32, e entry) { used[int(slot>>slotClassShift)] = true })
	if len(used) != len(slabClasses) {
		t.Fatalf("records of slabs %v used, want all %d", used, len(slabClasses))
	}
	if got := scanAll(s, 3, "", 0, t0); len(got) != len(keys) {
		t.Fatalf("SCAN found %d keys, want %d", len(got), len(keys))
	}
	loaded := newStore(t, Config{Shards: 4})
	if _, err := loaded.ReadSnapshot(bytes.NewReader(snapshotOf(t, s, t0)), t0); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, loaded} {
		for _, key := range keys {
			if ttl, ok := st.TTL([]byte(key), t0); !ok || t0+ttl != deadline[key] {
				t.Fatalf("TTL(%d-byte key) = %d, %v; want %d", len(key), ttl, ok, deadline[key]-t0)
			}
		}
	}
	// Step the clock across the deadlines: Expire removes exactly the keys due.
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b string) int { return int(deadline[a] - deadline[b]) })
	for i, key := range sorted {
		now := deadline[key]
		if n := s.Expire(now - 1); n != 0 {
			t.Fatalf("Expire(%d-byte key's deadline - 1µs) removed %d keys", len(key), n)
		}
		if n := s.Expire(now); n != 1 {
			t.Fatalf("Expire at the %d-byte key's deadline removed %d keys, want 1", len(key), n)
		}
		if left := s.Stats().Keys; left != len(keys)-i-1 {
			t.Fatalf("%d keys left after %d deadlines, want %d", left, i+1, len(keys)-i-1)
		}
	}
	if b, empty := s.Stats().Bytes, newStore(t, Config{Shards: 1}).Stats().Bytes; b != empty {
		t.Fatalf("%d bytes held after the last key went, %d by an empty store (the wheels' heads)", b, empty)
	}
}

// Under -maxmemory the key evicted is the one due soonest, whatever slab it is in and
// wherever it sits in its group.
func TestEvictAcrossSlabs(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	sh := &s.shards[0]
	for i := range 200 {
		key := fmt.Sprintf("%0*d", 1+i%60, i) // lengths 1 to 60: every slab, chunks too
		window := int64(1000-i) * sec         // the last created is due first
		if _, err := s.Do([]byte(key), request(algo.KindGCRA, 1, window), t0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 199; i >= 190; i-- {
		sh.mu.Lock()
		ok := sh.evictOne(t0)
		sh.mu.Unlock()
		key := fmt.Sprintf("%0*d", 1+i%60, i)
		if !ok || s.Exists([]byte(key), t0) {
			t.Fatalf("eviction %d: %v, and key %q (due soonest) still there", 199-i, ok, key)
		}
	}
	if st := s.Stats(); st.Keys != 190 || st.Evicted != 10 {
		t.Fatalf("%d keys, %d evicted; want 190, 10", st.Keys, st.Evicted)
	}
}
