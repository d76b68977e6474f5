package store

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Journal collects the effect of every write on the store, in the order the store made
// them, for a log on disk (package aof) to take in batches. The records are those of
// the replication stream (replica.go): a key's resulting state, a deletion, a flush;
// each holds absolute times, so that replaying them gives the same states whatever the
// time of the replay. Every byte appended counts in End, so a writer can wait until
// the bytes up to the End it read after its write are on disk. It is safe for
// concurrent use.
type Journal struct {
	mu   sync.Mutex
	buf  []byte        // records appended since the last Take
	end  atomic.Int64  // bytes ever appended; moved under mu, read without it
	rec  []byte        // one record being encoded
	wake chan struct{} // has a value after an append, for the log's writer
}

// NewJournal returns an empty Journal whose End is 0.
func NewJournal() *Journal { return &Journal{wake: make(chan struct{}, 1)} }

// End returns the count of bytes ever appended: a write's record lies before the End
// read after the write returned. It takes no lock: a connection reads it twice a
// write command under appendfsync always (aof.Log.Mark), and the lock was 3% of the
// server's CPU at redis-benchmark RL.TOKEN -P 16.
func (j *Journal) End() int64 { return j.end.Load() }

// Wake returns a channel that receives after appends, at least once after the last.
func (j *Journal) Wake() <-chan struct{} { return j.wake }

// Take returns the bytes appended since the last Take and the End after them, and
// keeps spare (whose contents it drops) to append into next, so that a writer that
// gives back each batch's buffer allocates nothing in the steady state.
func (j *Journal) Take(spare []byte) ([]byte, int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	b := j.buf
	j.buf = spare[:0]
	return b, j.end.Load()
}

// Append adds records as they are: a replica's Applier hands it the bytes it applied.
func (j *Journal) Append(p []byte) {
	j.mu.Lock()
	j.append(p)
	j.mu.Unlock()
}

// append adds rec; j.mu is held.
func (j *Journal) append(rec []byte) {
	j.buf = append(j.buf, rec...)
	j.end.Add(int64(len(rec)))
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// SetJournal makes the store append every write's effect to j from now on; nil stops it.
func (s *Store) SetJournal(j *Journal) { s.journal.Store(j) }

// effect encodes key's resulting state on the locked shard sh into dst: its state
// record, or a deletion record if it holds none.
func (sh *shard) effect(dst []byte, key []byte, tag uint32, now int64) []byte {
	if pos, slot := sh.get(key, tag, now); pos >= 0 {
		return sh.appendRecord(dst[:0], sh.at(slot))
	}
	dst = append(dst[:0], effectDelete)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// EffectVersion is the snapshot format version of the records a Journal collects: a
// log on disk keeps it, to give NewApplier when it is replayed.
const EffectVersion = snapshotVersion
