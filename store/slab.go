package store

import (
	"encoding/binary"
	"unsafe"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
)

// A key's record holds its state, its deadline and, when the key is short, the key
// itself: one cache line or less, and no chunk to follow. Records live in slabs, one
// per form and stride, so that a 13-byte key takes a 40-byte record and a 30-byte key
// a 56-byte one. A key longer than the widest record's room, and every RL.LOG and
// lease key (whose log or lease set follows the key), keeps its bytes in a chunk
// (chunks.go) and the chunk's number in a 40-byte wide record.
//
// Three forms: a wide record holds the state words a and b and the deadline. A tat
// record, for RL.GCRA, RL.LEAKY and CL.THROTTLE, holds the one word of their state,
// the tat, which is also the deadline (algo.GCRA and algo.Leaky write a state that is
// fresh exactly at its tat), so a 13-byte key of theirs takes 24 bytes. A fixed
// record, for RL.FIXED, packs its window index into 6 bytes and its count into 4
// (times are below 2^53 µs and windows at least 1 ms, so an index is below 2^43; a
// count is at most the limit, 10^9), so a 13-byte key takes 32 bytes.
//
// Why this layout (issue 13): the 24-byte entry, 16-byte key chunk and the wheel's 16
// bytes of deadline and links it replaces cost 56 B a key for 13-byte names; a record
// and its share of the group wheel below cost 41 (wide), 33 (fixed) or 25 (tat).
type wideRecord struct {
	a, b     uint64 // the state, packed by codec.go (RL.LOG and leases: a is a base time, b the tail's length)
	deadline int64  // µs: from then on the state is fresh again and the key goes
	meta     uint16 // kind<<12 | spilled | the inline key's length; 0 on a free record
	key      [6]byte
	// An inline key's bytes start at key and run on past the struct, up to the record's
	// stride. A spilled key's room holds its chunk number (4 bytes), its length (4) and
	// its chunk's size class (1).
}

// tatRecord is the tat kinds' record: their state word, the deadline too.
type tatRecord struct {
	tat  int64 // µs
	meta uint16
	key  [6]byte
}

// fixedRecord is RL.FIXED's record.
type fixedRecord struct {
	deadline int64
	count    uint32
	window   [6]byte // the window index, little-endian
	keyLen   uint8   // the key's length + 1; 0 on a free record
	key      [5]byte
}

// The record forms.
const (
	formWide uint8 = iota
	formTat
	formFixed
)

// entry is a record of any form: one of w, t and f is set.
type entry struct {
	w *wideRecord
	t *tatRecord
	f *fixedRecord
}

const (
	metaKind    = 12
	metaSpilled = 1 << 11
	metaLen     = 1<<6 - 1

	// groupShift sets the records that share one id in a slab's wheel: 16. The wheel
	// keeps 16 bytes an id (ttl.BytesPerID), 1 B a record so, where one id a record
	// cost 16; a group whose earliest deadline passes is scanned whole (16 records,
	// 10 cache lines at most), which is cheap beside the lookups that created them.
	groupShift = 4
	// slotClassShift puts a record's slab above its number in a slot: slot = class<<27 | i.
	slotClassShift = 27
	slotIndexMask  = 1<<slotClassShift - 1

	maxFixedWindow = 1<<48 - 1
	maxFixedCount  = 1<<32 - 1
)

// keyOffsets are the forms' bytes before the key.
var keyOffsets = [...]int{
	formWide:  int(unsafe.Offsetof(wideRecord{}.key)),  // 26
	formTat:   int(unsafe.Offsetof(tatRecord{}.key)),   // 10
	formFixed: int(unsafe.Offsetof(fixedRecord{}.key)), // 19
}

// slabClasses are the slabs' forms and strides, each up to a cache line.
var slabClasses = [...]struct {
	stride int
	form   uint8
}{{32, formWide}, {40, formWide}, {48, formWide}, {56, formWide}, {64, formWide},
	{16, formTat}, {24, formTat}, {32, formTat}, {40, formTat}, {48, formTat},
	{24, formFixed}, {32, formFixed}, {40, formFixed}, {48, formFixed}, {56, formFixed}}

// spillClass is the slab of keys whose bytes are in a chunk: a wide record's 14 bytes
// of room hold the chunk's number, the key's length and the chunk's class.
const spillClass = 1

// maxInlineKey is the longest key a record holds itself.
const maxInlineKey = 64 - int(unsafe.Offsetof(wideRecord{}.key))

// slab is one class's records, mapped off the Go heap. Its timing wheel is the shard's
// (shard.wheels), kept apart so that a lookup's cache lines hold the slabs alone.
type slab struct {
	words    []uint64 // record i starts at words[i*wordsPer]; record 0 is never used
	wordsPer int
	form     uint8
	n        int    // records handed out, record 0 included; free ones among them
	free     uint32 // first free record, 0 if none; a free record's first word is the next
}

// live reports whether the record holds a key.
func (e entry) live() bool {
	switch {
	case e.t != nil:
		return e.t.meta != 0
	case e.f != nil:
		return e.f.keyLen != 0
	}
	return e.w.meta != 0
}

// meta returns the kind, spilled flag and inline key length, as a wide record's meta.
func (e entry) meta() uint16 {
	switch {
	case e.t != nil:
		return e.t.meta
	case e.f != nil:
		return uint16(algo.KindFixed)<<metaKind | uint16(e.f.keyLen-1)
	}
	return e.w.meta
}

// setMeta marks the record live with a key of kind, spilled or of n bytes inline.
func (e entry) setMeta(kind algo.Kind, spilled bool, n int) {
	meta := uint16(kind)<<metaKind | uint16(n)
	if spilled {
		meta = uint16(kind)<<metaKind | metaSpilled
	}
	switch {
	case e.t != nil:
		e.t.meta = meta
	case e.f != nil:
		e.f.keyLen = uint8(n + 1)
	default:
		e.w.meta = meta
	}
}

// kind returns the record's kind.
func (e entry) kind() algo.Kind { return algo.Kind(e.meta() >> metaKind) }

// spilled reports whether the key's bytes are in a chunk.
func (e entry) spilled() bool { return e.meta()&metaSpilled != 0 }

// deadline returns the µs from which the state is fresh again.
func (e entry) deadline() int64 {
	switch {
	case e.t != nil:
		return e.t.tat
	case e.f != nil:
		return e.f.deadline
	}
	return e.w.deadline
}

// state returns the state words.
func (e entry) state() (uint64, uint64) {
	switch {
	case e.t != nil:
		return uint64(e.t.tat), 0
	case e.f != nil:
		var w [8]byte
		copy(w[:], e.f.window[:])
		return binary.LittleEndian.Uint64(w[:]), uint64(e.f.count)
	}
	return e.w.a, e.w.b
}

// holds reports whether the record's form can hold the state words a and b.
func (e entry) holds(a, b uint64) bool {
	return e.f == nil || a <= maxFixedWindow && b <= maxFixedCount
}

// set stores the state words and the deadline; a tat record keeps a, its deadline.
func (e entry) set(a, b uint64, deadline int64) {
	switch {
	case e.t != nil:
		e.t.tat = int64(a)
	case e.f != nil:
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], a)
		copy(e.f.window[:], w[:6])
		e.f.count, e.f.deadline = uint32(b), deadline
	default:
		e.w.a, e.w.b, e.w.deadline = a, b, deadline
	}
}

// room returns the record's key room: n bytes from key.
func (e entry) room(n int) []byte {
	switch {
	case e.t != nil:
		return unsafe.Slice(&e.t.key[0], n)
	case e.f != nil:
		return unsafe.Slice(&e.f.key[0], n)
	}
	return unsafe.Slice(&e.w.key[0], n)
}

// spill returns a spilled key's chunk class, chunk number and length.
func (e entry) spill() (uint8, uint32, int) {
	r := e.room(9)
	return r[8], binary.LittleEndian.Uint32(r), int(binary.LittleEndian.Uint32(r[4:]))
}

// setSpill records a spilled key's chunk class, chunk number and length.
func (e entry) setSpill(c uint8, chunk uint32, n int) {
	r := e.room(9)
	binary.LittleEndian.PutUint32(r, chunk)
	binary.LittleEndian.PutUint32(r[4:], uint32(n))
	r[8] = c
}

// formFor returns the form of record a kind's key takes, with state words a and b.
func formFor(kind algo.Kind, a, b uint64) uint8 {
	switch {
	case kind == algo.KindGCRA || kind == algo.KindLeaky || kind == algo.KindThrottle:
		return formTat
	case kind == algo.KindFixed && a <= maxFixedWindow && b <= maxFixedCount:
		return formFixed
	}
	return formWide
}

// placement is where a new key's bytes go: its record's slab, and the chunk class of
// its key and tail if they do not stay inline (-1 if they do).
type placement struct {
	rec   uint8
	chunk int
}

// placementFor returns the placement of a key of keyLen bytes of kind, with state
// words a and b, or with tail bytes of log or lease set after it.
func placementFor(keyLen int, kind algo.Kind, a, b uint64, tail int) placement {
	if !hasTail(kind) {
		form := formFor(kind, a, b)
		for c, sc := range slabClasses {
			if sc.form == form && keyLen <= sc.stride-keyOffsets[form] {
				return placement{uint8(c), -1}
			}
		}
	}
	return placement{spillClass, int(classFor(keyLen + tail))}
}

// record returns record i of the slab.
func (s *slab) record(i uint32) entry {
	p := unsafe.Pointer(&s.words[int(i)*s.wordsPer])
	switch s.form {
	case formTat:
		return entry{t: (*tatRecord)(p)}
	case formFixed:
		return entry{f: (*fixedRecord)(p)}
	}
	return entry{w: (*wideRecord)(p)}
}

// alloc returns a free record's number, growing the slab if none is free.
func (s *slab) alloc() uint32 {
	if i := s.free; i != 0 {
		at := int(i) * s.wordsPer
		s.free, s.words[at] = uint32(s.words[at]), 0
		return i
	}
	if s.n*s.wordsPer == len(s.words) {
		s.words = offheap.Grow(s.words, s.grownLen()*s.wordsPer)
		s.words = s.words[:cap(s.words)]
	}
	if s.n == 0 {
		s.n = 1 // record 0 is never used: slot 0 is the index's empty bucket
	}
	s.n++
	return uint32(s.n - 1)
}

// grownLen is the record capacity the slab grows to: an eighth more, exactly, at least
// 64. Append's rounding left 23% slack at 1M keys over 64 shards; an eighth averages
// 6%, for 8 copies of a record over its life. The old array is unmapped once copied,
// and capacity not yet used is not resident.
func (s *slab) grownLen() int {
	n := len(s.words) / s.wordsPer
	return max(64, n+n/8)
}

// growth is the memory alloc would map now.
func (s *slab) growth() int64 {
	if s.free != 0 || s.n*s.wordsPer < len(s.words) {
		return 0
	}
	return int64(s.grownLen()*s.wordsPer-len(s.words)) * 8
}

// release frees record i.
func (s *slab) release(i uint32) {
	at := int(i) * s.wordsPer
	clear(s.words[at : at+s.wordsPer])
	s.words[at] = uint64(s.free)
	s.free = i
}

// drop unmaps the records.
func (s *slab) drop() {
	offheap.Free(s.words)
	s.words, s.n, s.free = nil, 0, 0
}

// group returns the numbers of the records in group id: [first, end).
func (s *slab) group(id uint32) (uint32, uint32) {
	first := (id - 1) << groupShift
	return first, min(first+1<<groupShift, uint32(s.n))
}

// earliest returns the numbers of group id's live records with the earliest and the
// second earliest deadlines, 0 where there is none.
func (s *slab) earliest(id uint32) (uint32, uint32) {
	var first, second uint32
	from, end := s.group(id)
	for i := from; i < end; i++ {
		e := s.record(i)
		switch {
		case !e.live():
		case first == 0 || e.deadline() < s.record(first).deadline():
			first, second = i, first
		case second == 0 || e.deadline() < s.record(second).deadline():
			second = i
		}
	}
	return first, second
}
