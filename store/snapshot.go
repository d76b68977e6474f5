package store

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/zeebo/xxh3"
)

// A snapshot is the store's keys in a versioned binary file, little-endian:
//
//	header   magic "RLSNAP\r\n", version uint32 (3), saved-at int64 µs
//	frame    length uint32 (> 0), xxh3 of the body uint64, body: records
//	...
//	trailer  uint32 0, record count uint64, xxh3 of every byte before the count uint64
//
//	record   kind byte, key length uvarint, key, a uint64, b uint64, deadline int64 µs,
//	         and for RL.LOG and leases b is the log's or lease set's length in bytes and
//	         it follows (logcodec.go, leasecodec.go)
//
// The state words are the store's own (codec.go). Versions 1 and 2 differ in how a log
// is coded: one uvarint per entry (validLogV2), re-encoded on load. Version 1 differs
// in one more thing: the tat of RL.GCRA, RL.LEAKY and CL.THROTTLE was float64 bits; it
// loads rounded up to the next whole µs, the integer state that never admits more than
// the float one did.
//
// Every time in the state words is absolute
// µs since the epoch, so a state loaded later is simply read at the later time: the
// time the server was down counts as elapsed, as it does for a key nobody touched.
//
// The writer takes one shard at a time: it encodes the shard's keys into a buffer under
// the shard's lock and writes them after unlocking, so a slow disk never holds a lock
// and requests on other shards go on meanwhile. Frames are cut at about frameBytes so
// that the reader checks each frame's checksum before applying it while holding one
// frame in memory, not the file.
const (
	snapshotMagic    = "RLSNAP\r\n" // \r\n: a file mangled by a text-mode copy fails here
	snapshotVersion  = 3
	floatTatVersion  = 1 // the last version whose tat words are float64 bits
	varintLogVersion = 2 // the last version whose logs are uvarints
	headerBytes      = 8 + 4 + 8
	frameHeadBytes   = 4 + 8
	frameBytes       = 1 << 20
	recordFixed      = 1 + 8 + 8 + 8 // kind and the three words; the key and log are extra
)

// Errors returned by ReadSnapshot. Those about the file's contents wrap
// ErrSnapshotCorrupt, so a caller can tell a bad file from a failing disk.
var (
	// ErrSnapshotCorrupt is wrapped by every error that says the file is not a whole,
	// valid snapshot: bad magic, unsupported version, truncation, checksum mismatch, a
	// bad record.
	ErrSnapshotCorrupt = errors.New("snapshot is corrupt")
	// ErrSnapshotVersion is wrapped by the error for a snapshot of a format version this
	// store does not read, such as one written by a newer rlserver.
	ErrSnapshotVersion = errors.New("unsupported snapshot version")
	// ErrSnapshotNotEmpty is returned when ReadSnapshot is called on a store that holds keys.
	ErrSnapshotNotEmpty = errors.New("store: a snapshot loads only into an empty store")
)

// SnapshotInfo describes a snapshot written or read.
type SnapshotInfo struct {
	SavedAt int64  // µs since the epoch: the now the snapshot was written at
	Keys    int    // keys written, or keys loaded
	Fresh   int    // keys read but skipped: their state became fresh while the server was down
	Bytes   int64  // the file's size
	Version uint32 // the format version written, or read
}

// WriteSnapshot writes every key whose state is not fresh at now to w, one shard at a
// time under that shard's lock; each shard's keys are as they were at one instant.
// Requests go on meanwhile. w should be buffered; a failing w's error is returned.
func (s *Store) WriteSnapshot(w io.Writer, now int64) (SnapshotInfo, error) {
	info := SnapshotInfo{SavedAt: now, Version: snapshotVersion}
	h := xxh3.New()
	out := io.MultiWriter(w, h)
	var head [headerBytes]byte
	copy(head[:], snapshotMagic)
	binary.LittleEndian.PutUint32(head[8:], snapshotVersion)
	binary.LittleEndian.PutUint64(head[12:], uint64(now))
	if _, err := out.Write(head[:]); err != nil {
		return info, err
	}
	info.Bytes = headerBytes
	var buf []byte
	var cuts []int // the ends of the frames in buf
	for i := range s.shards {
		buf, cuts = buf[:0], cuts[:0]
		sh := &s.shards[i]
		sh.mu.Lock()
		start := 0
		sh.each(func(_ uint32, e entry) {
			if e.deadline() <= now {
				return
			}
			buf = sh.appendRecord(buf, e)
			info.Keys++
			if len(buf)-start >= frameBytes {
				cuts = append(cuts, len(buf))
				start = len(buf)
			}
		})
		sh.mu.Unlock()
		if start < len(buf) {
			cuts = append(cuts, len(buf))
		}
		start = 0
		for _, end := range cuts {
			var fh [frameHeadBytes]byte
			binary.LittleEndian.PutUint32(fh[:], uint32(end-start))
			binary.LittleEndian.PutUint64(fh[4:], xxh3.Hash(buf[start:end]))
			if _, err := out.Write(fh[:]); err != nil {
				return info, err
			}
			if _, err := out.Write(buf[start:end]); err != nil {
				return info, err
			}
			info.Bytes += int64(frameHeadBytes + end - start)
			start = end
		}
	}
	var tail [4 + 8 + 8]byte
	binary.LittleEndian.PutUint64(tail[4:], uint64(info.Keys))
	if _, err := out.Write(tail[:12]); err != nil {
		return info, err
	}
	binary.LittleEndian.PutUint64(tail[12:], h.Sum64())
	if _, err := w.Write(tail[12:]); err != nil {
		return info, err
	}
	info.Bytes += int64(len(tail))
	return info, nil
}

// appendRecord appends e's record to buf.
func (sh *shard) appendRecord(buf []byte, e entry) []byte {
	return sh.appendRecordAs(buf, e, sh.key(e))
}

// appendRecordAs appends e's record to buf with key in place of its own (DUMP: none).
func (sh *shard) appendRecordAs(buf []byte, e entry, key []byte) []byte {
	kind := e.kind()
	buf = append(buf, byte(kind))
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = append(buf, key...)
	a, b := e.state()
	buf = binary.LittleEndian.AppendUint64(buf, a)
	buf = binary.LittleEndian.AppendUint64(buf, b)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(e.deadline()))
	if hasTail(kind) {
		buf = append(buf, sh.tail(e)...)
	}
	return buf
}
