package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// TestDumpRestore: a payload restores the same state, at its own deadline or a given
// one; every bad payload and a busy key are errors that change nothing.
func TestDumpRestore(t *testing.T) {
	s := newStore(t, Config{})
	r := algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: 60 * sec, Cost: 3}
	if _, err := s.Do([]byte("k"), r, t0); err != nil {
		t.Fatal(err)
	}
	p, ok := s.Dump([]byte("k"), t0)
	if !ok {
		t.Fatal("Dump: no state")
	}
	if _, ok := s.Dump([]byte("none"), t0); ok {
		t.Error("Dump of an absent key")
	}
	if err := s.Restore([]byte("c"), p, 0, false, t0); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Digest([]byte("k"), t0)
	b, _ := s.Digest([]byte("c"), t0)
	ttlK, _ := s.TTL([]byte("k"), t0)
	ttlC, _ := s.TTL([]byte("c"), t0)
	if a != b || ttlK != ttlC {
		t.Errorf("restored copy: digest %x vs %x, ttl %d vs %d", a, b, ttlK, ttlC)
	}
	bad := func(i int) []byte { q := bytes.Clone(p); q[i] ^= 1; return q }
	for name, c := range map[string]struct {
		payload []byte
		want    error
	}{
		"busy":       {p, ErrBusyKey},
		"short":      {p[:5], ErrDumpPayload},
		"checksum":   {bad(len(p) - 1), ErrDumpPayload},
		"version":    {bad(len(p) - 10), ErrDumpPayload},
		"body":       {bad(3), ErrDumpPayload},
		"empty":      {nil, ErrDumpPayload},
		"truncated":  {rewrap(p[:len(p)-dumpFooter-1]), ErrDumpData},
		"with a key": {rewrap(append([]byte{byte(algo.KindGCRA), 1, 'x'}, p[2:len(p)-dumpFooter]...)), ErrDumpData},
	} {
		if err := s.Restore([]byte("c"), c.payload, t0+sec, name != "busy", t0); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if d, _ := s.Digest([]byte("c"), t0); d != a {
		t.Error("a failed Restore changed the key")
	}
	// A deadline of its own, and one already past (which removes with replace).
	if err := s.Restore([]byte("c"), p, t0+500*sec, true, t0); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := s.TTL([]byte("c"), t0); ttl != 500*sec {
		t.Errorf("TTL after Restore at t0+500 s: %d", ttl)
	}
	if err := s.Restore([]byte("c"), p, t0, true, t0); err != nil || s.Exists([]byte("c"), t0) {
		t.Errorf("Restore already past: %v, exists %v", err, s.Exists([]byte("c"), t0))
	}
}

// rewrap gives a record a valid footer.
func rewrap(rec []byte) []byte {
	buf := binary.LittleEndian.AppendUint16(bytes.Clone(rec), dumpMark|snapshotVersion)
	return binary.LittleEndian.AppendUint64(buf, xxh3.Hash(buf))
}

// TestSetGCRA: GCRASETVALUE's state, its expiry at the ms after the tat, WRONGTYPE.
func TestSetGCRA(t *testing.T) {
	s := newStore(t, Config{})
	ms0 := t0 - t0%1000
	if err := s.SetGCRA([]byte("g"), ms0+1500, t0); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Type([]byte("g"), t0); k != algo.KindRedisGCRA {
		t.Errorf("Type = %v", k)
	}
	if ttl, _ := s.TTL([]byte("g"), t0); ttl != ms0+2000-t0 {
		t.Errorf("TTL = %d, want to the ms after the tat", ttl)
	}
	if err := s.SetGCRA([]byte("g"), 5, t0); err != nil || s.Exists([]byte("g"), t0) {
		t.Errorf("a tat long past: %v, exists %v", err, s.Exists([]byte("g"), t0))
	}
	s.Do([]byte("f"), algo.Request{Kind: algo.KindFixed, Limit: 1, Window: sec, Cost: 1}, t0)
	if err := s.SetGCRA([]byte("f"), ms0+1500, t0); !errors.Is(err, ErrWrongType) {
		t.Errorf("SetGCRA on RL.FIXED's key: %v", err)
	}
}

// TestRedisGCRASnapshot: a GCRA key, its deadline its own (the ms after its tat),
// goes through a snapshot as it is.
func TestRedisGCRASnapshot(t *testing.T) {
	s := newStore(t, Config{})
	r, err := algo.NativeGCRA(5, 10000, 1, 1) // T = 100 µs
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do([]byte("g"), r, t0); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.WriteSnapshot(&buf, t0); err != nil {
		t.Fatal(err)
	}
	loaded := newStore(t, Config{})
	if info, err := loaded.ReadSnapshot(&buf, t0); err != nil || info.Keys != 1 {
		t.Fatalf("ReadSnapshot: %+v, %v", info, err)
	}
	a, _ := s.Digest([]byte("g"), t0)
	b, _ := loaded.Digest([]byte("g"), t0)
	ta, _ := s.TTL([]byte("g"), t0)
	tb, _ := loaded.TTL([]byte("g"), t0)
	if k, _ := loaded.Type([]byte("g"), t0); k != algo.KindRedisGCRA || a != b || ta != tb || (t0+ta)%1000 != 0 {
		t.Errorf("loaded: kind %v, digests %x %x, ttl %d %d", k, a, b, ta, tb)
	}
}
