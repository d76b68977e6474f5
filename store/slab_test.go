package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// Keys of every length from empty to past the widest record's room, of a kind of each
// record form, land in each slab and in chunks; every one is found, scanned, snapshotted and removed at its own
// deadline, though 16 records share one id in their slab's wheel.
func TestRecordsOfEveryStride(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	var keys []string
	deadline := map[string]int64{}
	for n := range maxInlineKey + 10 {
		for i, c := range []struct {
			kind algo.Kind
			long int64 // added to the window
		}{
			{algo.KindGCRA, 0}, {algo.KindToken, 0}, {algo.KindFixed, 0}, {algo.KindSlide, 0},
			{algo.KindToken, 20 * 60 * sec}, // fills up again after 17.9 min: a wide record
		} { // every form
			key := string(bytes.Repeat([]byte{"aA0!~"[i] + byte(n%26)}, n))
			if n == 0 && i > 0 {
				continue // one empty key
			}
			window := int64(n+1)*10*ms + int64(i)*3*ms + c.long
			if _, err := s.Do([]byte(key), request(c.kind, 1, window), t0); err != nil {
				t.Fatal(err)
			}
			ttl, ok := s.TTL([]byte(key), t0)
			if c.kind == algo.KindSlide {
				window *= 2 // fresh at the end of the next window
			}
			if !ok || ttl <= 0 || ttl > window+1 {
				t.Fatalf("TTL of a new %d-byte %s key = %d, %v; want within %d µs", n, c.kind, ttl, ok, window)
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
	due := map[int64]int{}
	for _, d := range deadline {
		due[d]++
	}
	left := len(keys)
	for _, d := range slices.Sorted(maps.Keys(due)) {
		if n := s.Expire(d - 1); n != 0 {
			t.Fatalf("Expire a µs before a deadline removed %d keys", n)
		}
		if n := s.Expire(d); n != due[d] {
			t.Fatalf("Expire at a deadline removed %d keys, want %d", n, due[d])
		}
		if left -= due[d]; s.Stats().Keys != left {
			t.Fatalf("%d keys left, want %d", s.Stats().Keys, left)
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

// A fixed record packs the window index into 6 bytes, which times below 2^53 µs never
// overflow; a later time moves the key to a wide record, and its count goes on.
func TestFixedRecordOutgrown(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	r := request(algo.KindFixed, 10, ms)
	late := int64(1) << 58 // window index 2^58/1000 > 2^48
	for i, c := range []struct{ now, remaining int64 }{{t0, 9}, {late, 9}, {late, 8}} {
		d, err := s.Do([]byte("k"), r, c.now)
		if want := c.remaining; err != nil || !d.Allowed || d.Remaining != want {
			t.Fatalf("call %d: %+v, %v; want allowed, %d remaining", i, d, err, want)
		}
	}
	sh := &s.shards[0]
	sh.each(func(slot uint32, e entry) {
		if a, b := e.state(); e.form != formWide || a != uint64(late/ms) || b != 2 {
			t.Fatalf("record of form %d holds %d, %d; want a wide record with %d, 2", slabClasses[slot>>slotClassShift].form, a, b, late/ms)
		}
	})
}

// States on both sides of each compact form's limits, and times before 2020 and past
// 2055, where a bucket record cannot hold a refill time: keys move between compact
// and wide records and every answer, TTL and kind stays the model's.
func TestCompactFormLimits(t *testing.T) {
	const minute = 60 * sec
	windows := map[algo.Kind][]int64{
		algo.KindToken: {sec, 17 * minute, 18 * minute, 24 * 60 * minute}, // fills again within 2^30 µs or not
		algo.KindSlide: {ms, sec, maxSlideSpan * ms, (maxSlideSpan + 1) * ms, 365 * 24 * 60 * minute},
	} // RL.FIXED's limit is past 2^53 µs: TestFixedRecordOutgrown
	for kind, ws := range windows {
		t.Run(kind.String(), func(t *testing.T) {
			c := newChecker(t, Config{Shards: 1})
			rng := rand.New(rand.NewPCG(uint64(kind), 13))
			forms := map[uint8]bool{}
			for _, start := range []int64{1e12, t0, bucketEpoch + maxBucketTS - 2*sec} {
				now := start
				for range 3000 {
					key := fmt.Sprintf("k%d", rng.IntN(8))
					r := request(kind, 1+rng.Int64N(3), ws[rng.IntN(len(ws))])
					now += rng.Int64N(5 * ms)
					c.do(key, r, now)
					c.s.shards[0].each(func(_ uint32, e entry) { forms[e.form] = true })
				}
			}
			if want := compactForms[kind]; !forms[want] || !forms[formWide] {
				t.Fatalf("records of forms %v, want both %d and wide", forms, want)
			}
		})
	}
}

// A slab that numbers as many records as a slot can refuses a new key of its size,
// with ErrShardFull and nothing written, where its number would have run into the
// slot's class bits; keys of other sizes and existing keys go on.
func TestSlabFull(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	r := request(algo.KindGCRA, 10, sec)
	if _, err := s.Do([]byte("old"), r, t0); err != nil {
		t.Fatal(err)
	}
	full := &s.shards[0].slabs[placementFor(3, algo.KindGCRA, 0, 0, 0, 0).rec]
	n := full.n
	full.n = slotIndexMask + 1 // as if 2^26 records had been handed out
	defer func() { full.n = n }()
	if _, err := s.Do([]byte("new"), r, t0); !errors.Is(err, ErrShardFull) || s.Exists([]byte("new"), t0) {
		t.Fatalf("a new key in a full slab: %v, exists %v; want ErrShardFull and no key", err, s.Exists([]byte("new"), t0))
	}
	if d, err := s.Do([]byte("old"), r, t0); err != nil || d.Remaining != 8 {
		t.Fatalf("the existing key: %+v, %v; want decided, 8 remaining", d, err)
	}
	if _, err := s.Do([]byte("a longer key, another slab"), r, t0); err != nil {
		t.Fatal(err)
	}
}
