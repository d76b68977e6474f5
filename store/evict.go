package store

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/rlserver/rlserver/ttl"
)

// Policy is what a shard does when a new key would take it past its share of
// Config.MaxMemory.
type Policy uint8

// The policies, named as Redis names them.
const (
	// PolicyVolatileTTL evicts the keys due to be fresh soonest: they lose the least,
	// as their limiter state is about to reset by itself anyway.
	PolicyVolatileTTL Policy = iota
	// PolicyNoEviction refuses new keys with ErrOOM; existing keys keep working.
	PolicyNoEviction
)

var policyNames = [...]string{PolicyVolatileTTL: "volatile-ttl", PolicyNoEviction: "noeviction"}

// String returns the policy's Redis name.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", p)
}

// ParsePolicy returns the policy named name, in any case.
func ParsePolicy(name string) (Policy, error) {
	for p, n := range policyNames {
		if strings.EqualFold(name, n) {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("maxmemory policy must be volatile-ttl or noeviction, got %q", name)
}

// minShardBudget is the least MaxMemory/Shards: one key chunk page, so that a shard
// can hold a key at all.
const minShardBudget = pageBytes

// maxEvictPerCreate bounds the keys one new key evicts. One is enough when the
// evicted key's chunk is of the new key's size class; otherwise the next few are
// tried for one that is, before the shard grows a page past its budget.
const maxEvictPerCreate = 16

// makeRoom is called before a new key at placement p is created. Under the
// budget it does nothing. Over it, it evicts the keys due soonest until the new key
// fits in memory already held (PolicyVolatileTTL), or refuses with ErrOOM
// (PolicyNoEviction). A slab that cannot number another record refuses with
// ErrShardFull. Capacity never shrinks, so "fits" is about growth: a create
// that reuses a free record, bucket and chunk costs nothing, however full the shard.
func (sh *shard) makeRoom(p placement, now int64) error {
	if sh.slabs[p.rec].full() {
		return ErrShardFull
	}
	if sh.budget == 0 {
		return nil
	}
	for range maxEvictPerCreate {
		grow := sh.growthFor(p)
		if grow == 0 || sh.bytes()+grow <= sh.budget {
			return nil
		}
		if sh.noEvict {
			return ErrOOM
		}
		if !sh.evictOne(now) {
			return nil
		}
	}
	return nil
}

// noWheel is an empty wheel, read by growthFor for a slab not yet in use.
var noWheel ttl.Wheel

// growthFor is the memory creating a key at placement p would add now.
func (sh *shard) growthFor(p placement) int64 {
	s := &sh.slabs[p.rec]
	n := s.growth()
	if s.free == 0 {
		w := sh.wheels[p.rec]
		if w == nil {
			w = &noWheel // what create would make
			n += w.Bytes()
		}
		n += w.BytesToSchedule(uint32(max(s.n, 1))>>groupShift + 1)
	}
	n += sh.index.growth()
	if p.chunk >= 0 && !sh.chunks.hasFree(uint8(p.chunk)) {
		size := classSizes[p.chunk]
		n += int64(max(1, pageBytes/size) * size)
	}
	return n
}

// evictOne removes the key due soonest and reports whether there was one. A key
// already due is fresh, and counts as expired rather than evicted.
//
// Each slab's wheel names the group due soonest, at a deadline no later than its
// records'; the group's own earliest record is the one to go. A group whose wheel
// deadline is early (its earliest key went, or was renewed) is placed at its real
// earliest and the choice made again.
func (sh *shard) evictOne(now int64) bool {
	for {
		best, bestID, bestAt := -1, uint32(0), int64(0)
		for used := sh.inUse; used != 0; used &= used - 1 {
			c := bits.TrailingZeros32(used)
			if id, d, ok := sh.wheels[c].Earliest(); ok && (best < 0 || d < bestAt) {
				best, bestID, bestAt = c, id, d
			}
		}
		if best < 0 {
			return false
		}
		s, w := &sh.slabs[best], sh.wheels[best]
		first, second := s.earliest(bestID)
		switch {
		case first == 0:
			w.Cancel(bestID)
		case s.record(first).deadline() > bestAt:
			w.Schedule(bestID, s.record(first).deadline())
		default:
			deadline := s.record(first).deadline()
			sh.removeSlot(uint32(best)<<slotClassShift | first)
			if deadline <= now {
				sh.expired++
			} else {
				sh.evicted++
			}
			if second == 0 {
				w.Cancel(bestID)
			} else {
				w.Schedule(bestID, s.record(second).deadline())
			}
			return true
		}
	}
}

// hasFree reports whether class c has a free chunk in its pages.
func (a *chunks) hasFree(c uint8) bool {
	return int(c) < len(a.classes) && a.classes[c].firstNonEmpty() >= 0
}

// MarshalText returns the policy's Redis name, for flag.TextVar.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText sets the policy from its Redis name, for flag.TextVar.
func (p *Policy) UnmarshalText(b []byte) error {
	parsed, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = parsed
	return nil
}
