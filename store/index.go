package store

import "github.com/rlserver/rlserver/internal/offheap"

// index maps a key to its slot: open addressing over uint64 buckets holding
// slot<<32 | tag, where tag is the top 32 bits of the key's xxh3 hash and 0 means an
// empty bucket (slot 0 is never used). Linear probing, backward-shift deletion (no
// tombstones), home bucket = tag scaled to the table's length, so the length need not
// be a power of two and the table grows by a quarter at a time.
//
// Why not map[uint64]uint32: it takes over three times the bytes of this table
// (BenchmarkIndexVsMap), which costs 8 B / load with the load kept between 0.68 and
// 0.85 (growth ×1.25 at 0.85). A probe compares tags, so a key's bytes are read only on a tag match (1 in 2^32 for
// a wrong key). Linear probing at 0.85 expects ~3.8 buckets for a hit and ~23 for a
// miss, all in one or three cache lines.
type index struct {
	buckets []uint64
	used    int
}

const (
	maxLoadNum, maxLoadDen = 17, 20 // 0.85
	minBuckets             = 16
)

func (x *index) home(tag uint32) int {
	return int(uint64(tag) * uint64(len(x.buckets)) >> 32)
}

// find returns the bucket position of the key with this tag for which isKey(slot)
// holds, or -1.
func (x *index) find(tag uint32, isKey func(slot uint32) bool) int {
	if len(x.buckets) == 0 {
		return -1
	}
	for i := x.home(tag); ; {
		b := x.buckets[i]
		if b == 0 {
			return -1
		}
		if uint32(b) == tag && isKey(uint32(b>>32)) {
			return i
		}
		if i++; i == len(x.buckets) {
			i = 0
		}
	}
}

// position returns the bucket that holds exactly slot<<32|tag; it must be there.
func (x *index) position(tag, slot uint32) int {
	want := uint64(slot)<<32 | uint64(tag)
	for i := x.home(tag); ; {
		if x.buckets[i] == want {
			return i
		}
		if i++; i == len(x.buckets) {
			i = 0
		}
	}
}

// insert adds a key that is not in the index.
func (x *index) insert(tag, slot uint32) {
	if (x.used+1)*maxLoadDen > len(x.buckets)*maxLoadNum {
		x.grow()
	}
	x.put(uint64(slot)<<32 | uint64(tag))
	x.used++
}

func (x *index) put(b uint64) {
	i := x.home(uint32(b))
	for x.buckets[i] != 0 {
		if i++; i == len(x.buckets) {
			i = 0
		}
	}
	x.buckets[i] = b
}

// removeAt empties bucket i and shifts back the entries after it that probed past
// it, so that lookups never meet a hole inside a probe sequence.
func (x *index) removeAt(i int) {
	n := len(x.buckets)
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		b := x.buckets[j]
		if b == 0 {
			break
		}
		// b may fill the hole at i if its home is not in (i, j], cyclically.
		h := x.home(uint32(b))
		if (j-h+n)%n >= (j-i+n)%n {
			x.buckets[i] = b
			i = j
		}
	}
	x.buckets[i] = 0
	x.used--
}

// grow rehashes into a table a quarter longer, mapped off the Go heap, and unmaps
// the old one at once.
func (x *index) grow() {
	old := x.buckets
	x.buckets = offheap.Make[uint64](max(minBuckets, len(old)+len(old)/4))
	for _, b := range old {
		if b != 0 {
			x.put(b)
		}
	}
	offheap.Free(old)
}

// release unmaps the table and empties the index.
func (x *index) release() {
	offheap.Free(x.buckets)
	*x = index{}
}

func (x *index) bytes() int64 { return int64(cap(x.buckets)) * 8 }
