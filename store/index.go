package store

import (
	"encoding/binary"
	"iter"

	"github.com/rlserver/rlserver/internal/offheap"
)

// index maps a key to its slot: open addressing over 5-byte buckets, Robin Hood
// linear probing, backward-shift deletion (no tombstones). A bucket holds, little-endian
// in 40 bits:
//
//	bits  0-30  the slot (31 bits: slotClassShift 26 + 5 class bits)
//	bits 31-35  1 + the probe distance from the key's home bucket, saturated at 31; 0: empty
//	bits 36-39  a fingerprint: the tag's low 4 bits
//
// tag is the top 32 bits of the key's xxh3 hash; its home bucket is tag scaled to the
// table's length, so the length need not be a power of two and the table grows by a
// quarter at a time. The distance in the bucket lets a lookup compare the fingerprint
// only against the entries with the same home (distance = the probe's offset), and
// stop at the first entry nearer its home than the probe is to the key's (Robin Hood
// keeps each run ordered by home), and lets deletion shift entries back without their
// hashes. So 4 fingerprint bits suffice: a wrong record is read for about 1 in 16 of
// the ~0.9 other keys a home has at load 0.9. Distance + 1 makes an empty bucket one
// "nearer its home" than any probe, so one compare ends a lookup at either.
//
// A distance of 30 or more is stored as 30: about 1 entry in 500 at load 0.9 (random
// hashes, simulated), more under crafted collisions. Such an entry is matched by fingerprint at
// any offset from 30 on, and does not end a lookup there. An insert that meets one at
// an offset of 30 or more, and deletion, which must know whether it sits at distance 30
// exactly, hash its key again (tagOf), so that runs stay ordered by home exactly.
// Growing the table instead would bound nothing: keys whose tags are equal share a
// home at every length.
//
// Growth rehashes every key, since 40 bits do not give back an entry's home at the new
// length: grow takes the shard's live records in slab order, which reads the records
// sequentially, where walking the old table would read them at random: 1M keys in one
// shard rehash in ~190 ms so, ~460 ms in table order (BenchmarkIndexGrow).
//
// Cost at 1M keys over 64 shards (15.6K a shard, 18803 buckets): 6.0 B a key, where
// 8-byte buckets of slot<<32|tag took 9.6 (map[uint64]uint32: 36 B). The load stays
// between 0.72 and 0.9 (growth ×1.25 at 0.9), 5.6-6.9 B a key. A lookup at that size
// (BenchmarkIndexVsMap, keys=15625, fastest of 10) takes ~33 ns for a present key and
// ~32 for an absent one, against ~24 and ~50 with 8-byte buckets and linear probing:
// the loop does more a bucket, and Robin Hood ends a miss early.
type index struct {
	b    []byte // n buckets of 5 bytes, then idxPad bytes so that any bucket loads as 8
	n    int
	used int
}

const (
	maxLoadNum, maxLoadDen = 9, 10 // 0.9
	minBuckets             = 16

	idxBucket = 5
	idxPad    = 8 - idxBucket
	idxBits   = idxBucket * 8
	idxMask   = 1<<idxBits - 1

	idxSlotBits = slotClassShift + slotClassBits // the slot's record number and its class
	idxSlotMask = 1<<idxSlotBits - 1
	idxDistMax  = 30 // saturated: 30 or more
	idxDistMask = 31 << idxSlotBits
	idxFPShift  = idxSlotBits + 5
	idxFPMask   = 1<<(idxBits-idxFPShift) - 1
)

// The slot, distance and fingerprint fields must fill the 40 bits exactly.
var _ [0]struct{} = [idxFPShift + 4 - idxBits]struct{}{}

func (x *index) home(tag uint32) int {
	return int(uint64(tag) * uint64(x.n) >> 32)
}

// load returns bucket i. 8-byte loads through encoding/binary: unaligned, and safe
// under -race's checkptr where a *uint64 cast would not be.
func (x *index) load(i int) uint64 {
	return binary.LittleEndian.Uint64(x.b[i*idxBucket:i*idxBucket+8]) & idxMask
}

// store sets bucket i to v, keeping the three bytes after it.
func (x *index) store(i int, v uint64) {
	p := x.b[i*idxBucket : i*idxBucket+8]
	binary.LittleEndian.PutUint64(p, binary.LittleEndian.Uint64(p)&^idxMask|v)
}

// dist returns the distance of a bucket that is not empty.
func dist(v uint64) int { return int(v>>idxSlotBits)&31 - 1 }

// distBits returns the distance field for distance d.
func distBits(d int) uint64 { return uint64(min(d, idxDistMax)+1) << idxSlotBits }

// distance returns the unsaturated distance of bucket i from the home of tag.
func (x *index) distance(i int, tag uint32) int {
	if d := i - x.home(tag); d >= 0 {
		return d
	}
	return i - x.home(tag) + x.n // wrapped past the table's end
}

// slotAt returns the slot in bucket i.
func (x *index) slotAt(i int) uint32 { return uint32(x.load(i) & idxSlotMask) }

// find returns the bucket position of the key with this tag for which isKey(slot)
// holds, or -1.
func (x *index) find(tag uint32, isKey func(slot uint32) bool) int {
	b, n := x.b, x.n
	if n == 0 {
		return -1
	}
	// The top 9 bits of a bucket, fingerprint<<5 | distance+1, as the key's would be
	// here, and the least distance+1 an entry here may have if the key is further on.
	want, least := uint64(tag&idxFPMask)<<5|1, uint64(1)
	for i := int(uint64(tag) * uint64(n) >> 32); ; {
		v := binary.LittleEndian.Uint64(b[i*idxBucket : i*idxBucket+8])
		top := v >> idxSlotBits & 0x1ff
		if top == want && isKey(uint32(v&idxSlotMask)) {
			return i
		}
		if top&31 < least {
			return -1 // empty, or nearer its home: our key would have taken this bucket
		}
		if least <= idxDistMax {
			want, least = want+1, least+1
		}
		if i++; i == n {
			i = 0
		}
	}
}

// position returns the bucket that holds slot, whose key has this tag; it must be there.
func (x *index) position(tag, slot uint32) int {
	for i := x.home(tag); ; {
		if uint32(x.load(i)&idxSlotMask) == slot {
			return i
		}
		if i++; i == x.n {
			i = 0
		}
	}
}

// insert adds a key that is not in the index and reports true, or reports false,
// changing nothing, if the table is at its maximum load: the caller then calls grow
// with every key, this one included. tagOf returns a slot's tag, for an entry whose
// distance is saturated.
func (x *index) insert(tag, slot uint32, tagOf func(slot uint32) uint32) bool {
	if (x.used+1)*maxLoadDen > x.n*maxLoadNum {
		return false
	}
	x.put(tag, slot, tagOf)
	return true
}

// put adds a key, Robin Hood: it takes the first bucket whose entry is nearer its own
// home, and that entry moves on to the next such bucket, and so on to an empty one.
func (x *index) put(tag, slot uint32, tagOf func(slot uint32) uint32) {
	cur := uint64(tag&idxFPMask)<<idxFPShift | uint64(slot)
	for i, d := x.home(tag), 0; ; d++ {
		v := x.load(i)
		if v == 0 {
			x.store(i, cur|distBits(d))
			x.used++
			return
		}
		vd := dist(v)
		if vd == idxDistMax && d >= idxDistMax {
			vd = x.distance(i, tagOf(uint32(v&idxSlotMask)))
		}
		if vd < d {
			x.store(i, cur|distBits(d))
			cur, d = v&^idxDistMask, vd
		}
		if i++; i == x.n {
			i = 0
		}
	}
}

// removeAt empties bucket i and shifts back the entries after it that are not at
// their home, so that lookups never meet a hole inside a probe sequence. tagOf
// returns a slot's tag, for an entry whose distance is saturated.
func (x *index) removeAt(i int, tagOf func(slot uint32) uint32) {
	for {
		j := i + 1
		if j == x.n {
			j = 0
		}
		v := x.load(j)
		if v == 0 || dist(v) == 0 {
			break
		}
		d := dist(v)
		if d == idxDistMax {
			d = x.distance(j, tagOf(uint32(v&idxSlotMask)))
		}
		x.store(i, v&^idxDistMask|distBits(d-1))
		i = j
	}
	x.store(i, 0)
	x.used--
}

// grow rehashes into a table at least a quarter longer, mapped off the Go heap, from
// keys, which yields the tag and slot of every key to hold (one more than used, for the
// insert that failed), and unmaps the old table at once.
func (x *index) grow(keys iter.Seq2[uint32, uint32], tagOf func(slot uint32) uint32) {
	old := x.b
	n := max(minBuckets, x.n+x.n/4)
	for (x.used+1)*maxLoadDen > n*maxLoadNum {
		n += n / 4
	}
	*x = index{b: offheap.Make[byte](n*idxBucket + idxPad), n: n}
	for tag, slot := range keys {
		if x.used == n-1 {
			panic("store: index grown with more keys than it held") // put would never end
		}
		x.put(tag, slot, tagOf)
	}
	offheap.Free(old)
}

// growth returns the bytes the next insert would map, growing the table.
func (x *index) growth() int64 {
	if (x.used+1)*maxLoadDen <= x.n*maxLoadNum {
		return 0
	}
	n := max(minBuckets, x.n+x.n/4)
	return int64(n*idxBucket+idxPad) - int64(len(x.b))
}

// release unmaps the table and empties the index.
func (x *index) release() {
	offheap.Free(x.b)
	*x = index{}
}

func (x *index) bytes() int64 { return int64(cap(x.b)) }
