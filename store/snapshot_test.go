package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// snapshotOf writes s's snapshot at now.
func snapshotOf(t testing.TB, s *Store, now int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	info, err := s.WriteSnapshot(&buf, now)
	if err != nil {
		t.Fatal(err)
	}
	if info.Bytes != int64(buf.Len()) {
		t.Fatalf("WriteSnapshot reports %d bytes, wrote %d", info.Bytes, buf.Len())
	}
	return buf.Bytes()
}

// filled returns a store with keys of every kind, each called a few times at t0, so
// that every state is partly used: RL.LOG keys hold several entries, one with a cost.
func filled(t testing.TB, shards int) (*Store, map[string]algo.Kind) {
	s := newStore(t, Config{Shards: shards})
	keys := map[string]algo.Kind{}
	for i, kind := range kinds {
		for j := range 20 {
			key := fmt.Sprintf("%s:%d", kind, j)
			keys[key] = kind
			for c := range 3 + j%4 {
				r := request(kind, 10, 60*sec)
				if c == 1 {
					r.Cost = 2
				}
				if _, err := s.Do([]byte(key), r, t0+int64(i*j+c)*ms); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return s, keys
}

// TestSnapshotRoundTrip: a loaded store, with any shard count, answers every key as the
// saved one does: same kind, same deadline, and the same decisions at later times.
func TestSnapshotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name           string
		from, to       int
		loadAt, callAt int64
	}{
		{"same shards, at once", 64, 64, t0 + sec, t0 + sec},
		{"fewer shards", 64, 1, t0 + sec, t0 + 30*sec},
		{"more shards, later", 4, 256, t0 + 10*sec, t0 + 59*sec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved, keys := filled(t, tc.from)
			data := snapshotOf(t, saved, t0+sec)
			loaded := newStore(t, Config{Shards: tc.to})
			info, err := loaded.ReadSnapshot(bytes.NewReader(data), tc.loadAt)
			if err != nil {
				t.Fatal(err)
			}
			if info.Keys != len(keys) || info.Fresh != 0 || info.SavedAt != t0+sec || info.Bytes != int64(len(data)) {
				t.Errorf("info = %+v, want %d keys saved at %d, %d bytes", info, len(keys), t0+sec, len(data))
			}
			// Time only goes forward, from key to key too: a shard's wheel removes the
			// keys due at the latest time it saw, and the shards differ.
			at := tc.callAt
			for _, key := range slices.Sorted(maps.Keys(keys)) {
				k, kind := []byte(key), keys[key]
				wantKind, wantOK := saved.Type(k, at)
				if got, ok := loaded.Type(k, at); ok != wantOK || got != wantKind {
					t.Errorf("%s: type %v %v, want %v %v", key, got, ok, wantKind, wantOK)
				}
				wantTTL, _ := saved.TTL(k, at)
				if ttl, _ := loaded.TTL(k, at); ttl != wantTTL {
					t.Errorf("%s: TTL %d, want %d", key, ttl, wantTTL)
				}
				for c := range 12 { // past the limit: the same admissions, then the same refusals
					r := request(kind, 10, 60*sec)
					at += ms
					want, _ := saved.Do(k, r, at)
					got, err := loaded.Do(k, r, at)
					if err != nil || got != want {
						t.Fatalf("%s call %d: %+v %v, want %+v", key, c, got, err, want)
					}
				}
			}
		})
	}
}

// TestSnapshotSkipsFreshKeys: keys whose state became fresh while the server was down
// are not loaded, and the others still are, with their time left reduced by the gap.
func TestSnapshotSkipsFreshKeys(t *testing.T) {
	s := newStore(t, Config{})
	for _, c := range []struct {
		key    string
		window int64
	}{{"short", sec}, {"long", 60 * sec}, {"log-short", sec}, {"log-long", 60 * sec}} {
		kind := algo.KindGCRA
		if strings.HasPrefix(c.key, "log") {
			kind = algo.KindLog
		}
		if _, err := s.Do([]byte(c.key), request(kind, 1, c.window), t0); err != nil {
			t.Fatal(err)
		}
	}
	data := snapshotOf(t, s, t0)
	loaded := newStore(t, Config{})
	info, err := loaded.ReadSnapshot(bytes.NewReader(data), t0+5*sec)
	if err != nil {
		t.Fatal(err)
	}
	if info.Keys != 2 || info.Fresh != 2 {
		t.Errorf("info = %+v, want 2 keys loaded and 2 fresh", info)
	}
	for key, wantTTL := range map[string]int64{"short": -1, "log-short": -1, "long": 55 * sec, "log-long": 55 * sec} {
		ttl, ok := loaded.TTL([]byte(key), t0+5*sec)
		if !ok {
			ttl = -1
		}
		if ttl != wantTTL {
			t.Errorf("%s: TTL %d, want %d", key, ttl, wantTTL)
		}
	}
	// Limited before the restart, still limited after it: no fresh burst.
	if d, _ := loaded.Do([]byte("long"), request(algo.KindGCRA, 1, 60*sec), t0+5*sec); d.Allowed {
		t.Error("long: allowed after loading, want limited")
	}
}

// TestSnapshotSkipsFreshAtWrite: keys fresh at the time of writing are left out.
func TestSnapshotSkipsFreshAtWrite(t *testing.T) {
	s := newStore(t, Config{})
	s.Do([]byte("a"), request(algo.KindFixed, 5, sec), t0)
	s.Do([]byte("b"), request(algo.KindFixed, 5, 60*sec), t0)
	var buf bytes.Buffer
	info, err := s.WriteSnapshot(&buf, t0+2*sec)
	if err != nil || info.Keys != 1 {
		t.Fatalf("WriteSnapshot = %+v, %v; want 1 key", info, err)
	}
}

func TestSnapshotLoadsOnlyIntoEmptyStore(t *testing.T) {
	s, _ := filled(t, 8)
	data := snapshotOf(t, s, t0+sec)
	if _, err := s.ReadSnapshot(bytes.NewReader(data), t0+sec); !errors.Is(err, ErrSnapshotNotEmpty) {
		t.Errorf("ReadSnapshot into a full store: %v, want ErrSnapshotNotEmpty", err)
	}
}

func TestSnapshotEmptyStore(t *testing.T) {
	data := snapshotOf(t, newStore(t, Config{}), t0)
	info, err := newStore(t, Config{}).ReadSnapshot(bytes.NewReader(data), t0)
	if err != nil || info.Keys != 0 {
		t.Errorf("empty snapshot: %+v, %v", info, err)
	}
}

// rawSnapshot builds a snapshot of hand-made records with correct checksums, so that
// the record checks are reached.
func rawSnapshot(records ...[]byte) []byte { return rawSnapshotV(snapshotVersion, records...) }

// rawSnapshotV is rawSnapshot in format version v.
func rawSnapshotV(v uint32, records ...[]byte) []byte {
	var f bytes.Buffer
	f.WriteString(snapshotMagic)
	f.Write(binary.LittleEndian.AppendUint32(nil, v))
	f.Write(binary.LittleEndian.AppendUint64(nil, uint64(t0)))
	body := bytes.Join(records, nil)
	if len(body) > 0 {
		f.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(body))))
		f.Write(binary.LittleEndian.AppendUint64(nil, xxh3.Hash(body)))
		f.Write(body)
	}
	f.Write(make([]byte, 4))
	f.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(records))))
	f.Write(binary.LittleEndian.AppendUint64(nil, xxh3.Hash(f.Bytes())))
	return f.Bytes()
}

// record encodes one record; log is appended after the words as is.
func record(kind byte, key string, a, b uint64, deadline int64, log ...byte) []byte {
	r := append([]byte{kind}, byte(len(key)))
	r = append(r, key...)
	r = binary.LittleEndian.AppendUint64(r, a)
	r = binary.LittleEndian.AppendUint64(r, b)
	r = binary.LittleEndian.AppendUint64(r, uint64(deadline))
	return append(r, log...)
}

// TestSnapshotErrors: every kind of damage gives its own plain message, never a panic,
// and leaves the store empty.
func TestSnapshotErrors(t *testing.T) {
	good, _ := filled(t, 4)
	valid := snapshotOf(t, good, t0+sec)
	later := t0 + 2*sec
	flip := func(i int) []byte {
		b := bytes.Clone(valid)
		b[i] ^= 0x40
		return b
	}
	versionFour := bytes.Clone(valid)
	binary.LittleEndian.PutUint32(versionFour[8:], 4)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "snapshot is corrupt: truncated at byte 0, in the magic"},
		{"not a snapshot", []byte("REDIS0011\xfa\x09redis-ver"), `snapshot is corrupt: bad magic "REDIS001", not an rlserver snapshot`},
		{"newer version", versionFour, "unsupported snapshot version 4 (this rlserver reads versions 1 to 3)"},
		{"cut in the header", valid[:15], "snapshot is corrupt: truncated at byte 15, in the header"},
		{"cut in a frame", valid[:100], "snapshot is corrupt: truncated at byte 100, in the frame at byte 20"},
		{"cut before the trailer", valid[:len(valid)-20], fmt.Sprintf("snapshot is corrupt: truncated at byte %d, in the frame header", len(valid)-20)},
		{"cut in the trailer", valid[:len(valid)-3], fmt.Sprintf("snapshot is corrupt: truncated at byte %d, in the trailer", len(valid)-3)},
		{"flipped in a frame", flip(40), "snapshot is corrupt: checksum mismatch in the frame at byte 20"},
		{"flipped saved-at", flip(13), "snapshot is corrupt: checksum mismatch over the file"},
		{"flipped checksum", flip(len(valid) - 1), "snapshot is corrupt: checksum mismatch over the file"},
		{"flipped count", flip(len(valid) - 16), "snapshot is corrupt: the trailer counts"},
		{"trailing data", append(bytes.Clone(valid), 0), fmt.Sprintf("snapshot is corrupt: unexpected data after the trailer at byte %d", len(valid))},
		{"unknown kind", rawSnapshot(record(10, "k", 0, 0, later)), "snapshot is corrupt: unknown kind 10, in the record at byte 32"},
		{"record past its frame", rawSnapshot(record(1, "k", 0, 0, later)[:20]), "snapshot is corrupt: record runs past its frame, in the record at byte 32"},
		{"empty log", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 0, later)), "snapshot is corrupt: bad log length"},
		{"garbled log", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 2, later, 0xff, 0xff)), "snapshot is corrupt: bad log, in the record at byte 32"},
		{"log cut in an entry", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 2, later, 24, 0)), "snapshot is corrupt: bad log"},
		{"log padded past its last byte", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 3, later, 0, 0x7f, 0xff)), "snapshot is corrupt: bad log"},
		{"log padded with a 0", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 2, later, 2, 0x02)), "snapshot is corrupt: bad log"},
		{"escape that need not be", rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 4, later, 0, 0xff, 0xff, 0x03)), "snapshot is corrupt: bad log"},
		{"log time past the domain", rawSnapshot(record(byte(algo.KindLog), "k", 1<<62-1, 3, later, 0, 0x80, 0x7f)), "snapshot is corrupt: bad log"},
		{"garbled version 2 log", rawSnapshotV(2, record(byte(algo.KindLog), "k", uint64(t0), 2, later, 0xff, 0xff)), "snapshot is corrupt: bad log, in the record at byte 32"},
		{"version 2 log base not its first entry", rawSnapshotV(2, record(byte(algo.KindLog), "k", uint64(t0), 1, later, 2)), "snapshot is corrupt: bad log"},
		{"empty lease set", rawSnapshot(record(byte(algo.KindLease), "k", uint64(later), 0, later)), "snapshot is corrupt: bad lease set length"},
		{"lease set ends before its key", rawSnapshot(record(byte(algo.KindLease), "k", uint64(later), 3, later+1, 0, 2, 'x')), "snapshot is corrupt: bad lease set, in the record at byte 32"},
		{"lease id past the set", rawSnapshot(record(byte(algo.KindLease), "k", uint64(later), 3, later, 0, 4, 'x')), "snapshot is corrupt: bad lease set"},
		{"hex id not packed", rawSnapshot(record(byte(algo.KindLease), "k", uint64(later), 18, later, append([]byte{0, 32}, "0123456789abcdef"...)...)), "snapshot is corrupt: bad lease set"},
		{"duplicate key", rawSnapshot(record(1, "k", 0, 1, later), record(1, "k", 0, 1, later)), `snapshot is corrupt: duplicate key "k", in the record at byte 59`},
	}
	for _, tt := range tests {
		s := newStore(t, Config{})
		_, err := s.ReadSnapshot(bytes.NewReader(tt.data), t0+sec)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
		if tt.name != "newer version" && !errors.Is(err, ErrSnapshotCorrupt) {
			t.Errorf("%s: %v does not wrap ErrSnapshotCorrupt", tt.name, err)
		}
		if n := s.Len(t0 + sec); n != 0 {
			t.Errorf("%s: %d keys left after a failed load", tt.name, n)
		}
	}
}

// TestSnapshotEveryDamageFails: every truncation and every flipped byte of a snapshot
// is refused, and the store stays empty.
func TestSnapshotEveryDamageFails(t *testing.T) {
	good, _ := filled(t, 4)
	valid := snapshotOf(t, good, t0+sec)
	s := newStore(t, Config{Shards: 4})
	check := func(what string, data []byte) {
		if _, err := s.ReadSnapshot(bytes.NewReader(data), t0+sec); err == nil {
			t.Fatalf("%s: loaded", what)
		}
		if n := s.Len(t0 + sec); n != 0 {
			t.Fatalf("%s: %d keys left", what, n)
		}
	}
	for n := range len(valid) {
		check(fmt.Sprintf("cut at %d", n), valid[:n])
	}
	for i := range valid {
		b := bytes.Clone(valid)
		b[i] ^= 1
		check(fmt.Sprintf("bit flipped at %d", i), b)
	}
}

// TestSnapshotFrames: a shard bigger than a frame is cut into several, and loads.
func TestSnapshotFrames(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	key := bytes.Repeat([]byte("k"), 1000)
	for i := range 3000 { // ~3 MB in one shard
		binary.LittleEndian.PutUint32(key, uint32(i))
		s.Do(key, request(algo.KindToken, 10, 60*sec), t0)
	}
	data := snapshotOf(t, s, t0)
	frames := 0
	for off := headerBytes; ; frames++ {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			break
		}
		if n > frameBytes+len(key)+64 {
			t.Errorf("frame %d holds %d bytes", frames, n)
		}
		off += frameHeadBytes + n
	}
	if frames < 3 {
		t.Errorf("%d frames, want at least 3", frames)
	}
	info, err := newStore(t, Config{}).ReadSnapshot(bytes.NewReader(data), t0)
	if err != nil || info.Keys != 3000 {
		t.Errorf("ReadSnapshot = %+v, %v", info, err)
	}
}

// TestSnapshotWhileServing: writing a snapshot while requests go on is race-free and
// yields a loadable file (run with -race).
func TestSnapshotWhileServing(t *testing.T) {
	s := newStore(t, Config{Shards: 8})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				kind := kinds[i%len(kinds)]
				s.Do(fmt.Appendf(nil, "%d:%d:%s", g, i%500, kind), request(kind, 5, sec), t0+int64(i))
			}
		}()
	}
	for range 20 {
		data := snapshotOf(t, s, t0)
		if _, err := newStore(t, Config{}).ReadSnapshot(bytes.NewReader(data), t0); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// FuzzReadSnapshot: no input panics, and a load either succeeds whole or leaves the
// store empty. The seeds (run by go test) are a valid snapshot and damaged ones.
func FuzzReadSnapshot(f *testing.F) {
	good, _ := filled(f, 2)
	valid := snapshotOf(f, good, t0+sec)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(rawSnapshotV(2, record(byte(algo.KindLog), "k", uint64(t0), 3, t0+2*sec, 0, 3, 4)))
	f.Add(rawSnapshot(record(byte(algo.KindLog), "k", uint64(t0), 3, t0+2*sec, 0x40, 0x6d, 0x7f)))
	f.Add(rawSnapshot(record(1, "k", 0, 0, t0+2*sec)))
	leases := newStore(f, Config{Shards: 2})
	for i, id := range []string{"", "own id", "0123456789abcdef"} {
		r := algo.LeaseRequest{Limit: 3, Duration: int64(2+i) * sec}
		if id != "" {
			r.ID = []byte(id)
		}
		leases.Acquire([]byte("pool"), r, t0+int64(i))
	}
	f.Add(snapshotOf(f, leases, t0+sec))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Mutations rarely keep a 64-bit checksum right: checked as is, then with the
		// checksums fixed up, so that the record checks behind them are fuzzed too.
		checkLoad(t, data)
		checkLoad(t, resum(data))
	})
}

// checkLoad loads data and checks that a load either succeeds whole or leaves the
// store empty, and that what loaded can be used and saved again.
func checkLoad(t *testing.T, data []byte) {
	s := newStore(t, Config{Shards: 2})
	info, err := s.ReadSnapshot(bytes.NewReader(data), t0+sec)
	n := s.Len(t0 + sec)
	if err != nil && n != 0 {
		t.Fatalf("failed load (%v) left %d keys", err, n)
	}
	if err == nil && n != info.Keys {
		t.Fatalf("loaded %d keys, store holds %d", info.Keys, n)
	}
	if err == nil { // what loaded can be used, and saved again
		for _, kind := range kinds {
			_, keys := s.Scan(0, 1<<20, nil, kind, t0+sec)
			for _, k := range keys {
				if _, err := s.Do(k, request(kind, 10, sec), t0+sec); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, keys := s.Scan(0, 1<<20, nil, algo.KindLease, t0+sec)
		for _, k := range keys {
			d, err := s.Acquire(k, algo.LeaseRequest{Limit: 100, Duration: sec}, t0+sec)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Release(k, d.ID, t0+sec); d.Acquired && (!ok || err != nil) {
				t.Fatalf("release after loading: %v, %v", ok, err)
			}
		}
		snapshotOf(t, s, t0+sec)
	}
}

// resum returns a copy of data with every checksum a snapshot reader checks made
// right, as far as the frame lengths allow.
func resum(data []byte) []byte {
	data = bytes.Clone(data)
	off := headerBytes
	for off+4 <= len(data) {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			if end := off + 4 + 8; end+8 <= len(data) {
				binary.LittleEndian.PutUint64(data[end:], xxh3.Hash(data[:end]))
			}
			break
		}
		if off+frameHeadBytes+n > len(data) {
			break
		}
		binary.LittleEndian.PutUint64(data[off+4:], xxh3.Hash(data[off+frameHeadBytes:off+frameHeadBytes+n]))
		off += frameHeadBytes + n
	}
	return data
}

// TestSnapshotVersion1 loads testdata/snapshot-v1.rlsnap, written by the rlserver whose
// GCRA, LEAKY and CL.THROTTLE kept a float64 tat, at 2025-12-01 00:00:00 UTC: each tat
// loads rounded up to the next µs, the other kinds as they were.
func TestSnapshotVersion1(t *testing.T) {
	data, err := os.ReadFile("testdata/snapshot-v1.rlsnap")
	if err != nil {
		t.Fatal(err)
	}
	const saved = 1_764_547_200_000_000
	s := newStore(t, Config{})
	info, err := s.ReadSnapshot(bytes.NewReader(data), saved)
	if err != nil || info.Keys != 6 || info.SavedAt != saved {
		t.Fatalf("ReadSnapshot = %+v, %v; want 6 keys saved at %d", info, err, saved)
	}
	for _, c := range []struct {
		key  string
		a, b uint64
	}{
		// The float tats were now + 3 × 166,666.67, + 2 × 142,857.14 (BURST 3 of 7/s),
		// + 2 × 333,333.33 and + 142,857.14.
		{"gcra:6per1000", saved + 500_001, 0},           // 0x43191362a44d0481: ...500000.25
		{"gcra:7per1000burst3", saved + 285_715, 0},     // 0x43191362a43ff04a: ...285714.5
		{"leaky:3per1000q2", saved + 666_667, 0},        // 0x43191362a45730aa: ...666666.5
		{"throttle:b1r7p1", saved + 142_858, 0},         // 0x43191362a4373825: ...142857.25
		{"token:10per1000", math.Float64bits(6), saved}, // unchanged: 6 tokens left
		{"fixed:5per60000", uint64(saved / 60_000_000), 2},
	} {
		sh, tag := s.locate([]byte(c.key), saved)
		_, slot := sh.get([]byte(c.key), tag, saved)
		var a, b uint64
		if slot != 0 {
			a, b = sh.at(slot).state()
		}
		sh.mu.Unlock()
		if slot == 0 || a != c.a || b != c.b {
			t.Errorf("%s: slot %d, words %d, %d; want %d, %d", c.key, slot, a, b, c.a, c.b)
		}
	}
	// The integer tat decides from then on: 3 of 6 used, so exactly 3 more pass.
	r := algo.Request{Kind: algo.KindGCRA, Limit: 6, Window: sec, Cost: 1}
	for i := range 4 {
		d, err := s.Do([]byte("gcra:6per1000"), r, saved)
		if err != nil || d.Allowed != (i < 3) {
			t.Fatalf("call %d after loading: %+v, %v", i+1, d, err)
		}
	}
}

// TestSnapshotVersion1BadTat: a version 1 tat that is no time (NaN, negative) is a
// corrupt record.
func TestSnapshotVersion1BadTat(t *testing.T) {
	for _, bits := range []uint64{math.Float64bits(math.NaN()), math.Float64bits(-1), math.Float64bits(math.Inf(1))} {
		data := rawSnapshot(record(byte(algo.KindGCRA), "k", bits, 0, t0+sec))
		binary.LittleEndian.PutUint32(data[8:], 1)
		// The file checksum covers the version: recompute it.
		n := len(data) - 8
		binary.LittleEndian.PutUint64(data[n:], xxh3.Hash(data[:n]))
		_, err := newStore(t, Config{}).ReadSnapshot(bytes.NewReader(data), t0)
		if err == nil || !strings.Contains(err.Error(), "bad tat") {
			t.Errorf("tat %#x: %v, want a bad tat", bits, err)
		}
	}
}

// TestSnapshotVersion2 loads testdata/snapshot-v2.rlsnap, written by the rlserver whose
// logs were one uvarint per entry, after the calls of v2LogCalls: every log loads
// re-encoded, holding what the same calls leave in a store now, and decides alike
// from then on.
func TestSnapshotVersion2(t *testing.T) {
	data, err := os.ReadFile("testdata/snapshot-v2.rlsnap")
	if err != nil {
		t.Fatal(err)
	}
	loaded, built := newStore(t, Config{}), newStore(t, Config{})
	saved := v2LogCalls(built)
	info, err := loaded.ReadSnapshot(bytes.NewReader(data), saved)
	if err != nil || info.Keys != 4 || info.SavedAt != saved {
		t.Fatalf("ReadSnapshot = %+v, %v; want 4 keys saved at %d", info, err, saved)
	}
	stored := func(s *Store, key string) ([]algo.LogEntry, int64, int) {
		sh, tag := s.locate([]byte(key), saved)
		defer sh.mu.Unlock()
		_, slot := sh.get([]byte(key), tag, saved)
		if slot == 0 {
			return nil, 0, 0
		}
		e := sh.at(slot)
		base, size := e.state()
		entries, _ := decodeLog(sh.tail(e), int64(base), nil)
		return entries, e.deadline(), int(size)
	}
	for _, key := range []string{"log:steady", "log:one", "log:mixed", "log:huge"} {
		got, gotDeadline, _ := stored(loaded, key)
		want, wantDeadline, _ := stored(built, key)
		if len(want) == 0 || !slices.Equal(got, want) || gotDeadline != wantDeadline {
			t.Errorf("%s: loaded %v fresh at %d, want %v fresh at %d", key, got, gotDeadline, want, wantDeadline)
		}
	}
	if _, _, size := stored(loaded, "log:steady"); size != 323 { // 1 + 99×26 bits; uvarints took 397
		t.Errorf("log:steady takes %d bytes, want 323", size)
	}
	r := algo.Request{Kind: algo.KindLog, Limit: 1000, Window: 60 * sec, Cost: 2}
	for i := range int64(50) {
		for _, key := range []string{"log:steady", "log:mixed"} {
			got, err1 := loaded.Do([]byte(key), r, saved+i*77*ms)
			want, err2 := built.Do([]byte(key), r, saved+i*77*ms)
			if got != want || err1 != nil || err2 != nil {
				t.Fatalf("%s, call %d after loading: %+v, %v; want %+v, %v", key, i, got, err1, want, err2)
			}
		}
	}
}

// v2LogCalls makes the RL.LOG keys of testdata/snapshot-v2.rlsnap, written with it by
// the rlserver whose logs were uvarints (commit 2b82c34, WriteSnapshot at the time it
// returns), and returns that time.
func v2LogCalls(s *Store) int64 {
	const saved = 1_764_547_200_000_000 // 2025-12-01 00:00:00 UTC
	do := func(key string, limit, cost, window, at int64) {
		s.Do([]byte(key), algo.Request{Kind: algo.KindLog, Limit: limit, Window: window, Cost: cost}, at)
	}
	for i := range int64(100) { // RL.LOG's memory test: 100 entries 30 s apart
		do("log:steady", 100, 1, 3600*sec, saved-(99-i)*30*sec)
	}
	do("log:one", 5, 1, sec, saved)
	x := uint64(1)
	at := saved - 50*sec
	for i := range int64(200) { // random steps and costs, some calls at the same µs or before
		x = x*6364136223846793005 + 1442695040888963407
		step := int64(x>>40) % (500 * ms)
		if i%17 == 0 {
			step = -int64(x>>50) % sec
		} else if i%11 == 0 {
			step = 0
		}
		at += step
		do("log:mixed", 1000, 1+int64(x>>60)%4*int64(i%3), 60*sec, at)
	}
	do("log:huge", 10_000, 4_000, 1<<50, saved-(1<<45))
	do("log:huge", 10_000, 4_000, 1<<50, saved)
	return saved
}
