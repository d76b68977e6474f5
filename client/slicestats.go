package client

import (
	"sync/atomic"
)

// sliceCounts are SliceStats' counters, for one key family.
type sliceCounts struct {
	asked, taken, used, given, expired atomic.Int64
}

func (c *sliceCounts) load() SliceStats {
	return SliceStats{Asked: c.asked.Load(), Taken: c.taken.Load(), Used: c.used.Load(),
		GivenBack: c.given.Load(), Expired: c.expired.Load()}
}

// FamilyStats are a key family's SliceStats, and what the Slicer holds of its keys.
type FamilyStats struct {
	SliceStats
	Slices int64 // slices held now with units left, usable or not yet dropped
	Held   int64 // units held now: taken, not yet used, given back or expired
}

// Stats returns the counts of s's work so far.
func (s *Slicer) Stats() SliceStats {
	var t SliceStats
	s.fams.Each(func(_ string, c *sliceCounts) {
		v := c.load()
		t.Asked += v.Asked
		t.Taken += v.Taken
		t.Used += v.Used
		t.GivenBack += v.GivenBack
		t.Expired += v.Expired
	})
	return t
}

// FamilyStats returns s's counts by key family, and what it holds of each now; it
// first drops, as expired, the slices whose Until has passed.
//
// A key's family is the key up to its first ':' ("tenant:acme" is "tenant"), the
// whole key without one. A family of other than letters, digits, '_', '-' and '.',
// or longer than 32 bytes, counts as "(other)", as do the families past the first 64
// a Slicer sees, so that keys made of user input cost bounded memory. INFO slices
// counts the server's side of the same families.
func (s *Slicer) FamilyStats() map[string]FamilyStats {
	fs := map[string]FamilyStats{}
	held := map[*sliceCounts]FamilyStats{}
	now := s.now()
	s.mu.RLock()
	ks := make([]*sliceKey, 0, len(s.keys))
	for _, k := range s.keys {
		ks = append(ks, k)
	}
	s.mu.RUnlock()
	for _, k := range ks {
		k.mu.Lock()
		k.counts.expired.Add(k.expire(now))
		h := held[k.counts]
		h.Slices += int64(len(k.held))
		h.Held += k.holding()
		held[k.counts] = h
		k.mu.Unlock()
	}
	s.fams.Each(func(f string, c *sliceCounts) {
		v := held[c]
		if v.SliceStats = c.load(); v.SliceStats != (SliceStats{}) {
			fs[f] = v
		}
	})
	return fs
}
