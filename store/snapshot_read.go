package store

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// ReadSnapshot loads a snapshot written by WriteSnapshot into the store, which must be
// empty. Keys whose deadline is at or before now became fresh while the server was
// down and are skipped. Each frame's checksum is checked before any of its keys is
// applied, and on any error the store is emptied again: the snapshot loads whole or
// not at all. Errors say what is wrong and at which byte offset; malformed input of
// any kind gives an error, never a panic.
func (s *Store) ReadSnapshot(r io.Reader, now int64) (SnapshotInfo, error) {
	if s.Len(now) != 0 {
		return SnapshotInfo{}, ErrSnapshotNotEmpty
	}
	sr := snapshotReader{r: r, h: xxh3.New()}
	info, err := sr.read(s, now)
	info.Bytes = sr.off
	if err != nil {
		s.Flush()
		info.Keys, info.Fresh = 0, 0
	}
	return info, err
}

// snapshotReader reads a snapshot, counting bytes for error messages and hashing them.
type snapshotReader struct {
	r       io.Reader
	h       *xxh3.Hasher
	version uint32 // the file's format version
	off     int64
	body    bytes.Buffer
	logs    []algo.LogEntry // scratch for checking RL.LOG logs
	logBuf  []byte          // a log re-encoded: checked, or converted from version 2
	leases  []algo.Lease    // and lease sets,
	ids     []byte          // with their ids
	upsert  bool            // a record replaces the key's state (a replica's Applier), not a duplicate
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSnapshotCorrupt}, args...)...)
}

// full reads exactly len(p) bytes, hashed unless hash is false.
func (sr *snapshotReader) full(p []byte, what string, hash bool) error {
	n, err := io.ReadFull(sr.r, p)
	if hash {
		sr.h.Write(p[:n])
	}
	sr.off += int64(n)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated at byte %d, in the %s", sr.off, what)
	}
	return err
}

func (sr *snapshotReader) read(s *Store, now int64) (SnapshotInfo, error) {
	var info SnapshotInfo
	var head [headerBytes]byte
	if err := sr.full(head[:8], "magic", true); err != nil {
		return info, err
	}
	if string(head[:8]) != snapshotMagic {
		return info, corrupt("bad magic %q, not an rlserver snapshot", head[:8])
	}
	if err := sr.full(head[8:], "header", true); err != nil {
		return info, err
	}
	sr.version = binary.LittleEndian.Uint32(head[8:])
	if sr.version < floatTatVersion || sr.version > snapshotVersion {
		return info, fmt.Errorf("%w %d (this rlserver reads versions %d to %d)", ErrSnapshotVersion, sr.version, floatTatVersion, snapshotVersion)
	}
	info.SavedAt, info.Version = int64(binary.LittleEndian.Uint64(head[12:])), sr.version
	records := uint64(0)
	for {
		var fh [frameHeadBytes]byte
		frameAt := sr.off
		if err := sr.full(fh[:4], "frame header", true); err != nil {
			return info, err
		}
		n := binary.LittleEndian.Uint32(fh[:4])
		if n == 0 {
			break
		}
		if err := sr.full(fh[4:], "frame header", true); err != nil {
			return info, err
		}
		// CopyN grows the buffer as bytes arrive: a corrupt length cannot make it
		// allocate more than the file holds.
		sr.body.Reset()
		got, err := io.CopyN(&sr.body, sr.r, int64(n))
		sr.off += got
		sr.h.Write(sr.body.Bytes())
		if errors.Is(err, io.EOF) {
			return info, corrupt("truncated at byte %d, in the frame at byte %d", sr.off, frameAt)
		}
		if err != nil {
			return info, err
		}
		if xxh3.Hash(sr.body.Bytes()) != binary.LittleEndian.Uint64(fh[4:]) {
			return info, corrupt("checksum mismatch in the frame at byte %d", frameAt)
		}
		bodyAt := frameAt + frameHeadBytes
		for body := sr.body.Bytes(); len(body) > 0; records++ {
			used, fresh, err := sr.apply(s, body, now)
			if err != nil {
				return info, corrupt("%v, in the record at byte %d", err, bodyAt+int64(len(sr.body.Bytes())-len(body)))
			}
			if fresh {
				info.Fresh++
			} else {
				info.Keys++
			}
			body = body[used:]
		}
	}
	var tail [16]byte
	if err := sr.full(tail[:8], "trailer", true); err != nil {
		return info, err
	}
	sum := sr.h.Sum64()
	if err := sr.full(tail[8:], "trailer", false); err != nil {
		return info, err
	}
	if c := binary.LittleEndian.Uint64(tail[:8]); c != records {
		return info, corrupt("the trailer counts %d keys, the frames hold %d", c, records)
	}
	if binary.LittleEndian.Uint64(tail[8:]) != sum {
		return info, corrupt("checksum mismatch over the file")
	}
	var extra [1]byte
	if n, _ := sr.r.Read(extra[:]); n > 0 {
		return info, corrupt("unexpected data after the trailer at byte %d", sr.off)
	}
	return info, nil
}

// keyRecord is one key's state as a snapshot record holds it (see the format above).
type keyRecord struct {
	kind     algo.Kind
	key      []byte
	a, b     uint64
	deadline int64
	tail     []byte // RL.LOG's log or a lease set; nil for the other kinds
}

// apply decodes the record at the start of body and stores it unless it is fresh at
// now. It returns the bytes the record used.
func (sr *snapshotReader) apply(s *Store, body []byte, now int64) (int, bool, error) {
	rec, pos, err := sr.decode(body)
	if err != nil {
		return 0, false, err
	}
	if rec.deadline <= now {
		return pos, true, nil
	}
	sh, tag := s.locate(rec.key, now)
	defer sh.mu.Unlock()
	if p, slot := sh.get(rec.key, tag, now); p >= 0 {
		if !sr.upsert {
			return 0, false, fmt.Errorf("duplicate key %q", rec.key)
		}
		if e := sh.at(slot); e.kind() == rec.kind && !hasTail(rec.kind) && e.holds(rec.a, rec.b, rec.deadline) { // a replica's usual update: in place
			sh.put(slot, rec.a, rec.b, rec.deadline)
			return pos, false, nil
		}
		sh.remove(p, slot)
	}
	p := sh.placementFor(rec.key, rec.kind, rec.a, rec.b, rec.deadline, len(rec.tail))
	if sh.slabs[p.rec].full() {
		return 0, false, ErrShardFull
	}
	sh.place(rec, tag, p)
	return pos, false, nil
}

// place creates rec's key in the locked shard sh at placement p, which has room.
func (sh *shard) place(rec keyRecord, tag uint32, p placement) {
	slot := sh.create(rec.key, tag, rec.kind, p)
	if hasTail(rec.kind) {
		copy(sh.tailRoom(sh.at(slot), len(rec.tail)), rec.tail)
	}
	sh.put(slot, rec.a, rec.b, rec.deadline)
}

// decode reads and checks the record at the start of body, and returns it and the
// bytes it used. rec.key and rec.tail point into body (or into sr's scratch, for a
// log converted from an older version).
func (sr *snapshotReader) decode(body []byte) (keyRecord, int, error) {
	var rec keyRecord
	rec.kind = algo.Kind(body[0])
	if rec.kind < algo.KindFixed || rec.kind > algo.LastKind {
		return rec, 0, fmt.Errorf("unknown kind %d", body[0])
	}
	keyLen, n := binary.Uvarint(body[1:])
	if n <= 0 || keyLen > maxKeyLen {
		return rec, 0, errors.New("bad key length")
	}
	pos := 1 + n
	if uint64(len(body)-pos) < keyLen+recordFixed-1 {
		return rec, 0, errors.New("record runs past its frame")
	}
	rec.key = body[pos : pos+int(keyLen)]
	pos += int(keyLen)
	rec.a = binary.LittleEndian.Uint64(body[pos:])
	rec.b = binary.LittleEndian.Uint64(body[pos+8:])
	rec.deadline = int64(binary.LittleEndian.Uint64(body[pos+16:]))
	pos += 24
	if sr.version == floatTatVersion && (rec.kind == algo.KindGCRA || rec.kind == algo.KindLeaky || rec.kind == algo.KindThrottle) {
		tat := math.Ceil(math.Float64frombits(rec.a))
		if !(tat >= 0 && tat < 1<<62) {
			return rec, 0, errors.New("bad tat")
		}
		rec.a = uint64(tat)
	}
	if !hasTail(rec.kind) {
		return rec, pos, nil
	}
	what := "log"
	if rec.kind == algo.KindLease {
		what = "lease set"
	}
	if rec.b == 0 || rec.b > uint64(len(body)-pos) || keyLen+rec.b > maxChunk {
		return rec, 0, errors.New("bad " + what + " length")
	}
	rec.tail = body[pos : pos+int(rec.b)]
	pos += int(rec.b)
	if rec.kind == algo.KindLog && sr.version <= varintLogVersion {
		if rec.tail = sr.convertLog(rec.tail, rec.a); rec.tail == nil || keyLen+uint64(len(rec.tail)) > maxChunk {
			return rec, 0, errors.New("bad " + what)
		}
		rec.b = uint64(len(rec.tail))
	} else if rec.kind == algo.KindLog && !sr.validLog(rec.tail, rec.a) || rec.kind == algo.KindLease && !sr.validLeases(rec.tail, rec.a, rec.deadline) {
		return rec, 0, errors.New("bad " + what)
	}
	return rec, pos, nil
}

// validLog reports whether log is what encodeLog writes for a non-empty log whose
// first entry's time is base, with times and costs in the store's domain [0, 2^62)
// (costs from 1): decodeLog trusts its input, and a garbled stream could run it past
// the log's end.
func (sr *snapshotReader) validLog(log []byte, base uint64) bool {
	const limit = 1 << 62
	if base >= limit || len(log) == 0 || log[0]&^(logExt|logKMask) != 0 || log[0]&logKMask > maxLogK {
		return false
	}
	h := log[0]
	k := uint(h & logKMask)
	r := bitReader{src: log, pos: 8}
	end := uint(len(log)) * 8
	ok := true
	read := func(n uint) uint64 {
		if end-r.pos < n {
			ok = false
			r.pos = end
			return 0
		}
		return r.read(n)
	}
	gamma := func() uint64 {
		l := uint(read(6))
		return 1<<l | read(l)
	}
	ext := func() (int64, bool) {
		if h&logExt == 0 || read(1) == 0 {
			return 1, false
		}
		v := gamma() - 1
		if c := v >> 1; c == 0 || c >= limit {
			ok = false
		}
		return int64(v >> 1), v&1 != 0
	}
	entries := sr.logs[:0]
	first := algo.LogEntry{TS: int64(base)}
	first.Cost, _ = ext()
	entries = append(entries, first)
	prev := int64(base)
	for ok {
		if n := end - r.pos; n < 8 && r.peek()>>(64-n) == 1<<n-1 {
			break // padding
		}
		q := uint(bits.LeadingZeros64(^r.peek()))
		var u uint64
		if q >= riceEscape {
			read(riceEscape)
			u = gamma()
		} else {
			read(q + 1)
			u = uint64(q)<<k | read(k)
		}
		if u >= limit {
			return false
		}
		e := algo.LogEntry{TS: prev + int64(u)}
		var neg bool
		if e.Cost, neg = ext(); neg {
			e.TS = prev - int64(u)
		}
		if e.TS < 0 || e.TS >= limit {
			return false
		}
		entries = append(entries, e)
		prev = e.TS
	}
	sr.logs = entries
	if !ok || logSize(entries, h) != len(log) {
		return false
	}
	// Canonical: encodeLog must give these bytes back (the padding, escapes only where
	// they must be, ext parts only where they must be), as the store edits them in place.
	sr.logBuf = append(sr.logBuf[:0], make([]byte, len(log))...)
	encodeLog(sr.logBuf, entries, h)
	return bytes.Equal(sr.logBuf, log)
}

// convertLog returns a version 2 log re-encoded as the store codes logs now, nil if
// it is not valid.
func (sr *snapshotReader) convertLog(log []byte, base uint64) []byte {
	if !sr.validLogV2(log, base) {
		return nil
	}
	h := logHeader(sr.logs, 0)
	sr.logBuf = append(sr.logBuf[:0], make([]byte, logSize(sr.logs, h))...)
	encodeLog(sr.logBuf, sr.logs, h)
	return sr.logBuf
}

// validLogV2 reports whether log is what version 2 wrote for a non-empty log whose
// first entry's time is base (each entry one uvarint |TS - previous TS|<<1 | ext and,
// if ext, a second, cost<<1 | negative; the first entry's previous TS is the base),
// and leaves its entries in sr.logs.
func (sr *snapshotReader) validLogV2(log []byte, base uint64) bool {
	const limit = 1 << 62
	if base >= limit {
		return false
	}
	entries := sr.logs[:0]
	prev := int64(base)
	size := 0
	for src := log; len(src) > 0; {
		step, n := binary.Uvarint(src)
		if n <= 0 || step>>1 >= limit {
			return false
		}
		src = src[n:]
		size += uvarintLen(step)
		e := algo.LogEntry{TS: prev + int64(step>>1), Cost: 1}
		if step&1 != 0 {
			ext, n := binary.Uvarint(src)
			if n <= 0 || ext>>1 >= limit || ext>>1 == 0 {
				return false
			}
			src = src[n:]
			size += uvarintLen(ext)
			e.Cost = int64(ext >> 1)
			if ext&1 != 0 {
				e.TS = prev - int64(step>>1)
			}
			if step>>1 == 0 && ext&1 != 0 || e.Cost == 1 && ext&1 == 0 { // not what version 2 wrote
				return false
			}
		}
		if e.TS < 0 || e.TS >= limit {
			return false
		}
		entries = append(entries, e)
		prev = e.TS
	}
	sr.logs = entries
	// Canonical, as version 2 checked it: no overlong uvarints.
	return len(entries) > 0 && entries[0].TS == int64(base) && size == len(log)
}

// validLeases reports whether set is what encodeLeases writes for a non-empty lease
// set whose first deadline is base and whose last is deadline, the key's: decodeLeases
// trusts its input.
func (sr *snapshotReader) validLeases(set []byte, base uint64, deadline int64) bool {
	const limit = 1 << 62
	if base >= limit {
		return false
	}
	leases := sr.leases[:0]
	ids := sr.ids[:0]
	prev := int64(base)
	for src := set; len(src) > 0; {
		step, n := binary.Uvarint(src)
		if n <= 0 || step >= limit-uint64(prev) {
			return false
		}
		src = src[n:]
		head, n := binary.Uvarint(src)
		if n <= 0 {
			return false
		}
		src = src[n:]
		idLen := head >> 1
		if head == 1 {
			idLen = hexIDLen / 2
		} else if head&1 != 0 || idLen > algo.MaxLeaseID {
			return false
		}
		if idLen > uint64(len(src)) {
			return false
		}
		from := len(ids)
		if head == 1 {
			ids = hex.AppendEncode(ids, src[:idLen])
		} else {
			ids = append(ids, src[:idLen]...)
		}
		src = src[idLen:]
		prev += int64(step)
		leases = append(leases, algo.Lease{Deadline: prev, ID: ids[from:len(ids):len(ids)]})
	}
	sr.leases, sr.ids = leases, ids
	// Canonical, so that the store gets these bytes back when it re-encodes them; the
	// key's deadline is its last lease's.
	return len(leases) > 0 && leases[0].Deadline == int64(base) && leases[len(leases)-1].Deadline == deadline &&
		leaseSize(leases, int64(base)) == len(set)
}
