package store

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/rlserver/rlserver/algo"
)

// An RL.LOG key's log sits in its chunk right after the key: a header byte, then a bit
// stream, most significant bit first, padded to a whole byte with 1 bits. The first
// entry's time is the base, kept in the entry's word a. The header is
//
//	k | ext<<6    k in [0, 62], the Rice parameter; bit 7 is 0
//
// The first entry has no step; every later one is its step d = TS - previous TS,
// |d| Rice-coded with parameter k:
//
//	q = |d|>>k < riceEscape:  q 1 bits, a 0, the k low bits of |d|
//	otherwise:                riceEscape 1 bits, then gamma(|d|)
//
// and, only in a log whose header has ext, every entry (the first too) then has an ext
// bit, 1 if its cost is not 1 or its step is negative, followed by
// gamma((cost<<1 | negative) + 1). gamma(x), x ≥ 1, is bits.Len64(x)-1 in 6 bits,
// then the bits of x below its top one. A log without ext holds only cost-1 entries
// in non-decreasing time, the common case, and pays nothing for the rest.
//
// k is chosen when the log is encoded whole (logHeader: the k of the fewest bits near
// log2 of the mean step; for a new key's one entry, guessK from window/limit),
// and kept while entries are appended and trimmed from the front in place
// (shard.appendLog); the log is encoded whole again when it changes size class. Steps
// of about 2^k µs take k+2 bits: RL.LOG's memory test (100 entries 30 s apart, k =
// 24) takes 1 + 99×26/8 = 323 bytes, where uvarints took 397 and a sorted set takes
// thousands. Random (Poisson) arrivals with mean step m take about log2(m)+1.6 bits
// each, where uvarints took log2(m)+5 to 7 (measured at m = 100 µs to 30 s).
// The domain is what the store can hold: times and costs in [0, 2^62).
const (
	logExt     = 1 << 6
	logKMask   = logExt - 1
	maxLogK    = 62
	riceEscape = 16 // > 7, so that the ≤ 7 1 bits of padding are never a whole entry

	// maxEntryBytes bounds an entry: an escaped step (16 + 6 + 63 bits) and an ext
	// part (1 + 6 + 63 bits), 155 bits.
	maxEntryBytes = 20
)

// logHeader returns the header that encodes entries (non-empty) in the fewest bits:
// ext if an entry needs it, and the best k near log2 of the mean step. A log of one
// entry has no step to go by: it takes k (the stored log's, or guessK's).
func logHeader(entries []algo.LogEntry, k uint) byte {
	ext := byte(0)
	prev := entries[0].TS
	if entries[0].Cost != 1 {
		ext = logExt
	}
	sum := 0.0
	for _, e := range entries[1:] {
		d := e.TS - prev
		if d < 0 || e.Cost != 1 {
			ext = logExt
		}
		sum += math.Abs(float64(d))
		prev = e.TS
	}
	if len(entries) < 2 {
		return byte(k) | ext
	}
	mean := uint64(sum / float64(len(entries)-1))
	k0 := max(bits.Len64(mean)-2, 0) // q of the mean step about 2 to 4; the minimum is near
	best, bestBits := uint(k0), math.MaxInt
	for c := k0; c <= min(k0+3, maxLogK); c++ {
		if n := stepBits(entries, uint(c)); n < bestBits {
			best, bestBits = uint(c), n
		}
	}
	return byte(best) | ext
}

// guessK returns a k for the log of a new key of r, which has no step to go by: that
// of the mean step of a full log, the window over the limit.
func guessK(r algo.Request) uint {
	return uint(min(max(bits.Len64(uint64(r.Window/max(r.Limit, 1)))-1, 0), maxLogK))
}

// stepBits returns the bits of entries' steps with parameter k.
func stepBits(entries []algo.LogEntry, k uint) int {
	n, prev := 0, entries[0].TS
	for _, e := range entries[1:] {
		n += riceBits(absStep(e.TS-prev), k)
		prev = e.TS
	}
	return n
}

func absStep(d int64) uint64 {
	if d < 0 {
		return uint64(-d)
	}
	return uint64(d)
}

func riceBits(u uint64, k uint) int {
	if q := u >> k; q < riceEscape {
		return int(q) + 1 + int(k)
	}
	return riceEscape + gammaBits(u)
}

func gammaBits(x uint64) int { return 6 + bits.Len64(x) - 1 }

// extBits returns the bits of an entry's ext part, in a log with ext.
func extBits(e algo.LogEntry, neg bool) int {
	if e.Cost == 1 && !neg {
		return 1
	}
	return 1 + gammaBits(extValue(e, neg))
}

func extValue(e algo.LogEntry, neg bool) uint64 {
	v := uint64(e.Cost)<<1 + 1
	if neg {
		v++
	}
	return v
}

// entryBits returns the bits of entries[i] (i > 0) in a log with header h.
func entryBits(entries []algo.LogEntry, i int, h byte) int {
	d := entries[i].TS - entries[i-1].TS
	n := riceBits(absStep(d), uint(h&logKMask))
	if h&logExt != 0 {
		n += extBits(entries[i], d < 0)
	}
	return n
}

// logBits returns the bits of entries' stream (not the header) with header h.
func logBits(entries []algo.LogEntry, h byte) int {
	n := 0
	if h&logExt != 0 {
		n = extBits(entries[0], false)
	}
	if h&logExt == 0 {
		return n + stepBits(entries, uint(h&logKMask))
	}
	for i := 1; i < len(entries); i++ {
		n += entryBits(entries, i, h)
	}
	return n
}

// logSize returns how many bytes entries (non-empty) encode to with header h.
func logSize(entries []algo.LogEntry, h byte) int { return 1 + (logBits(entries, h)+7)/8 }

// encodeLog writes entries (non-empty; the base is entries[0].TS) with header h into
// dst, which holds logSize(entries, h) bytes.
func encodeLog(dst []byte, entries []algo.LogEntry, h byte) {
	dst[0] = h
	w := bitWriter{dst: dst, i: 1}
	if h&logExt != 0 {
		w.ext(entries[0], false)
	}
	for i := 1; i < len(entries); i++ {
		w.entry(entries[i-1].TS, entries[i], h)
	}
	w.pad()
}

// decodeLog appends the entries encoded in src (a header and its stream) to entries,
// the first at base, and returns the bit at which the last entry's code ends.
func decodeLog(src []byte, base int64, entries []algo.LogEntry) ([]algo.LogEntry, uint) {
	h := src[0]
	k, ext := uint(h&logKMask), h&logExt != 0
	r := bitReader{src: src, pos: 8}
	end := uint(len(src)) * 8
	first := algo.LogEntry{TS: base, Cost: 1}
	if ext {
		first.Cost, _ = r.ext()
	}
	entries = append(entries, first)
	prev := base
	if !ext { // the common case, while 8 whole bytes remain: no ext part, no padding
		pos, n := r.pos, uint(len(src))
		for pos>>3+8 <= n {
			w := binary.BigEndian.Uint64(src[pos>>3:pos>>3+8]) << (pos & 7)
			if q := uint(bits.LeadingZeros64(^w)); q >= riceEscape || q+1+k > 57 {
				r.pos = pos
				prev += int64(r.longStep(q, k))
				entries = append(entries, algo.LogEntry{TS: prev, Cost: 1})
				pos = r.pos
				continue
			}
			// The codes within w, one at least: past avail, w's bits are 0 and stop q.
			for avail := 64 - pos&7; ; {
				q := uint(bits.LeadingZeros64(^w))
				l := q + 1 + k
				if q >= riceEscape || l > avail {
					break
				}
				prev += int64(uint64(q)<<k | w<<(q+1)>>(64-k))
				entries = append(entries, algo.LogEntry{TS: prev, Cost: 1})
				w <<= l
				avail -= l
				pos += l
			}
		}
		r.pos = pos
	}
	for {
		var w uint64 // r.peek(), inlined
		if i := r.pos >> 3; i+8 <= uint(len(src)) {
			w = binary.BigEndian.Uint64(src[i:i+8]) << (r.pos & 7)
		} else {
			w = r.peekEnd()
		}
		if end-r.pos < 8 && w>>(64-(end-r.pos)) == 1<<(end-r.pos)-1 {
			return entries, r.pos // only padding is left
		}
		q := uint(bits.LeadingZeros64(^w))
		var u uint64
		switch {
		case q < riceEscape && q+1+k <= 57: // within the 57 bits peek has at least
			u = uint64(q)<<k | w<<(q+1)>>(64-k) // k = 0 shifts by 64: 0
			r.pos += q + 1 + k
		default:
			u = r.longStep(q, k)
		}
		e := algo.LogEntry{TS: prev + int64(u), Cost: 1}
		if ext {
			var neg bool
			if e.Cost, neg = r.ext(); neg {
				e.TS = prev - int64(u)
			}
		}
		entries = append(entries, e)
		prev = e.TS
	}
}

// longStep reads a step code that starts with q 1 bits and is escaped or longer than
// 57 bits.
func (r *bitReader) longStep(q, k uint) uint64 {
	if q >= riceEscape {
		r.pos += riceEscape
		return r.gamma()
	}
	r.pos += q + 1
	return uint64(q)<<k | r.read(k)
}

// skipEntries returns the bit after the code of entry n of the log src, from bit pos
// at which entry 1's code starts.
func skipEntries(src []byte, pos uint, n int) uint {
	h := src[0]
	k := uint(h & logKMask)
	r := bitReader{src: src, pos: pos}
	for range n {
		if q := uint(bits.LeadingZeros64(^r.peek())); q >= riceEscape {
			r.pos += riceEscape
			r.gamma()
		} else {
			r.pos += q + 1 + k
		}
		if h&logExt != 0 {
			r.ext()
		}
	}
	return r.pos
}

// bitWriter writes bits into dst from byte i on.
type bitWriter struct {
	dst []byte
	i   int
	acc uint64 // the pending bits are its low n: the top bits of dst[i]
	n   uint
}

// at returns a writer that writes over dst from bit pos on, keeping the bits before it.
func writerAt(dst []byte, pos uint) bitWriter {
	w := bitWriter{dst: dst, i: int(pos >> 3), n: pos & 7}
	if w.n != 0 {
		w.acc = uint64(dst[w.i] >> (8 - w.n))
	}
	return w
}

// write appends the low n bits of v, n ≤ 56. It may write anything into the 8 bytes
// from byte i on: the bits after the ones written are to be written next, or lie past
// the log's end.
func (w *bitWriter) write(v uint64, n uint) {
	w.acc = w.acc<<n | v&(1<<n-1)
	w.n += n
	if w.i+8 <= len(w.dst) { // the whole bytes at once
		binary.BigEndian.PutUint64(w.dst[w.i:w.i+8], w.acc<<(64-w.n))
		w.i += int(w.n >> 3)
		w.n &= 7
		return
	}
	for w.n >= 8 {
		w.n -= 8
		w.dst[w.i] = byte(w.acc >> w.n)
		w.i++
	}
}

// writeLong appends the low n bits of v, n ≤ 64.
func (w *bitWriter) writeLong(v uint64, n uint) {
	if n > 32 {
		w.write(v>>32, n-32)
		n = 32
	}
	w.write(v, n)
}

func (w *bitWriter) gamma(x uint64) {
	l := uint(bits.Len64(x)) - 1
	w.write(uint64(l), 6)
	w.writeLong(x, l)
}

func (w *bitWriter) ext(e algo.LogEntry, neg bool) {
	if e.Cost == 1 && !neg {
		w.write(0, 1)
		return
	}
	w.write(1, 1)
	w.gamma(extValue(e, neg))
}

// entry appends the code of e, whose previous entry is at prev, in a log with header h.
func (w *bitWriter) entry(prev int64, e algo.LogEntry, h byte) {
	d := e.TS - prev
	u, k := absStep(d), uint(h&logKMask)
	if q := u >> k; q < riceEscape {
		w.write(1<<(q+1)-2, uint(q)+1) // q 1 bits and a 0
		w.writeLong(u, k)
	} else {
		w.write(1<<riceEscape-1, riceEscape)
		w.gamma(u)
	}
	if h&logExt != 0 {
		w.ext(e, d < 0)
	}
}

// copyBits appends the bits of src from bit pos to bit end; src is not w's dst.
func (w *bitWriter) copyBits(src []byte, pos, end uint) {
	r := bitReader{src: src, pos: pos}
	for ; end-r.pos >= 56; r.pos += 56 {
		w.write(r.peek()>>8, 56)
	}
	if n := end - r.pos; n > 0 {
		w.write(r.peek()>>(64-n), n)
	}
}

// pad ends the stream with 1 bits up to a whole byte.
func (w *bitWriter) pad() {
	if w.n != 0 {
		w.write(1<<(8-w.n)-1, 8-w.n)
	}
}

// bitReader reads src from bit pos on.
type bitReader struct {
	src []byte
	pos uint
}

// peek returns the 64 bits from pos on, the first at the top, of which at least 57
// are src's; those past its end are 0.
func (r *bitReader) peek() uint64 {
	if i := r.pos >> 3; i+8 <= uint(len(r.src)) {
		return binary.BigEndian.Uint64(r.src[i:i+8]) << (r.pos & 7)
	}
	return r.peekEnd()
}

// peekEnd is peek within 8 bytes of src's end.
func (r *bitReader) peekEnd() uint64 {
	var b [8]byte
	if i := int(r.pos >> 3); i < len(r.src) {
		copy(b[:], r.src[i:])
	}
	return binary.BigEndian.Uint64(b[:]) << (r.pos & 7)
}

// read returns the next n bits, n ≤ 64.
func (r *bitReader) read(n uint) uint64 {
	if n > 57 {
		hi := r.read(n - 32)
		return hi<<32 | r.read(32)
	}
	v := r.peek() >> (64 - n) // n = 0: 0
	r.pos += n
	return v
}

func (r *bitReader) gamma() uint64 {
	l := uint(r.read(6))
	return 1<<l | r.read(l)
}

// ext reads an entry's ext part: its cost and whether its step is negative.
func (r *bitReader) ext() (int64, bool) {
	if r.read(1) == 0 {
		return 1, false
	}
	v := r.gamma() - 1
	return int64(v >> 1), v&1 != 0
}
