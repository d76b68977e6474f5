package store

import (
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/rlserver/rlserver/algo"
)

// A lease key's set sits in its chunk right after the key, as an RL.LOG key's log does.
// The leases are sorted by deadline; the first one's deadline is the base, kept in the
// entry's word a. Each lease is then
//
//	uvarint  deadline - previous deadline   (the previous of the first is the base)
//	uvarint  len(id)<<1, or 1 for an id of 16 lower-case hex digits
//	bytes    the id, or for the hex form its 8 bytes
//
// Generated ids are of the hex form, so a lease taken every 10 ms with a generated id
// costs 2 + 1 + 8 = 11 bytes (BenchmarkBytesPerLease: 10.9), against 2 + 1 + 16 as
// text. Every call decodes and re-encodes the whole set, as RL.LOG does its log: the
// cost grows with the live leases, which a concurrency limit keeps few.
const (
	leaseBytes    = 8 + 24 // an algo.Lease in the shard's scratch: the deadline and a slice header
	hexIDLen      = 16     // the length of an id of the hex form
	maxLeaseBytes = binary.MaxVarintLen64 + 2 + algo.MaxLeaseID
)

// leaseSize returns how many bytes leases encode to.
func leaseSize(leases []algo.Lease, base int64) int {
	n, prev := 0, base
	for _, l := range leases {
		n += uvarintLen(uint64(l.Deadline - prev))
		if isHexID(l.ID) {
			n += 1 + hexIDLen/2
		} else {
			n += uvarintLen(uint64(len(l.ID))<<1) + len(l.ID)
		}
		prev = l.Deadline
	}
	return n
}

// encodeLeases writes leases into dst, which holds leaseSize(leases, base) bytes.
func encodeLeases(dst []byte, leases []algo.Lease, base int64) {
	n, prev := 0, base
	for _, l := range leases {
		n += binary.PutUvarint(dst[n:], uint64(l.Deadline-prev))
		if isHexID(l.ID) {
			dst[n] = 1
			hex.Decode(dst[n+1:n+1+hexIDLen/2], l.ID)
			n += 1 + hexIDLen/2
		} else {
			n += binary.PutUvarint(dst[n:], uint64(len(l.ID))<<1)
			n += copy(dst[n:], l.ID)
		}
		prev = l.Deadline
	}
}

// decodeLeases appends the leases encoded in src to leases, and returns them with ids,
// which holds their ids: ids' contents are replaced, and it is grown first to what the
// ids can take (twice src: the hex form doubles), so that the IDs alias one array.
func decodeLeases(src []byte, base int64, leases []algo.Lease, ids []byte) ([]algo.Lease, []byte) {
	ids = slices.Grow(ids[:0], 2*len(src))
	prev := base
	for len(src) > 0 {
		step, n := binary.Uvarint(src)
		src = src[n:]
		head, n := binary.Uvarint(src)
		src = src[n:]
		from := len(ids)
		if head == 1 {
			ids = hex.AppendEncode(ids, src[:hexIDLen/2])
			src = src[hexIDLen/2:]
		} else {
			ids = append(ids, src[:head>>1]...)
			src = src[head>>1:]
		}
		prev += int64(step)
		leases = append(leases, algo.Lease{Deadline: prev, ID: ids[from:len(ids):len(ids)]})
	}
	return leases, ids
}

// isHexID reports whether id is 16 lower-case hex digits, the form of generated ids,
// which is stored as its 8 bytes.
func isHexID(id []byte) bool {
	if len(id) != hexIDLen {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
