package store

import (
	"bytes"
	"sync"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
	"github.com/rlserver/rlserver/ttl"
	"github.com/zeebo/xxh3"
)

// entry is one key's slot in its shard's slab. It holds no pointer, so a slab of
// millions can live off the Go heap (internal/offheap), where the GC never sees it.
type entry struct {
	a, b  uint64 // the state, packed by codec.go (RL.LOG and leases: see shard.placeTail)
	chunk uint32 // the chunk with the key's bytes; on a free slot, the next free slot
	meta  uint32 // kind<<28 | key length; 0 on a free slot
}

const entryBytes = 24

func (e *entry) kind() algo.Kind { return algo.Kind(e.meta >> kindShift) }
func (e *entry) keyLen() int     { return int(e.meta & maxKeyLen) }

// class is the size class of the entry's chunk: the key's, or for RL.LOG and leases
// the key's and log's or lease set's, kept in b's upper half.
func (e *entry) class() uint8 {
	if hasTail(e.kind()) {
		return uint8(e.b >> 32)
	}
	return classFor(e.keyLen())
}

// hasTail reports whether a kind keeps its state in the key's chunk after the key
// (a = a base time, b = class<<32 | the state's length in bytes) rather than in a and b.
func hasTail(k algo.Kind) bool { return k == algo.KindLog || k == algo.KindLease }

// tail returns the state bytes after the key in a hasTail entry's chunk.
func (sh *shard) tail(e *entry) []byte {
	n := e.keyLen()
	return sh.chunks.bytes(e.class(), e.chunk)[n : n+int(uint32(e.b))]
}

// shard is one lock's worth of keys.
type shard struct {
	mu           sync.Mutex
	index        index
	slab         []entry // slot 0 is never used: 0 is the index's empty bucket and the wheel's nil
	freeSlot     uint32  // head of the free slots' list, 0 if none
	live         int
	chunks       chunks
	wheel        ttl.Wheel
	tick         int64 // the ms the wheel was last advanced to
	latest       int64 // the latest now a call decided at, under Config.MonotonicTime
	onExpire     func(slot uint32)
	logs         []algo.LogEntry // RL.LOG's scratch, as long as the longest log seen: decoded here, decided, encoded back
	leaseScratch []algo.Lease    // a lease set's scratch, as logs is a log's
	leaseIDs     []byte          // the decoded leases' ids
	newID        [hexIDLen]byte  // a generated lease id, before it is stored

	allowed, limited [kindCount]uint64
	expired, evicted uint64
	changed          uint64 // Stats.Changed

	budget  int64 // Config.MaxMemory / shards; 0: no bound
	noEvict bool  // PolicyNoEviction

	_ [64]byte // keeps the next shard's lock off this shard's hot cache lines
}

// advance runs the wheel at most once per millisecond: it is cheap, but not free, and
// lookups are exact without it.
func (sh *shard) advance(now int64) {
	if t := now / 1000; t > sh.tick {
		sh.tick = t
		sh.wheel.Advance(now, sh.onExpire)
	}
}

// key returns an entry's key bytes.
func (sh *shard) key(e *entry) []byte {
	return sh.chunks.bytes(e.class(), e.chunk)[:e.keyLen()]
}

// get finds key: its index position and slot, or -1 if absent. A key whose deadline
// is at or before now is fresh again: get removes it and reports it absent.
func (sh *shard) get(key []byte, tag uint32, now int64) (int, uint32) {
	pos := sh.index.find(tag, func(slot uint32) bool {
		e := &sh.slab[slot]
		return e.keyLen() == len(key) && bytes.Equal(sh.key(e), key)
	})
	if pos < 0 {
		return -1, 0
	}
	slot := uint32(sh.index.buckets[pos] >> 32)
	if d, _ := sh.wheel.Deadline(slot); d <= now {
		sh.removeFresh(pos, slot)
		return -1, 0
	}
	return pos, slot
}

// create adds key with a chunk of class c and returns its slot; the caller sets the
// state and schedules it.
func (sh *shard) create(key []byte, tag uint32, kind algo.Kind, c uint8) uint32 {
	slot := sh.freeSlot
	if slot != 0 {
		sh.freeSlot = sh.slab[slot].chunk
	} else {
		if len(sh.slab) == cap(sh.slab) {
			sh.growSlab()
		}
		slot = uint32(len(sh.slab))
		sh.slab = sh.slab[:slot+1]
	}
	e := &sh.slab[slot]
	e.meta = uint32(kind)<<kindShift | uint32(len(key))
	if hasTail(kind) {
		e.b = uint64(c) << 32
	}
	e.chunk = sh.chunks.alloc(c)
	copy(sh.chunks.bytes(c, e.chunk), key)
	sh.index.insert(tag, slot)
	sh.live++
	return slot
}

// growSlab grows the slab's capacity by an eighth, exactly: append's rounding left 23%
// slack at 1M keys over 64 shards (29.6 MB for 24 MB of entries); an eighth averages
// 6%, for 8 copies of an entry over its life. The slab is mapped off the Go heap
// (offheap.Grow): the old array is unmapped once copied, and the capacity not yet
// used is not resident. A new slab starts with slot 0 taken.
func (sh *shard) growSlab() {
	sh.slab = offheap.Grow(sh.slab, max(64, cap(sh.slab)+cap(sh.slab)/8))[:max(1, len(sh.slab))]
}

// remove deletes the key at index position pos and slot.
func (sh *shard) remove(pos int, slot uint32) {
	sh.index.removeAt(pos)
	e := &sh.slab[slot]
	sh.chunks.release(e.class(), e.chunk)
	sh.wheel.Cancel(slot)
	*e = entry{chunk: sh.freeSlot}
	sh.freeSlot = slot
	sh.live--
}

// removeFresh removes a key whose state is fresh again, if there is one (pos >= 0).
func (sh *shard) removeFresh(pos int, slot uint32) {
	if pos >= 0 {
		sh.remove(pos, slot)
		sh.expired++
	}
}

// expireSlot is the wheel's callback: slot's deadline has passed. The index position
// is found again from the key's hash, which the entry does not keep.
func (sh *shard) expireSlot(slot uint32) {
	tag := uint32(xxh3.Hash(sh.key(&sh.slab[slot])) >> 32)
	sh.removeFresh(sh.index.position(tag, slot), slot)
}

// do decides one request on key, which hashes to this locked shard with tag, and
// stores the new state unless r.Peek; it reports whether key held a state before.
// It counts nothing: Do and DoAll count the answers they give.
func (sh *shard) do(key []byte, tag uint32, r algo.Request, now int64) (algo.Decision, bool, error) {
	pos, slot := sh.get(key, tag, now)
	if pos >= 0 && sh.slab[slot].kind() != r.Kind {
		return algo.Decision{}, true, ErrWrongType
	}
	if r.Kind == algo.KindLog {
		d, err := sh.doLog(key, tag, pos, slot, r, now)
		return d, pos >= 0, err
	}
	var a, b uint64
	if pos >= 0 {
		a, b = sh.slab[slot].a, sh.slab[slot].b
	}
	a, b, d := decide(r, a, b, now)
	if d.Write && d.FreshAt <= now {
		sh.removeFresh(pos, slot)
	} else if d.Write {
		if pos < 0 {
			if err := sh.makeRoom(classFor(len(key)), now); err != nil {
				return algo.Decision{}, false, err
			}
			slot = sh.create(key, tag, r.Kind, classFor(len(key)))
		}
		sh.slab[slot].a, sh.slab[slot].b = a, b
		sh.wheel.Schedule(slot, d.FreshAt)
	}
	return d, pos >= 0, nil
}

// doLog decides an RL.LOG call.
func (sh *shard) doLog(key []byte, tag uint32, pos int, slot uint32, r algo.Request, now int64) (algo.Decision, error) {
	entries := sh.logs[:0]
	if pos >= 0 {
		e := &sh.slab[slot]
		entries = decodeLog(sh.tail(e), int64(e.a), entries)
	}
	entries, d := algo.Log(entries, r, now)
	if cap(entries) > cap(sh.logs) {
		sh.logs = entries[:0]
	}
	if !d.Write {
		return d, nil
	}
	if d.FreshAt <= now || len(entries) == 0 {
		sh.removeFresh(pos, slot)
		return d, nil
	}
	if pos < 0 {
		if err := sh.makeRoom(classFor(len(key)+logSize(entries, entries[0].TS)), now); err != nil {
			return d, err
		}
	}
	sh.writeLog(key, tag, pos, slot, entries, d.FreshAt)
	return d, nil
}

// writeLog stores a non-empty log for key, created if pos < 0, fresh at freshAt: the
// log is kept in the key's chunk after the key (logcodec.go), a = the first entry's time.
func (sh *shard) writeLog(key []byte, tag uint32, pos int, slot uint32, entries []algo.LogEntry, freshAt int64) {
	base := entries[0].TS
	size := logSize(entries, base)
	encodeLog(sh.placeTail(key, tag, pos, slot, algo.KindLog, base, size, freshAt), entries, base)
}

// placeTail makes room for a hasTail state of size bytes after key, created if pos < 0
// (the caller has made room), and returns those bytes for the caller to encode into:
// a = base, b = class<<32 | size, the wheel's deadline freshAt. A state that outgrows
// its chunk moves to the class that fits; one that shrinks to two classes below moves
// down, so that a state hovering at a class boundary does not move on every call.
func (sh *shard) placeTail(key []byte, tag uint32, pos int, slot uint32, kind algo.Kind, base int64, size int, freshAt int64) []byte {
	need := len(key) + size
	if pos < 0 {
		slot = sh.create(key, tag, kind, classFor(need))
	}
	e := &sh.slab[slot]
	c := e.class()
	if need > classSizes[c] || c >= 2 && need <= classSizes[c-2] {
		moved := classFor(need)
		chunk := sh.chunks.alloc(moved)
		copy(sh.chunks.bytes(moved, chunk), key)
		sh.chunks.release(c, e.chunk)
		e.chunk, c = chunk, moved
	}
	e.a, e.b = uint64(base), uint64(c)<<32|uint64(size)
	sh.wheel.Schedule(slot, freshAt)
	return sh.chunks.bytes(c, e.chunk)[len(key):need]
}

// reset empties the shard and lets go of its memory; the counters stay.
func (sh *shard) reset() {
	sh.release()
	sh.tick = 0
	sh.latest = 0
	sh.logs = nil
	sh.leaseScratch = nil
	sh.leaseIDs = nil
}

// release unmaps the arrays and pages of a shard and empties it: called by reset,
// and by Expire on a shard whose last key has gone, so that the memory of keys that
// all went goes back to the OS (the slab, index and wheel otherwise keep their
// largest size). The times and scratch buffers stay.
func (sh *shard) release() {
	sh.index.release()
	offheap.Free(sh.slab)
	sh.slab = nil
	sh.freeSlot = 0
	sh.live = 0
	sh.chunks.releaseAll()
	sh.wheel.Release()
}

// bytes is the memory the shard holds for its keys.
func (sh *shard) bytes() int64 {
	return int64(cap(sh.slab))*entryBytes + sh.index.bytes() + sh.chunks.held() + sh.wheel.Bytes() +
		int64(cap(sh.logs))*16 + int64(cap(sh.leaseScratch))*leaseBytes + int64(cap(sh.leaseIDs))
}
