package store

import (
	"fmt"
	"strings"

	"github.com/zeebo/xxh3"
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

// makeRoom is called before a new key with a chunk of class c is created. Under the
// budget it does nothing. Over it, it evicts the keys due soonest until the new key
// fits in memory already held (PolicyVolatileTTL), or refuses with ErrOOM
// (PolicyNoEviction). Capacity never shrinks, so "fits" is about growth: a create
// that reuses a free slot, bucket and chunk costs nothing, however full the shard.
func (sh *shard) makeRoom(c uint8, now int64) error {
	if sh.budget == 0 {
		return nil
	}
	for range maxEvictPerCreate {
		grow := sh.growthFor(c)
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

// growthFor is the memory creating a key of chunk class c would add now.
func (sh *shard) growthFor(c uint8) int64 {
	var n int64
	if sh.freeSlot == 0 {
		slot := max(len(sh.slab), 1)
		if len(sh.slab) == cap(sh.slab) {
			n += int64(max(64, cap(sh.slab)+cap(sh.slab)/8)-cap(sh.slab)) * entryBytes
		}
		n += sh.wheel.BytesToSchedule(uint32(slot))
	}
	if (sh.index.used+1)*maxLoadDen > len(sh.index.buckets)*maxLoadNum {
		n += int64(max(minBuckets, len(sh.index.buckets)+len(sh.index.buckets)/4)-len(sh.index.buckets)) * 8
	}
	if !sh.chunks.hasFree(c) {
		size := classSizes[c]
		n += int64(max(1, pageBytes/size) * size)
	}
	return n
}

// evictOne removes the key due soonest and reports whether there was one. A key
// already due is fresh, and counts as expired rather than evicted.
func (sh *shard) evictOne(now int64) bool {
	slot, deadline, ok := sh.wheel.PopEarliest()
	if !ok {
		return false
	}
	tag := uint32(xxh3.Hash(sh.key(&sh.slab[slot])) >> 32)
	sh.remove(sh.index.position(tag, slot), slot)
	if deadline <= now {
		sh.expired++
	} else {
		sh.evicted++
	}
	return true
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
