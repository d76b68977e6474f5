package store

import (
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap inserts and removes at random, with tags drawn from a small
// range so that probe runs are long, collide and wrap around the table's end, and
// checks every key against a map after each step of a run.
func TestIndexAgainstMap(t *testing.T) {
	tests := []struct {
		name string
		tags uint32 // tags are drawn from [0, tags) and spread over the 32 bits
		keys int
	}{
		{"distinct tags", 1 << 20, 5000},
		{"colliding tags", 64, 3000},
		{"tags at the table's end", 4, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(tt.tags)))
			var x index
			want := map[uint32]uint32{} // slot → tag
			spread := ^uint32(0) / tt.tags
			for step := range 40000 {
				slot := 1 + uint32(rng.IntN(tt.keys))
				if tag, ok := want[slot]; ok {
					x.removeAt(x.position(tag, slot))
					delete(want, slot)
				} else {
					tag := (uint32(rng.IntN(int(tt.tags))) + 1) * spread // the largest tags home at the end
					x.insert(tag, slot)
					want[slot] = tag
				}
				if x.used != len(want) {
					t.Fatalf("used = %d, want %d", x.used, len(want))
				}
				if step%500 != 0 {
					continue
				}
				for slot, tag := range want {
					pos := x.find(tag, func(s uint32) bool { return s == slot })
					if pos < 0 || uint32(x.buckets[pos]>>32) != slot {
						t.Fatalf("step %d: slot %d (tag %#x) not found", step, slot, tag)
					}
				}
				if pos := x.find(1, func(uint32) bool { return true }); pos >= 0 {
					t.Fatalf("found tag 1, never inserted, at %d", pos)
				}
				if load := float64(x.used) / float64(len(x.buckets)); load > 0.85 {
					t.Fatalf("load %.2f", load)
				}
			}
		})
	}
}
