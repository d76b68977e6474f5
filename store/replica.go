package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/rlserver/rlserver/algo"
)

// Replication's side of the store. A primary's store, once given a Backlog
// (SetBacklog), appends to it the resulting state of every key a write changes, under
// that key's shard lock, so that the order of a key's effects in the backlog is the
// order of its writes. An effect is a record of the snapshot format (snapshot.go:
// kind, key, state words, absolute deadline, tail) for a key that holds a state, a
// deletion record for a key gone, or a flush record. A replica's Applier stores them:
// it never re-runs a command on its own clock, so a replica holds the primary's
// states, and drops a key at the deadline the primary gave it.
//
// Effects are not sent for keys that expire (a replica's own clock drops them at the
// same absolute deadline) nor for keys evicted under MaxMemory: a replica keeps those
// until their deadline, which is never less strict than the primary.
const (
	effectDelete = 0    // kind byte of a deletion: 0, key length uvarint, key
	effectFlush  = 0xff // kind byte of a flush: that byte alone
)

// Errors of the backlog and the applier.
var (
	// ErrBacklogGone is returned by Backlog.ReadAt for an offset the backlog no longer
	// holds (or never held): the reader must start over with a full sync.
	ErrBacklogGone = errors.New("store: offset no longer in the replication backlog")
	// ErrEffectCorrupt is wrapped by the errors of an Applier given bytes that are not
	// effect records.
	ErrEffectCorrupt = errors.New("effect stream is corrupt")
)

// Backlog is a primary's replication backlog: a ring of the latest effect bytes, and
// the offset of the next byte (every byte ever appended counts). Readers (one per
// replica) copy from it at their own offsets. It is safe for concurrent use.
type Backlog struct {
	mu   sync.Mutex
	ring []byte
	end  int64         // offset of the next byte appended
	wake chan struct{} // closed at the next append, if a reader waits
	rec  []byte        // one record being encoded
}

// NewBacklog returns a backlog of size bytes whose first byte will have offset start.
func NewBacklog(size int, start int64) *Backlog {
	return &Backlog{ring: make([]byte, size), end: start}
}

// Size is the ring's size in bytes.
func (b *Backlog) Size() int { return len(b.ring) }

// Offsets returns the first offset the backlog holds and the offset of the next byte.
func (b *Backlog) Offsets() (first, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.end-int64(len(b.ring))), b.end
}

// Holds reports whether a reader may continue from offset off.
func (b *Backlog) Holds(off int64) bool {
	first, end := b.Offsets()
	return off >= first && off <= end
}

// append adds rec; b.mu is held.
func (b *Backlog) append(rec []byte) {
	for len(rec) > 0 {
		at := int(b.end % int64(len(b.ring)))
		n := copy(b.ring[at:], rec)
		rec = rec[n:]
		b.end += int64(n)
	}
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

// Append adds bytes of a primary's stream as they are: a replica keeps the records it
// applies in a backlog of its own, at the primary's offsets, to feed its former
// siblings from where they are if it is promoted.
func (b *Backlog) Append(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.append(p)
}

// ReadAt copies the bytes from offset off into p and returns how many, 0 when off is
// the end, and a channel closed at the next append (nil when n > 0). ErrBacklogGone
// means off is before the first byte held, or past the end.
func (b *Backlog) ReadAt(off int64, p []byte) (int, <-chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off < b.end-int64(len(b.ring)) || off > b.end || off < 0 {
		return 0, nil, ErrBacklogGone
	}
	if off == b.end {
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		return 0, b.wake, nil
	}
	n := int(min(int64(len(p)), b.end-off))
	at := int(off % int64(len(b.ring)))
	c := copy(p[:n], b.ring[at:])
	copy(p[c:n], b.ring)
	return n, nil, nil
}

// SetBacklog makes the store append every write's effect to b from now on; nil stops it.
func (s *Store) SetBacklog(b *Backlog) {
	s.backlog.Store(b)
}

// emit appends key's resulting state to the backlog and the journal, if there are:
// called with the key's shard sh locked, after a write on key.
func (s *Store) emit(sh *shard, key []byte, tag uint32, now int64) {
	b, j := s.backlog.Load(), s.journal.Load()
	if b == nil && j == nil {
		return
	}
	if j != nil {
		j.mu.Lock()
		j.rec = sh.effect(j.rec, key, tag, now)
		j.append(j.rec)
		if b != nil {
			b.Append(j.rec)
		}
		j.mu.Unlock()
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rec = sh.effect(b.rec, key, tag, now)
	b.append(b.rec)
}

// flushLogged is Flush on a store with a backlog or a journal: every shard is locked
// at once, so that no write lands on one side of the flush record in the stream and
// on the other in the store. It reports false, doing nothing, without either.
func (s *Store) flushLogged() bool {
	b, j := s.backlog.Load(), s.journal.Load()
	if b == nil && j == nil {
		return false
	}
	for i := range s.shards {
		s.shards[i].mu.Lock()
	}
	for i := range s.shards {
		s.shards[i].reset()
	}
	if b != nil {
		b.Append([]byte{effectFlush})
	}
	if j != nil {
		j.Append([]byte{effectFlush})
	}
	for i := range s.shards {
		s.shards[i].mu.Unlock()
	}
	return true
}

// Applier stores a primary's effects in a replica's store. Records may arrive cut
// anywhere: the bytes of one not yet whole wait for the next Apply.
type Applier struct {
	s       *Store
	sr      snapshotReader
	pending []byte
	log     *Backlog // SetLog
}

// NewApplier returns an Applier into s of records in the snapshot format version the
// primary wrote its full sync in (SnapshotInfo.Version), so that a replica upgraded
// before its primary converts the primary's records as ReadSnapshot converts an older
// file; 0, or a version this rlserver does not read, means its own.
func (s *Store) NewApplier(version uint32) *Applier {
	if version < floatTatVersion || version > snapshotVersion {
		version = snapshotVersion
	}
	return &Applier{s: s, sr: snapshotReader{version: version, upsert: true}}
}

// SetLog makes Apply append every record it stores to b.
func (a *Applier) SetLog(b *Backlog) { a.log = b }

// Apply stores every whole record of the pending bytes and data, each atomically, at
// the replica's time now, and returns the bytes of the records stored. On error the
// records before the bad one are stored, the bad one and what follows are not, and
// the Applier must not be used again.
func (a *Applier) Apply(data []byte, now int64) (int, error) {
	a.pending = append(a.pending, data...)
	body := a.pending
	done := 0
	for len(body) > 0 {
		n, err := a.apply(body, now)
		if err != nil {
			a.logApplied(a.pending[:done])
			return done, fmt.Errorf("%w: %v, at the stream's byte %d", ErrEffectCorrupt, err, done)
		}
		if n == 0 {
			break // not whole yet
		}
		body = body[n:]
		done += n
	}
	a.logApplied(a.pending[:done])
	a.pending = append(a.pending[:0], body...)
	return done, nil
}

// logApplied appends the records stored to the log of SetLog and to the store's
// journal. A deletion or a flush among them was journaled once already, by the
// store, as it was applied: the second copy, with every record around it in order
// after it, leaves the same states.
func (a *Applier) logApplied(p []byte) {
	if a.log != nil {
		a.log.Append(p)
	}
	if j := a.s.journal.Load(); j != nil && len(p) > 0 {
		j.Append(p)
	}
}

// apply stores the record at the start of body and returns its length, or 0 if body
// holds only part of it.
func (a *Applier) apply(body []byte, now int64) (int, error) {
	switch body[0] {
	case effectFlush:
		a.s.Flush()
		return 1, nil
	case effectDelete:
		keyLen, n := binary.Uvarint(body[1:])
		if n == 0 || n > 0 && uint64(len(body)-1-n) < keyLen {
			return 0, nil
		}
		if n < 0 || keyLen > maxKeyLen {
			return 0, errors.New("bad key length")
		}
		a.s.Delete(body[1+n:1+n+int(keyLen)], now)
		return 1 + n + int(keyLen), nil
	}
	size, err := recordLen(body)
	if err != nil || size == 0 {
		return 0, err
	}
	used, fresh, err := a.sr.apply(a.s, body[:size], now)
	if err != nil {
		return 0, err
	}
	if fresh { // already fresh here: whatever the replica held goes
		keyLen, n := binary.Uvarint(body[1:])
		a.s.Delete(body[1+n:1+n+int(keyLen)], now)
	}
	return used, nil
}

// recordLen returns the length of the state record at the start of body, 0 if body
// holds only part of it.
func recordLen(body []byte) (int, error) {
	if k := body[0]; k < 1 || k > byte(kindCount-1) {
		return 0, fmt.Errorf("unknown kind %d", k)
	}
	keyLen, n := binary.Uvarint(body[1:])
	if n == 0 {
		return 0, nil
	}
	if n < 0 || keyLen > maxKeyLen {
		return 0, errors.New("bad key length")
	}
	size := 1 + n + int(keyLen) + recordFixed - 1
	if len(body) < size {
		return 0, nil
	}
	if hasTail(algo.Kind(body[0])) {
		tail := binary.LittleEndian.Uint64(body[size-16:])
		if tail > maxChunk {
			return 0, errors.New("bad tail length")
		}
		size += int(tail)
		if len(body) < size {
			return 0, nil
		}
	}
	return size, nil
}
