package store

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// One key's state outside the store, for DUMP and RESTORE: the key's snapshot record
// (snapshot.go) without the key's bytes (its length 0), then the format's version
// (uint16) and the xxh3 of every byte before it (uint64), little-endian: the layout
// of Redis's DUMP payload, which ends with its RDB version and a CRC64. The version's
// high byte is 'R' (0x52, far above any RDB version, so that Redis refuses a payload of
// ours), its low byte the snapshot format the record follows. A Redis payload fails
// the checksum here, as ours fails Redis's version check: each says its payload's
// version or checksum is wrong.
const (
	dumpMark   = 0x52 << 8
	dumpFooter = 2 + 8
)

// Errors of Restore and SetGCRA.
var (
	// ErrDumpPayload is a payload whose version or checksum is wrong: not one Dump wrote.
	ErrDumpPayload = errors.New("store: DUMP payload version or checksum are wrong")
	// ErrDumpData is a payload whose checksum holds but whose record is malformed.
	ErrDumpData = errors.New("store: bad data format")
	// ErrBusyKey is a Restore without replace of a key that holds a state.
	ErrBusyKey = errors.New("store: target key name already exists")
)

// Dump returns key's state as a payload Restore takes, and false if key holds none.
// Its times are absolute, as the store's are: restored later, the state has aged.
func (s *Store) Dump(key []byte, now int64) ([]byte, bool) {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return nil, false
	}
	buf := sh.appendRecordAs(nil, sh.at(slot), nil)
	buf = binary.LittleEndian.AppendUint16(buf, dumpMark|snapshotVersion)
	return binary.LittleEndian.AppendUint64(buf, xxh3.Hash(buf)), true
}

// Restore stores the state of payload (from Dump) at key. deadline is the absolute µs
// the key goes at, or 0 for the state's own; a deadline at or before now stores
// nothing (and with replace still removes what key held), as Redis's RESTORE of a TTL
// already past. Errors, in RESTORE's order, change nothing: ErrBusyKey if key holds
// a state and replace is false, ErrDumpPayload, ErrDumpData, then the errors of a new
// key (ErrOOM, ErrShardFull, ErrKeyTooLong).
func (s *Store) Restore(key, payload []byte, deadline int64, replace bool, now int64) error {
	if len(key) > maxKeyLen {
		return ErrKeyTooLong
	}
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	if pos, _ := sh.get(key, tag, now); pos >= 0 && !replace {
		return ErrBusyKey
	}
	n := len(payload) - dumpFooter
	if n < 1 {
		return ErrDumpPayload
	}
	version := binary.LittleEndian.Uint16(payload[n:])
	if version&^0xff != dumpMark || version&0xff < 3 || version&0xff > snapshotVersion ||
		binary.LittleEndian.Uint64(payload[n+2:]) != xxh3.Hash(payload[:n+2]) {
		return ErrDumpPayload
	}
	sr := snapshotReader{version: uint32(version & 0xff)}
	rec, used, err := sr.decode(payload[:n])
	if err != nil || used != n || len(rec.key) != 0 {
		return ErrDumpData
	}
	rec.key = key
	if deadline != 0 {
		rec.deadline = deadline
	}
	return s.set(sh, tag, rec, now)
}

// SetGCRA is Redis's GCRASETVALUE: key holds Redis's GCRA state tat (µs), expiring
// as RedisGCRA's writes do, at the ms after tat (a tat already past removes the key).
// A key of another kind is ErrWrongType, and keeps its state.
func (s *Store) SetGCRA(key []byte, tat int64, now int64) error {
	if len(key) > maxKeyLen {
		return ErrKeyTooLong
	}
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	if pos, slot := sh.get(key, tag, now); pos >= 0 && sh.at(slot).kind() != algo.KindRedisGCRA {
		return ErrWrongType
	}
	return s.set(sh, tag, keyRecord{kind: algo.KindRedisGCRA, key: key, a: uint64(tat), deadline: algo.GCRAExpireAt(tat)}, now)
}

// set makes rec's key hold rec's state on the locked shard sh, whatever it held, or
// removes the key if rec is fresh at now; the effect goes to the backlog. A new key's
// room is made first: if there is none, the key keeps what it held.
func (s *Store) set(sh *shard, tag uint32, rec keyRecord, now int64) error {
	fresh := rec.deadline <= now
	var p placement
	if !fresh {
		p = sh.placementFor(rec.key, rec.kind, rec.a, rec.b, rec.deadline, len(rec.tail))
		if err := sh.makeRoom(p, now); err != nil {
			return err
		}
	}
	pos, slot := sh.get(rec.key, tag, now)
	if pos >= 0 {
		sh.remove(pos, slot)
	}
	if !fresh {
		sh.place(rec, tag, p)
	}
	if pos >= 0 || !fresh {
		s.emit(sh, rec.key, tag, now)
	}
	return nil
}

// Digest returns a SHA-1 of key's state, its kind and words and its log or lease set,
// not its deadline (Redis's DEBUG DIGEST-VALUE digests a value, not its TTL), and
// false if key holds none. Two keys with equal digests hold the same state.
func (s *Store) Digest(key []byte, now int64) ([sha1.Size]byte, bool) {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return [sha1.Size]byte{}, false
	}
	buf := sh.appendRecordAs(nil, sh.at(slot), nil)
	clear(buf[1+1+16 : 1+1+24]) // kind, key length 0, a, b, then the deadline
	return sha1.Sum(buf), true
}
