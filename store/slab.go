package store

import (
	"encoding/binary"
	"unsafe"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
)

// A key's record holds its state, its deadline and, when the key is short, the key
// itself: one cache line or less, and no chunk to follow. Records live in slabs, one
// per form and stride, so that a 13-byte key takes a 32-byte record and a 30-byte key
// a 56-byte one. A key longer than the widest record's room, and every RL.LOG and
// lease key (whose log or lease set follows the key), keeps its bytes in a chunk
// (chunks.go) and the chunk's number in a 40-byte wide record.
//
// A wide record holds any state: the words a and b and the deadline. Each kind but
// RL.LOG and leases has a compact form besides, for the states it can hold, so that
// a 13-byte key takes 24 or 32 bytes where a wide record takes 40; a state a compact
// form cannot hold takes a wide record (the key moves, in shard.do):
//   - tat, for RL.GCRA, RL.LEAKY and CL.THROTTLE: the one word of their state, the
//     tat, is also the deadline (algo.GCRA and algo.Leaky write a state that is fresh
//     exactly at its tat). Every state fits.
//   - fixed, for RL.FIXED: the window index in 6 bytes and the count in 4 (times are
//     below 2^53 µs and windows at least 1 ms, so an index is below 2^43; a count is at
//     most the limit, 10^9).
//   - slide, for RL.SLIDE: the window index, the two counts and, instead of the
//     deadline, the window's length in ms (4 bytes, windows up to 49 days): algo.Slide
//     writes a state that is fresh at the end of the window after its own.
//   - bucket, for RL.TOKEN: the tokens, and the last refill and the deadline packed in
//     10 bytes: the refill in µs since 2020 (50 bits, to 2055), the deadline in µs
//     after it (30 bits: buckets that fill up again within 17.9 minutes).
//
// Why (issue 13): users count RSS, and the 24-byte entry, 16-byte key chunk and the
// wheel's 16 bytes of deadline and links this replaces cost 56 B a key for 13-byte
// names; a record and its share of the group wheel below cost 41 (wide), 33 (fixed,
// slide, bucket) or 25 (tat).
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

// The compact forms' records below keep the key's length + 1 in keyLen (0 on a free
// record), at the same offset in every form (compactKeyLenAt), and the key right after
// it: their kind is their form's.

// fixedRecord is RL.FIXED's record.
type fixedRecord struct {
	deadline int64
	count    uint32
	window   [6]byte // the window index, little-endian
	keyLen   uint8
	key      [5]byte
}

// slideRecord is RL.SLIDE's record; its deadline is (window+2)·span.
type slideRecord struct {
	prev, cur uint32
	span      uint32 // the window's length, ms
	window    [6]byte
	keyLen    uint8
	key       [5]byte
}

// bucketRecord is RL.TOKEN's record.
type bucketRecord struct {
	tokens uint64   // float64 bits
	times  [10]byte // little-endian: (refill − bucketEpoch) | (deadline − refill)<<50
	keyLen uint8
	key    [5]byte
}

// The record forms.
const (
	formWide uint8 = iota
	formTat
	formFixed
	formSlide
	formBucket
)

// entry is a record of any form.
type entry struct {
	p    unsafe.Pointer
	form uint8
}

const (
	metaKind     = 12
	metaSpilled  = 1 << 11
	metaInterned = 1 << 10 // the room starts with an interned prefix's number (prefix.go)
	metaLen      = 1<<6 - 1

	// compactInterned is metaInterned in a compact form's keyLen byte.
	compactInterned = 1 << 7

	// groupShift sets the records that share one id in a slab's wheel: 16. The wheel
	// keeps 16 bytes an id (ttl.BytesPerID), 1 B a record so, where one id a record
	// cost 16; a group whose earliest deadline passes is scanned whole (16 records,
	// 10 cache lines at most), which is cheap beside the lookups that created them.
	groupShift = 4
	// slotClassShift puts a record's slab above its number in a slot: slot = class<<26 | i,
	// 31 bits, as an index bucket holds them.
	slotClassShift = 26
	slotClassBits  = 5
	slotIndexMask  = 1<<slotClassShift - 1

	maxWindowIndex = 1<<48 - 1
	maxFixedCount  = 1<<32 - 1
	maxSlideSpan   = 1<<32 - 1 // ms

	bucketEpoch    = 1_577_836_800_000_000 // 2020-01-01T00:00:00Z, µs
	bucketTSBits   = 50
	maxBucketTS    = 1<<bucketTSBits - 1
	maxBucketAhead = 1<<(80-bucketTSBits) - 1
)

// keyOffsets are the forms' bytes before the key.
var keyOffsets = [...]int{
	formWide:   int(unsafe.Offsetof(wideRecord{}.key)),   // 26
	formTat:    int(unsafe.Offsetof(tatRecord{}.key)),    // 10
	formFixed:  int(unsafe.Offsetof(fixedRecord{}.key)),  // 19
	formSlide:  int(unsafe.Offsetof(slideRecord{}.key)),  // 19
	formBucket: int(unsafe.Offsetof(bucketRecord{}.key)), // 19
}

// slabClasses are the slabs' forms and strides, each up to a cache line.
var slabClasses = [...]struct {
	stride int
	form   uint8
}{{32, formWide}, {40, formWide}, {48, formWide}, {56, formWide}, {64, formWide},
	{16, formTat}, {24, formTat}, {32, formTat}, {40, formTat}, {48, formTat},
	{24, formFixed}, {32, formFixed}, {40, formFixed}, {48, formFixed}, {56, formFixed},
	{24, formSlide}, {32, formSlide}, {40, formSlide}, {48, formSlide}, {56, formSlide},
	{24, formBucket}, {32, formBucket}, {40, formBucket}, {48, formBucket}, {56, formBucket}}

// The slab classes must fit a slot's class bits.
var _ [1<<slotClassBits - len(slabClasses)]struct{}

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

func (e entry) wide() *wideRecord     { return (*wideRecord)(e.p) }
func (e entry) tat() *tatRecord       { return (*tatRecord)(e.p) }
func (e entry) fixed() *fixedRecord   { return (*fixedRecord)(e.p) }
func (e entry) slide() *slideRecord   { return (*slideRecord)(e.p) }
func (e entry) bucket() *bucketRecord { return (*bucketRecord)(e.p) }

// compactKeyLen is a compact form's key length + 1, 0 on a free record: at the same
// offset in all three (checked below).
func (e entry) compactKeyLen() *uint8 { return (*uint8)(unsafe.Add(e.p, compactKeyLenAt)) }

const compactKeyLenAt = unsafe.Offsetof(fixedRecord{}.keyLen)

var (
	_ [compactKeyLenAt - unsafe.Offsetof(slideRecord{}.keyLen)]struct{}
	_ [unsafe.Offsetof(slideRecord{}.keyLen) - compactKeyLenAt]struct{}
	_ [compactKeyLenAt - unsafe.Offsetof(bucketRecord{}.keyLen)]struct{}
	_ [unsafe.Offsetof(bucketRecord{}.keyLen) - compactKeyLenAt]struct{}
)

// formKinds are the kinds of the compact forms whose kind is their form's.
var formKinds = [...]algo.Kind{formFixed: algo.KindFixed, formSlide: algo.KindSlide, formBucket: algo.KindToken}

// live reports whether the record holds a key.
func (e entry) live() bool { return e.meta() != 0 }

// meta returns the kind, spilled flag and inline key length, as a wide record's meta;
// 0 on a free record.
func (e entry) meta() uint16 {
	switch e.form {
	case formWide:
		return e.wide().meta
	case formTat:
		return e.tat().meta
	}
	n := *e.compactKeyLen()
	if n == 0 {
		return 0
	}
	meta := uint16(formKinds[e.form])<<metaKind | uint16(n&^compactInterned-1)
	if n&compactInterned != 0 {
		meta |= metaInterned
	}
	return meta
}

// setMeta marks the record live with a key of kind, spilled or of n bytes inline,
// those starting with an interned prefix's number if interned.
func (e entry) setMeta(kind algo.Kind, spilled, interned bool, n int) {
	meta := uint16(kind)<<metaKind | uint16(n)
	if spilled {
		meta = uint16(kind)<<metaKind | metaSpilled
	} else if interned {
		meta |= metaInterned
	}
	switch e.form {
	case formWide:
		e.wide().meta = meta
	case formTat:
		e.tat().meta = meta
	default:
		*e.compactKeyLen() = uint8(n + 1)
		if interned {
			*e.compactKeyLen() |= compactInterned
		}
	}
}

// kind returns the record's kind.
func (e entry) kind() algo.Kind { return algo.Kind(e.meta() >> metaKind) }

// spilled reports whether the key's bytes are in a chunk.
func (e entry) spilled() bool { return e.meta()&metaSpilled != 0 }

// deadline returns the µs from which the state is fresh again.
func (e entry) deadline() int64 {
	switch e.form {
	case formTat:
		return e.tat().tat
	case formFixed:
		return e.fixed().deadline
	case formSlide:
		r := e.slide()
		return (int64(uint48(r.window)) + 2) * int64(r.span) * 1000
	case formBucket:
		ts, ahead := e.bucket().refillAndAhead()
		return int64(ts + ahead)
	}
	return e.wide().deadline
}

// refillAndAhead unpacks a bucket record's times: the last refill (µs since the Unix
// epoch) and the µs from it to the deadline.
func (r *bucketRecord) refillAndAhead() (uint64, uint64) {
	lo := binary.LittleEndian.Uint64(r.times[:8])
	hi := uint64(binary.LittleEndian.Uint16(r.times[8:]))
	return lo&maxBucketTS + bucketEpoch, lo>>bucketTSBits | hi<<(64-bucketTSBits)
}

// state returns the state words.
func (e entry) state() (uint64, uint64) {
	switch e.form {
	case formTat:
		return uint64(e.tat().tat), 0
	case formFixed:
		r := e.fixed()
		return uint48(r.window), uint64(r.count)
	case formSlide:
		r := e.slide()
		return uint48(r.window), uint64(r.prev)<<32 | uint64(r.cur)
	case formBucket:
		ts, _ := e.bucket().refillAndAhead()
		return e.bucket().tokens, ts
	}
	w := e.wide()
	return w.a, w.b
}

// holds reports whether the record's form can hold the state words a and b with this
// deadline.
func (e entry) holds(a, b uint64, deadline int64) bool { return fits(e.form, a, b, deadline) }

// fits reports whether a record of form can hold the state words a and b with this
// deadline (a tat record's deadline is its a).
func fits(form uint8, a, b uint64, deadline int64) bool {
	switch form {
	case formTat:
		return deadline == int64(a) // a restored key's own TTL takes a wide record
	case formFixed:
		return a <= maxWindowIndex && b <= maxFixedCount
	case formSlide:
		_, ok := slideSpan(a, deadline)
		return ok
	case formBucket:
		return b >= bucketEpoch && b-bucketEpoch <= maxBucketTS &&
			deadline >= int64(b) && uint64(deadline)-b <= maxBucketAhead
	}
	return true
}

// slideSpan returns the window length in ms that makes deadline the end of the window
// after window a, if there is one a slide record holds.
func slideSpan(a uint64, deadline int64) (uint32, bool) {
	if a > maxWindowIndex || deadline <= 0 || deadline%int64(a+2) != 0 {
		return 0, false
	}
	span := deadline / int64(a+2)
	if span%1000 != 0 || span/1000 > maxSlideSpan {
		return 0, false
	}
	return uint32(span / 1000), true
}

// set stores the state words and the deadline, which the record's form can hold
// (holds); a tat record keeps a, its deadline.
func (e entry) set(a, b uint64, deadline int64) {
	switch e.form {
	case formTat:
		e.tat().tat = int64(a)
	case formFixed:
		r := e.fixed()
		putUint48(&r.window, a)
		r.count, r.deadline = uint32(b), deadline
	case formSlide:
		r := e.slide()
		span, _ := slideSpan(a, deadline)
		putUint48(&r.window, a)
		r.prev, r.cur, r.span = uint32(b>>32), uint32(b), span
	case formBucket:
		r := e.bucket()
		ahead := uint64(deadline) - b
		r.tokens = a
		binary.LittleEndian.PutUint64(r.times[:8], b-bucketEpoch|ahead<<bucketTSBits)
		binary.LittleEndian.PutUint16(r.times[8:], uint16(ahead>>(64-bucketTSBits)))
	default:
		w := e.wide()
		w.a, w.b, w.deadline = a, b, deadline
	}
}

// uint48 reads a 6-byte little-endian number.
func uint48(b [6]byte) uint64 {
	return uint64(binary.LittleEndian.Uint32(b[:4])) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

// putUint48 writes a number below 2^48 in 6 bytes, little-endian.
func putUint48(b *[6]byte, v uint64) {
	binary.LittleEndian.PutUint32(b[:4], uint32(v))
	binary.LittleEndian.PutUint16(b[4:], uint16(v>>32))
}

// room returns the record's key room: n bytes from the key's offset.
func (e entry) room(n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(e.p, keyOffsets[e.form])), n)
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

// compactForms are the kinds' compact forms; a kind without one (RL.LOG, leases) has
// only wide records.
var compactForms = [...]uint8{
	algo.KindGCRA: formTat, algo.KindLeaky: formTat, algo.KindThrottle: formTat,
	algo.KindFixed: formFixed, algo.KindSlide: formSlide, algo.KindToken: formBucket,
	algo.KindLog: formWide, algo.KindLease: formWide,
	// Redis's GCRA keeps a key until the ms after its tat: a deadline of its own.
	algo.KindRedisGCRA: formWide,
}

// formFor returns the form of record a kind's key takes, with state words a and b
// and this deadline.
func formFor(kind algo.Kind, a, b uint64, deadline int64) uint8 {
	if form := compactForms[kind]; fits(form, a, b, deadline) {
		return form
	}
	return formWide
}

// placement is where a new key's bytes go: its record's slab, the chunk class of its
// key and tail if they do not stay inline (-1 if they do), and for an inline key that
// starts with an interned prefix, the prefix's number + 1 and length (0 if none).
type placement struct {
	rec         uint8
	chunk       int
	prefix, cut int
}

// placementFor returns the placement of a key of keyLen bytes of kind, with state
// words a and b and this deadline, or with tail bytes of log or lease set after it.
func placementFor(keyLen int, kind algo.Kind, a, b uint64, deadline int64, tail int) placement {
	if !hasTail(kind) {
		form := formFor(kind, a, b, deadline)
		for c, sc := range slabClasses {
			if sc.form == form && keyLen <= sc.stride-keyOffsets[form] {
				return placement{rec: uint8(c), chunk: -1}
			}
		}
	}
	return placement{rec: spillClass, chunk: int(classFor(keyLen + tail))}
}

// record returns record i of the slab.
func (s *slab) record(i uint32) entry {
	return entry{unsafe.Pointer(&s.words[int(i)*s.wordsPer]), s.form}
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

// full reports whether the slab holds as many records as a slot can number.
func (s *slab) full() bool { return s.free == 0 && s.n > slotIndexMask }

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
