package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Interned prefixes: a key that starts with a registered prefix, up to and including
// its first '=', keeps the prefix's number (2 bytes) in its record instead of the
// prefix's bytes. The policy engine's keys ("rl:DOMAIN:fixed/60s:user=alice") share
// one prefix per rule and differ only after it, so a record holds "alice" and the
// number. Why (issue 23): RSS per active descriptor value, 65 B with the prefix
// spelled out in every record against Redis's 137 B for envoyproxy/ratelimit's keys
// (make bench-rls); the prefix is most of the key.
//
// Prefixes are never taken back: a record names its prefix by number for as long as
// it lives, and a policy has few rules. Keys are whole again wherever they leave a
// record (sh.key): SCAN, snapshots, DUMP, the index's rehash.

// MaxPrefixes bounds the interned prefixes of a Store (InternPrefix).
const MaxPrefixes = 4096

// maxPrefixLen is the longest prefix interned: longer ones gain nothing a record's
// room could hold.
const maxPrefixLen = 255

var (
	// ErrPrefixes is returned by InternPrefix when MaxPrefixes are interned already.
	ErrPrefixes = errors.New("store: too many interned prefixes")
	// ErrPrefix is returned by InternPrefix for a prefix that is not a key's bytes up
	// to its first '='.
	ErrPrefix = errors.New("store: a prefix ends at its first '='")
)

// prefixSet is one version of the interned prefixes; a newer one only adds.
type prefixSet struct {
	ids  map[string]uint16
	list [][]byte // list[id]
}

// prefixes is a Store's interned prefixes, read without a lock by every shard.
type prefixes struct {
	mu  sync.Mutex // serialises InternPrefix
	cur atomic.Pointer[prefixSet]
}

// InternPrefix lets keys that start with p, which ends with the key's first '=', keep
// p as a number in their records from now on (keys stored already keep their bytes).
// Interning a prefix twice is a no-op.
func (s *Store) InternPrefix(p []byte) error {
	if len(p) < 3 || len(p) > maxPrefixLen || bytes.IndexByte(p, '=') != len(p)-1 {
		return fmt.Errorf("%w: %q", ErrPrefix, p)
	}
	t := &s.prefixes
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.cur.Load()
	if old != nil {
		if _, ok := old.ids[string(p)]; ok {
			return nil
		}
	}
	next := &prefixSet{ids: map[string]uint16{}}
	if old != nil {
		if len(old.list) >= MaxPrefixes {
			return ErrPrefixes
		}
		for k, v := range old.ids {
			next.ids[k] = v
		}
		next.list = append(next.list, old.list...)
	}
	next.ids[string(p)] = uint16(len(next.list))
	next.list = append(next.list, bytes.Clone(p))
	t.cur.Store(next)
	return nil
}

// of returns the number of key's interned prefix and the prefix's length, or ok false.
func (t *prefixes) of(key []byte) (id uint16, n int, ok bool) {
	set := t.cur.Load()
	if set == nil {
		return 0, 0, false
	}
	i := bytes.IndexByte(key, '=')
	if i < 0 {
		return 0, 0, false
	}
	id, ok = set.ids[string(key[:i+1])]
	return id, i + 1, ok
}

// prefix returns interned prefix id.
func (t *prefixes) prefix(id uint16) []byte { return t.cur.Load().list[id] }
