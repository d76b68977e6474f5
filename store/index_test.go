package store

import (
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap inserts and removes at random, growing the table as the shard
// does, with tags drawn from a range small enough, in some runs, that many keys share a
// home, distances saturate, and runs wrap around the table's end; it checks the index
// against a map after each step, and every bucket's distance and every key's lookup
// every few hundred steps.
func TestIndexAgainstMap(t *testing.T) {
	tests := []struct {
		name   string
		tags   uint32 // tags are drawn from [0, tags) and spread over the 32 bits; 0: any
		keys   int    // slots are drawn from [1, keys]
		steps  int
		hashes bool // whether the run must rehash keys of saturated distance (tagOf)
	}{
		{"distinct tags", 1 << 20, 5000, 40000, false},
		{"many growths", 0, 60000, 150000, true},
		{"colliding tags", 64, 3000, 40000, false},
		{"tags at the table's end", 4, 200, 20000, true},
		{"one tag: saturated distances", 1, 300, 20000, true},
		{"two tags", 2, 300, 20000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(tt.tags)))
			var x index
			want := map[uint32]uint32{} // slot → tag
			rehashes := 0
			tagOf := func(slot uint32) uint32 {
				rehashes++
				tag, ok := want[slot]
				if !ok {
					t.Fatalf("tagOf(%d): no such key", slot)
				}
				return tag
			}
			spread := ^uint32(0) / max(tt.tags, 1)
			growths := 0
			for step := range tt.steps {
				// Fill to a third of the slots first, then churn around that.
				slot := 1 + uint32(rng.IntN(tt.keys))
				if tag, ok := want[slot]; ok && (len(want) > tt.keys/3 || rng.IntN(4) == 0) {
					x.removeAt(x.position(tag, slot), tagOf)
					delete(want, slot)
				} else if !ok {
					tag := rng.Uint32()
					if tt.tags != 0 {
						tag = (uint32(rng.IntN(int(tt.tags))) + 1) * spread // the largest tags home at the end
					}
					want[slot] = tag
					if !x.insert(tag, slot, tagOf) {
						x.grow(func(yield func(tag, slot uint32) bool) {
							for slot, tag := range want {
								if !yield(tag, slot) {
									return
								}
							}
						}, tagOf)
						growths++
					}
				}
				if x.used != len(want) {
					t.Fatalf("step %d: used = %d, want %d", step, x.used, len(want))
				}
				if step%(tt.steps/100) == 0 || step == tt.steps-1 {
					checkIndex(t, &x, want)
				}
			}
			t.Logf("%d keys, %d buckets, %d growths, %d rehashes", len(want), x.n, growths, rehashes)
			if tt.hashes && rehashes == 0 {
				t.Error("no distance saturated")
			}
			if tt.keys > 1000 && growths < 5 {
				t.Errorf("%d growths: the run did not test growth", growths)
			}
		})
	}
}

// checkIndex checks every bucket's distance and fingerprint against its key's home,
// finds every key, and looks up absent tags.
func checkIndex(t *testing.T, x *index, want map[uint32]uint32) {
	t.Helper()
	if load := float64(x.used) / float64(x.n); load > 0.9 {
		t.Fatalf("load %.3f", load)
	}
	seen := 0
	for i := range x.n {
		v := x.load(i)
		if v == 0 {
			continue
		}
		seen++
		slot := uint32(v & idxSlotMask)
		tag, ok := want[slot]
		if !ok {
			t.Fatalf("bucket %d holds slot %d, not in the map", i, slot)
		}
		d := (i - x.home(tag) + x.n) % x.n
		if got := dist(v); got != min(d, idxDistMax) {
			t.Fatalf("bucket %d (slot %d): distance %d, want %d", i, slot, got, min(d, idxDistMax))
		}
		if fp := v >> idxFPShift; fp != uint64(tag&idxFPMask) {
			t.Fatalf("bucket %d: fingerprint %#x, want %#x", i, fp, tag&idxFPMask)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d buckets used, want %d", seen, len(want))
	}
	for slot, tag := range want {
		pos := x.find(tag, func(s uint32) bool { return s == slot })
		if pos < 0 || x.slotAt(pos) != slot {
			h := x.home(tag)
			for i := h; i < h+400 && i < x.n; i++ {
				v := x.load(i)
				if v == 0 || dist(v) < i-h && i-h < 31 || v&idxSlotMask == uint64(slot) {
					t.Logf("%d (offset %d): slot %d dist %d fp %x", i, i-h, v&idxSlotMask, dist(v), v>>idxFPShift)
				}
			}
			t.Fatalf("slot %d (tag %#x, home %d) not found", slot, tag, h)
		}
		if p := x.position(tag, slot); p != pos {
			t.Fatalf("slot %d: position %d, find %d", slot, p, pos)
		}
	}
	tags := map[uint32]bool{}
	for _, tag := range want {
		tags[tag] = true
	}
	for _, tag := range []uint32{1, 0x7fffffff, ^uint32(0)} {
		if tags[tag] {
			continue
		}
		if pos := x.find(tag, func(s uint32) bool { t, ok := want[s]; return ok && t == tag }); pos >= 0 {
			t.Fatalf("found tag %#x, never inserted, at %d", tag, pos)
		}
	}
}

// TestIndexEmpty checks lookups in a table never grown and one released.
func TestIndexEmpty(t *testing.T) {
	var x index
	if x.find(7, func(uint32) bool { return true }) >= 0 {
		t.Fatal("found a key in an empty index")
	}
	if x.growth() == 0 {
		t.Fatal("an empty index's first insert maps a table")
	}
	x.grow(func(yield func(uint32, uint32) bool) { yield(7, 3) }, nil)
	if pos := x.find(7, func(s uint32) bool { return s == 3 }); pos < 0 || x.slotAt(pos) != 3 {
		t.Fatal("lost the key grow was given")
	}
	if x.bytes() != minBuckets*idxBucket+idxPad {
		t.Fatalf("bytes %d", x.bytes())
	}
	x.release()
	if x.n != 0 || x.used != 0 || x.find(7, func(uint32) bool { return true }) >= 0 {
		t.Fatal("released index not empty")
	}
}
