package store

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/rlserver/rlserver/algo"
)

// Acquire decides one RL.ACQUIRE on key (algo.Acquire) and stores the lease set: the
// key's wheel deadline is its last lease's end, so a lease never released ends by
// itself, and the key goes with its last lease. When r.ID is nil a new lease gets a
// generated id: 16 lower-case hex digits of a random number, drawn again if a lease of
// the key has it already (a caller may have given it). Random rather than counted: a
// caller who could predict the next ids could fill a key with them, so that every
// generation walks the whole set again and again, or release others' leases. The
// returned ID is the caller's own copy.
// r.ID, when given, is 1 to 128 bytes, as rlcmd.ParseAcquire ensures.
func (s *Store) Acquire(key []byte, r algo.LeaseRequest, now int64) (algo.LeaseDecision, error) {
	if len(key) > maxKeyLen {
		return algo.LeaseDecision{}, ErrKeyTooLong
	}
	if r.Limit > s.maxLogLimit {
		return algo.LeaseDecision{}, ErrLogLimit
	}
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	now = s.decideAt(sh, now)
	at, leases, err := sh.leases(key, tag, now)
	if err != nil {
		return algo.LeaseDecision{}, err
	}
	var newID []byte
	if r.ID == nil {
		newID = s.newLeaseID(sh, leases)
	}
	leases, d := algo.Acquire(leases, r, newID, now)
	sh.keepLeases(leases)
	if d.Acquired {
		if err := sh.writeLeases(at, leases, now); err != nil {
			return algo.LeaseDecision{}, err
		}
		s.emit(sh, key, tag, now)
		d.ID = bytes.Clone(d.ID)
	}
	sh.count(algo.KindLease, d.Acquired)
	return d, nil
}

// Release removes the live lease with id from key's set and reports whether there was
// one; the key goes with its last lease.
func (s *Store) Release(key, id []byte, now int64) (bool, error) {
	return s.change(key, now, func(leases []algo.Lease, now int64) ([]algo.Lease, bool) {
		return algo.Release(leases, id, now)
	})
}

// Renew moves the deadline of the live lease with id in key's set to now + duration
// (µs) and reports whether there was one; an ended lease is not revived.
func (s *Store) Renew(key, id []byte, duration, now int64) (bool, error) {
	return s.change(key, now, func(leases []algo.Lease, now int64) ([]algo.Lease, bool) {
		return algo.Renew(leases, id, duration, now)
	})
}

// change runs Release's or Renew's math on key's lease set and stores the result if it
// changed; an absent key has no lease to change.
func (s *Store) change(key []byte, now int64, f func([]algo.Lease, int64) ([]algo.Lease, bool)) (bool, error) {
	if len(key) > maxKeyLen {
		return false, ErrKeyTooLong
	}
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	now = s.decideAt(sh, now)
	at, leases, err := sh.leases(key, tag, now)
	if err != nil || at.pos < 0 {
		return false, err
	}
	leases, changed := f(leases, now)
	sh.keepLeases(leases)
	if changed {
		// An existing key only shrinks or keeps its size class: no room to make.
		if err := sh.writeLeases(at, leases, now); err != nil {
			return false, err
		}
		s.emit(sh, key, tag, now)
		sh.changed++
	}
	return changed, nil
}

// leases finds key and decodes its lease set into the shard's scratch: where the key
// is (at.pos -1 if absent) and leases, or ErrWrongType.
func (sh *shard) leases(key []byte, tag uint32, now int64) (keyAt, []algo.Lease, error) {
	at := keyAt{key: key, tag: tag}
	at.pos, at.slot = sh.get(key, tag, now)
	if at.pos < 0 {
		return at, sh.leaseScratch[:0], nil
	}
	e := sh.at(at.slot)
	if e.kind() != algo.KindLease {
		return keyAt{}, nil, ErrWrongType
	}
	var leases []algo.Lease
	base, _ := e.state()
	leases, sh.leaseIDs = decodeLeases(sh.tail(e), int64(base), sh.leaseScratch[:0], sh.leaseIDs)
	return at, leases, nil
}

// keepLeases keeps leases' array as the scratch if it grew.
func (sh *shard) keepLeases(leases []algo.Lease) {
	if cap(leases) > cap(sh.leaseScratch) {
		sh.leaseScratch = leases[:0]
	}
}

// writeLeases stores the lease set of the key at at, created if at.pos < 0 (after
// making room), or removes the key if no lease is left.
func (sh *shard) writeLeases(at keyAt, leases []algo.Lease, now int64) error {
	if len(leases) == 0 {
		sh.removeFresh(at.pos, at.slot)
		return nil
	}
	base := leases[0].Deadline
	size := leaseSize(leases, base)
	if at.pos < 0 {
		if err := sh.makeRoom(sh.placementFor(at.key, algo.KindLease, 0, 0, 0, size), now); err != nil {
			return err
		}
	}
	encodeLeases(sh.placeTail(at, tail{kind: algo.KindLease, base: base, size: size, freshAt: leases[len(leases)-1].Deadline}), leases, base)
	return nil
}

// newLeaseID returns the next generated id, in the shard's buffer, skipping any that a
// lease of the set already has.
func (s *Store) newLeaseID(sh *shard, leases []algo.Lease) []byte {
	for {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], s.leaseID())
		id := sh.newID[:hex.Encode(sh.newID[:], n[:])]
		if !slices.ContainsFunc(leases, func(l algo.Lease) bool { return bytes.Equal(l.ID, id) }) {
			return id
		}
	}
}
