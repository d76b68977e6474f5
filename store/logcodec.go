package store

import (
	"encoding/binary"

	"github.com/rlserver/rlserver/algo"
)

// An RL.LOG key's log sits in its chunk right after the key. The first entry's time is
// the base, kept in the entry's word a; each entry is then one uvarint
//
//	|TS - previous TS| << 1 | ext    (the previous TS of the first entry is the base)
//
// and, only if ext is 1, a second uvarint cost<<1 | negative. ext 0 means cost 1 and
// a non-negative step, the common case, so such an entry costs 1 byte for steps under
// 64 µs, 2 under 8 ms, 3 under 1 s and 4 under 2 min: 100 requests a minute take ~300
// bytes where a sorted set takes thousands. The domain is what the store can hold:
// times and costs in [0, 2^62).
const maxEntryBytes = 2 * binary.MaxVarintLen64

// logSize returns how many bytes entries encode to.
func logSize(entries []algo.LogEntry, base int64) int {
	n, prev := 0, base
	for _, e := range entries {
		step, ext := logStep(e, prev)
		n += uvarintLen(step)
		if step&1 != 0 {
			n += uvarintLen(ext)
		}
		prev = e.TS
	}
	return n
}

// encodeLog writes entries into dst, which holds logSize(entries, base) bytes.
func encodeLog(dst []byte, entries []algo.LogEntry, base int64) {
	n, prev := 0, base
	for _, e := range entries {
		step, ext := logStep(e, prev)
		n += binary.PutUvarint(dst[n:], step)
		if step&1 != 0 {
			n += binary.PutUvarint(dst[n:], ext)
		}
		prev = e.TS
	}
}

// decodeLog appends the entries encoded in src to entries.
func decodeLog(src []byte, base int64, entries []algo.LogEntry) []algo.LogEntry {
	prev := base
	for len(src) > 0 {
		step, n := binary.Uvarint(src)
		src = src[n:]
		e := algo.LogEntry{TS: prev + int64(step>>1), Cost: 1}
		if step&1 != 0 {
			ext, n := binary.Uvarint(src)
			src = src[n:]
			e.Cost = int64(ext >> 1)
			if ext&1 != 0 {
				e.TS = prev - int64(step>>1)
			}
		}
		entries = append(entries, e)
		prev = e.TS
	}
	return entries
}

// logStep returns an entry's first uvarint and, if that has the ext bit, its second.
func logStep(e algo.LogEntry, prev int64) (step, ext uint64) {
	d := e.TS - prev
	if d >= 0 && e.Cost == 1 {
		return uint64(d) << 1, 0
	}
	neg := uint64(0)
	if d < 0 {
		d, neg = -d, 1
	}
	return uint64(d)<<1 | 1, uint64(e.Cost)<<1 | neg
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
