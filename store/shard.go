package store

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/ttl"
	"github.com/zeebo/xxh3"
)

// hasTail reports whether a kind keeps its state in the key's chunk after the key
// (a = a base time, b = the state's length in bytes) rather than in a and b.
func hasTail(k algo.Kind) bool { return k == algo.KindLog || k == algo.KindLease }

// shard is one lock's worth of keys.
type shard struct {
	mu           sync.Mutex
	index        index
	slabs        [len(slabClasses)]slab
	inUse        uint32 // bit c: slab c has records, and its wheel runs
	live         int
	chunks       chunks
	tick         int64           // the ms the wheels were last advanced to
	expireAt     int64           // the now of the Advance running, for expireGroup
	latest       int64           // the latest now a call decided at, under Config.MonotonicTime
	logs         []algo.LogEntry // RL.LOG's scratch, as long as the longest log seen: decoded here, decided, written back (appendLog, writeLog)
	logBytes     []byte          // and the codes appendLog moves
	leaseScratch []algo.Lease    // a lease set's scratch, as logs is a log's
	leaseIDs     []byte          // the decoded leases' ids
	newID        [hexIDLen]byte  // a generated lease id, before it is stored
	prefixes     *prefixes       // the Store's interned prefixes
	keyBuf       []byte          // an interned key made whole (key)

	allowed, limited [kindCount]uint64
	expired, evicted uint64
	changed          uint64 // Stats.Changed

	// partOf is Config.Partition; parts are the record slots of each partition's
	// keys, partPos each record's place in its list, by slab and record (partition.go).
	partOf  func(key []byte) uint16
	parts   map[uint16][]uint32
	partPos [len(slabClasses)][]uint32

	budget  int64 // Config.MaxMemory / shards; 0: no bound
	noEvict bool  // PolicyNoEviction

	// wheels[c] has one id per group of 1<<groupShift records of slab c (id =
	// i>>groupShift + 1), scheduled no later than the group's earliest deadline (put);
	// expire[c] is its callback. 1.6 KB of bucket heads each: a wheel is made when its
	// slab comes into use (inUse) and dropped with the shard's keys, as 25 wheels in
	// each of 64 shards would take 2.6 MB of an idle server's RSS; they sit apart from
	// the fields every call reads, which they spread over some 20 KB and six pages
	// when they were inside the slabs. Only the wheels of slabs in use run.
	wheels [len(slabClasses)]*ttl.Wheel
	expire [len(slabClasses)]func(id uint32)

	_ [64]byte // keeps the next shard's lock off this shard's hot cache lines
}

// init sets up the slabs' strides and wheel callbacks.
func (sh *shard) init() {
	for c := range sh.slabs {
		s := &sh.slabs[c]
		s.wordsPer, s.form = slabClasses[c].stride/8, slabClasses[c].form
		sh.expire[c] = func(id uint32) { sh.expireGroup(uint8(c), id) }
	}
}

// at returns the record of slot.
func (sh *shard) at(slot uint32) entry {
	return sh.slabs[slot>>slotClassShift].record(slot & slotIndexMask)
}

// reclaimEvery is the least time, in ms, between two advances of a shard's wheels on
// the request path (advance); Expire advances them whenever it is called.
//
// Why: a group's id fires at its earliest deadline, and its walk removes every key of
// the group due by then and places the group again at the earliest left. Advanced
// every millisecond, a group whose keys go at different milliseconds is walked once a
// key: under churn (BenchmarkChurn, RL.TOKEN fresh 10 ms after a call, 1M keyspace,
// 600k calls/s) that is 7 records read a key gone, and expiry took 35-42% of the
// store's CPU (27-33% of the server's in issue 41's profile). Advanced every 16 ms,
// or every 10 ms by the server's ticker (core.DefaultExpireInterval), a walk removes
// what came due in that time: expiry fell to 17-21% of the store's CPU, the walks to
// 2 records a key (1.4 with no Expire), the rest being the removals themselves.
// A removed key's memory comes back that much later; nothing else sees the
// difference, as every read compares the record's deadline with now (get, Scan,
// the snapshot writer, TTL), Len calls Expire, and eviction takes a due key first
// (evictOne).
const reclaimEvery = 16

// advance runs the wheels if reclaimEvery ms have passed since they last ran:
// lookups are exact without them, and a walk that waits removes more at once.
func (sh *shard) advance(now int64) {
	if t := now / 1000; t >= sh.tick+reclaimEvery {
		sh.tick = t
		sh.advanceWheels(now)
	}
}

// advanceWheels removes every key whose deadline is at or before now.
func (sh *shard) advanceWheels(now int64) {
	sh.expireAt = now
	for used := sh.inUse; used != 0; used &= used - 1 {
		c := bits.TrailingZeros32(used)
		sh.wheels[c].Advance(now, sh.expire[c])
	}
}

// key returns a record's key bytes; an interned key's, made whole, are valid until
// the next call.
func (sh *shard) key(e entry) []byte {
	meta := e.meta()
	if meta&metaSpilled != 0 {
		c, chunk, n := e.spill()
		return sh.chunks.bytes(c, chunk)[:n]
	}
	r := e.room(int(meta & metaLen))
	if meta&metaInterned == 0 {
		return r
	}
	sh.keyBuf = append(append(sh.keyBuf[:0], sh.prefixes.prefix(binary.LittleEndian.Uint16(r))...), r[2:]...)
	return sh.keyBuf
}

// placementFor is placementFor for key: inline with its interned prefix's number
// where that makes it fit.
func (sh *shard) placementFor(key []byte, kind algo.Kind, a, b uint64, deadline int64, tail int) placement {
	if !hasTail(kind) {
		if id, n, ok := sh.prefixes.of(key); ok {
			if p := placementFor(len(key)-n+2, kind, a, b, deadline, 0); p.chunk < 0 {
				p.prefix, p.cut = int(id)+1, n
				return p
			}
		}
	}
	return placementFor(len(key), kind, a, b, deadline, tail)
}

// tail returns the state bytes after the key in a hasTail record's chunk.
func (sh *shard) tail(e entry) []byte {
	_, size := e.state()
	return sh.tailRoom(e, int(size))
}

// tailRoom returns the n bytes after the key in a hasTail record's chunk.
func (sh *shard) tailRoom(e entry, n int) []byte {
	c, chunk, k := e.spill()
	return sh.chunks.bytes(c, chunk)[k : k+n]
}

// get finds key: its index position and slot, or -1 if absent. A key whose deadline
// is at or before now is fresh again: get removes it and reports it absent.
func (sh *shard) get(key []byte, tag uint32, now int64) (int, uint32) {
	pos := sh.index.find(tag, func(slot uint32) bool {
		e := sh.at(slot)
		return bytes.Equal(sh.key(e), key)
	})
	if pos < 0 {
		return -1, 0
	}
	slot := sh.index.slotAt(pos)
	if sh.at(slot).deadline() <= now {
		sh.removeFresh(pos, slot)
		return -1, 0
	}
	return pos, slot
}

// create adds key of kind at placement p and returns its slot; the caller sets the
// state and schedules it.
func (sh *shard) create(key []byte, tag uint32, kind algo.Kind, p placement) uint32 {
	if sh.inUse&(1<<p.rec) == 0 {
		sh.inUse |= 1 << p.rec
		if sh.wheels[p.rec] == nil {
			sh.wheels[p.rec] = new(ttl.Wheel)
		}
		sh.wheels[p.rec].Advance(sh.tick*1000, sh.expire[p.rec]) // from the epoch, where a new wheel starts
	}
	i := sh.slabs[p.rec].alloc()
	slot := uint32(p.rec)<<slotClassShift | i
	e := sh.at(slot)
	switch {
	case p.prefix > 0:
		n := len(key) - p.cut + 2
		e.setMeta(kind, false, true, n)
		r := e.room(n)
		binary.LittleEndian.PutUint16(r, uint16(p.prefix-1))
		copy(r[2:], key[p.cut:])
	case p.chunk < 0:
		e.setMeta(kind, false, false, len(key))
		copy(e.room(len(key)), key)
	default:
		e.setMeta(kind, true, false, len(key))
		c := uint8(p.chunk)
		chunk := sh.chunks.alloc(c)
		copy(sh.chunks.bytes(c, chunk), key)
		e.setSpill(c, chunk, len(key))
	}
	if !sh.index.insert(tag, slot, sh.tagOf) {
		sh.index.grow(sh.tags, sh.tagOf) // the new record is live already: tags yields it too
	}
	sh.live++
	if sh.partOf != nil {
		sh.addPart(key, slot)
	}
	return slot
}

// put stores slot's state words and deadline (a tat record's deadline is its tat, a)
// and schedules it. The group's id in the wheel is moved only when the deadline is
// earlier than the group's: a later one leaves the group due early, and expireGroup
// then finds nothing due and places the group again at its earliest.
func (sh *shard) put(slot uint32, a, b uint64, deadline int64) {
	e := sh.at(slot)
	e.set(a, b, deadline)
	deadline = e.deadline()
	w := sh.wheels[slot>>slotClassShift]
	id := (slot&slotIndexMask)>>groupShift + 1
	if d, ok := w.Deadline(id); !ok || deadline < d {
		w.Schedule(id, deadline)
	}
}

// remove deletes the key at index position pos and slot. The group's id stays in
// the wheel; it fires early, harmlessly.
func (sh *shard) remove(pos int, slot uint32) {
	sh.index.removeAt(pos, sh.tagOf)
	e := sh.at(slot)
	if sh.partOf != nil {
		sh.dropPart(sh.key(e), slot)
	}
	if e.spilled() {
		c, chunk, _ := e.spill()
		sh.chunks.release(c, chunk)
	}
	sh.slabs[slot>>slotClassShift].release(slot & slotIndexMask)
	sh.live--
}

// removeFresh removes a key whose state is fresh again, if there is one (pos >= 0).
func (sh *shard) removeFresh(pos int, slot uint32) {
	if pos >= 0 {
		sh.remove(pos, slot)
		sh.expired++
	}
}

// removeSlot removes the live key at slot, finding its index position again from the
// key's hash, which the record does not keep.
func (sh *shard) removeSlot(slot uint32) {
	sh.remove(sh.index.position(sh.tagOf(slot), slot), slot)
}

// tagOf returns the index tag of the live key at slot: the top half of its hash.
func (sh *shard) tagOf(slot uint32) uint32 {
	return uint32(xxh3.Hash(sh.key(sh.at(slot))) >> 32)
}

// tags yields the tag and slot of every live record, in slab order, for the index to
// rehash them when it grows: its buckets keep too little of the hash to place a key at
// another length, and the slabs read sequentially where the table's order is random.
func (sh *shard) tags(yield func(tag, slot uint32) bool) {
	for c := range sh.slabs {
		s := &sh.slabs[c]
		for i := 1; i < s.n; i++ {
			if e := s.record(uint32(i)); e.live() && !yield(uint32(xxh3.Hash(sh.key(e))>>32), uint32(c)<<slotClassShift|uint32(i)) {
				return
			}
		}
	}
}

// expireGroup is slab c's wheel callback: group id's earliest deadline has passed.
// It removes the group's keys that are due and schedules the group again at the
// earliest deadline left, if any.
func (sh *shard) expireGroup(c uint8, id uint32) {
	s := &sh.slabs[c]
	next := int64(0)
	for i, end := s.group(id); i < end; i++ {
		e := s.record(i)
		if !e.live() {
			continue
		}
		if d := e.deadline(); d <= sh.expireAt {
			sh.removeSlot(uint32(c)<<slotClassShift | i)
			sh.expired++
		} else if next == 0 || d < next {
			next = d
		}
	}
	if next != 0 {
		sh.wheels[c].Schedule(id, next)
	}
}

// do decides one request on key, which hashes to this locked shard with tag, and
// stores the new state unless r.Peek; it reports whether key held a state before.
// It counts nothing: Do and DoAll count the answers they give.
func (sh *shard) do(key []byte, tag uint32, r algo.Request, now int64) (algo.Decision, bool, error) {
	pos, slot := sh.get(key, tag, now)
	if pos >= 0 && sh.at(slot).kind() != r.Kind {
		return algo.Decision{}, true, ErrWrongType
	}
	if r.Kind == algo.KindLog {
		d, err := sh.doLog(keyAt{key: key, tag: tag, pos: pos, slot: slot}, r, now)
		return d, pos >= 0, err
	}
	var a, b uint64
	if pos >= 0 {
		a, b = sh.at(slot).state()
	}
	a, b, d, err := decide(r, a, b, now)
	if err != nil {
		return algo.Decision{}, true, err
	}
	existed := pos >= 0
	if d.Write && d.FreshAt <= now {
		sh.removeFresh(pos, slot)
	} else if d.Write {
		if pos >= 0 && !sh.at(slot).holds(a, b, d.FreshAt) {
			sh.remove(pos, slot) // a state its record's form cannot hold: a wide record will
			pos = -1
		}
		if pos < 0 {
			p := sh.placementFor(key, r.Kind, a, b, d.FreshAt, 0)
			if err := sh.makeRoom(p, now); err != nil {
				return algo.Decision{}, false, err
			}
			slot = sh.create(key, tag, r.Kind, p)
		}
		sh.put(slot, a, b, d.FreshAt)
	}
	return d, existed, nil
}

// doLog decides an RL.LOG call on the key at at.
func (sh *shard) doLog(at keyAt, r algo.Request, now int64) (algo.Decision, error) {
	pos, slot := at.pos, at.slot
	entries := sh.logs[:0]
	var old storedLog
	if pos >= 0 {
		e := sh.at(slot)
		base, _ := e.state()
		tail := sh.tail(e)
		entries, old.end = decodeLog(tail, int64(base), entries)
		old.h, old.n = tail[0], len(entries)
		for old.cut < old.n && entries[old.cut].TS <= now-r.Window { // as algo.Log drops them
			old.cut++
		}
		if old.cut < old.n {
			from := uint(8)
			if old.h&logExt != 0 {
				from += uint(extBits(entries[0], false))
			}
			old.from = skipEntries(tail, from, old.cut)
		}
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
	if pos >= 0 && old.cut < old.n && len(entries) == old.n-old.cut+1 &&
		entries[len(entries)-1] == (algo.LogEntry{TS: now, Cost: r.Cost}) &&
		sh.appendLog(slot, old, entries, d.FreshAt) {
		return d, nil
	}
	k := uint(old.h & logKMask)
	if pos < 0 {
		k = guessK(r)
		if err := sh.makeRoom(sh.placementFor(at.key, algo.KindLog, 0, 0, 0, logSize(entries, logHeader(entries, k))), now); err != nil {
			return d, err
		}
	}
	sh.writeLog(at, entries, d.FreshAt, k)
	return d, nil
}

// storedLog describes the log doLog decoded: its header, the bit its stream ends at,
// its entries, how many of them algo.Log drops from the front, and the bit at which
// the code of the first one kept after that one starts.
type storedLog struct {
	h         byte
	end, from uint
	n, cut    int
}

// appendLog stores entries, which are the stored log old less its first old.cut
// entries plus one new entry, by editing the stored bytes: the kept entries' codes are
// moved as they are and only the new one is encoded, where encoding the whole log took
// as long as decoding it. It reports false, having done nothing, when the log would
// change size class or old's header cannot code the new entry (a cost other than 1
// without ext); writeLog then encodes it whole, with a k fit for its steps again.
func (sh *shard) appendLog(slot uint32, old storedLog, entries []algo.LogEntry, freshAt int64) bool {
	m := len(entries)
	if old.h&logExt == 0 && entries[m-1].Cost != 1 {
		return false
	}
	e := sh.at(slot)
	c, chunk, keyLen := e.spill()
	head := uint(0) // the new first entry's ext part
	if old.h&logExt != 0 {
		head = uint(extBits(entries[0], false))
	}
	bits := head + old.end - old.from + uint(entryBits(entries, m-1, old.h))
	size := 1 + int(bits+7)/8
	if need := keyLen + size; need > classSizes[c] || c >= 2 && need <= classSizes[c-2] {
		return false
	}
	log := sh.chunks.bytes(c, chunk)[keyLen:]
	var w bitWriter
	if old.cut == 0 {
		w = writerAt(log, old.end)
	} else { // the kept codes move to the front, from a copy
		kept := append(sh.logBytes[:0], log[old.from>>3:(old.end+7)>>3]...)
		sh.logBytes = kept
		w = bitWriter{dst: log, i: 1}
		if old.h&logExt != 0 {
			w.ext(entries[0], false)
		}
		w.copyBits(kept, old.from&7, old.from&7+old.end-old.from)
	}
	w.entry(entries[m-2].TS, entries[m-1], old.h)
	w.pad()
	sh.put(slot, uint64(entries[0].TS), uint64(size), freshAt)
	return true
}

// writeLog stores a non-empty log for the key at at, created if at.pos < 0, fresh at freshAt,
// encoded whole: the log is kept in the key's chunk after the key (logcodec.go),
// a = the first entry's time. One entry has no step to choose k by: it takes k (the
// stored log's, or guessK's for a new key), so that the next call appends a short
// code rather than an escaped one.
func (sh *shard) writeLog(at keyAt, entries []algo.LogEntry, freshAt int64, k uint) {
	h := logHeader(entries, k)
	encodeLog(sh.placeTail(at, tail{kind: algo.KindLog, base: entries[0].TS, size: logSize(entries, h), freshAt: freshAt}), entries, h)
}

// keyAt is where a key is in its shard: its index tag, its index position (< 0 when
// the key is not stored yet) and, when stored, its record's slot.
type keyAt struct {
	key  []byte
	tag  uint32
	pos  int
	slot uint32
}

// tail is a hasTail state (a log, a lease set) to place after its key: its kind, word
// a (base), its encoded size in bytes and its deadline.
type tail struct {
	kind    algo.Kind
	base    int64
	size    int
	freshAt int64
}

// placeTail makes room for t's size bytes after at.key, created if at.pos < 0 (the
// caller has made room), and returns those bytes for the caller to encode into:
// a = t.base, b = t.size, the deadline t.freshAt. A state that outgrows its chunk moves
// to the class that fits; one that shrinks to two classes below moves down, so that a
// state hovering at a class boundary does not move on every call.
func (sh *shard) placeTail(at keyAt, t tail) []byte {
	key, slot, size := at.key, at.slot, t.size
	need := len(key) + size
	if at.pos < 0 {
		slot = sh.create(key, at.tag, t.kind, sh.placementFor(key, t.kind, 0, 0, 0, size))
	}
	e := sh.at(slot)
	c, chunk, _ := e.spill()
	if need > classSizes[c] || c >= 2 && need <= classSizes[c-2] {
		moved := classFor(need)
		to := sh.chunks.alloc(moved)
		copy(sh.chunks.bytes(moved, to), key)
		sh.chunks.release(c, chunk)
		c, chunk = moved, to
		e.setSpill(c, chunk, len(key))
	}
	sh.put(slot, uint64(t.base), uint64(size), t.freshAt)
	return sh.chunks.bytes(c, chunk)[len(key):need]
}

// each calls fn for every live record of the shard, in slot order, the fresh ones
// included.
func (sh *shard) each(fn func(slot uint32, e entry)) {
	for c := range sh.slabs {
		s := &sh.slabs[c]
		for i := 1; i < s.n; i++ {
			if e := s.record(uint32(i)); e.live() {
				fn(uint32(c)<<slotClassShift|uint32(i), e)
			}
		}
	}
}

// reset empties the shard and lets go of its memory; the counters stay.
func (sh *shard) reset() {
	sh.release()
	sh.tick = 0
	sh.latest = 0
	sh.logs = nil
	sh.logBytes = nil
	sh.leaseScratch = nil
	sh.leaseIDs = nil
}

// release unmaps the arrays and pages of a shard and empties it: called by reset,
// and by Expire on a shard whose last key has gone, so that the memory of keys that
// all went goes back to the OS (the slab, index and wheel otherwise keep their
// largest size). The times and scratch buffers stay.
func (sh *shard) release() {
	sh.index.release()
	for c := range sh.slabs {
		sh.slabs[c].drop()
		if w := sh.wheels[c]; w != nil {
			w.Release()
			sh.wheels[c] = nil
		}
	}
	sh.inUse = 0
	sh.live = 0
	sh.parts = nil
	sh.partPos = [len(slabClasses)][]uint32{}
	sh.chunks.releaseAll()
}

// bytes is the memory the shard holds for its keys.
func (sh *shard) bytes() int64 {
	n := sh.index.bytes() + sh.chunks.held()
	for c := range sh.slabs {
		n += int64(cap(sh.slabs[c].words)) * 8
		if w := sh.wheels[c]; w != nil {
			n += w.Bytes()
		}
	}
	return n +
		int64(cap(sh.logs))*16 + int64(cap(sh.logBytes)) + int64(cap(sh.leaseScratch))*leaseBytes + int64(cap(sh.leaseIDs))
}
