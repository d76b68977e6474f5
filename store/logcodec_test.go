package store

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// roundTrip encodes entries with header h and decodes them back, checking logSize,
// the end bit decodeLog reports, skipEntries and, for logs in the snapshot's domain,
// validLog.
func roundTrip(t *testing.T, entries []algo.LogEntry, h byte) ([]algo.LogEntry, int) {
	t.Helper()
	size := logSize(entries, h)
	buf := make([]byte, size+8)
	for i := range buf {
		buf[i] = 0xAA // what was in the chunk before
	}
	encodeLog(buf[:size], entries, h)
	if buf[size] != 0xAA {
		t.Fatalf("encodeLog wrote past logSize %d", size)
	}
	got, end := decodeLog(buf[:size], entries[0].TS, nil)
	if want := 8 + uint(logBits(entries, h)); end != want {
		t.Fatalf("decodeLog ends at bit %d, want %d", end, want)
	}
	from := uint(8)
	if h&logExt != 0 {
		from += uint(extBits(entries[0], false))
	}
	for n := range entries {
		want := 8 + uint(logBits(entries[:n+1], h))
		if at := skipEntries(buf[:size], from, n); at != want {
			t.Fatalf("skipEntries(%d) = %d, want %d", n, at, want)
		}
	}
	if inDomain(entries) {
		var sr snapshotReader
		if !sr.validLog(buf[:size], uint64(entries[0].TS)) || !slices.Equal(sr.logs, entries) {
			t.Fatalf("validLog rejects %v (header %#x), or reads %v", entries, h, sr.logs)
		}
	}
	return got, size
}

// inDomain reports whether a log is one a snapshot may hold: times in [0, 2^62),
// costs in [1, 2^62).
func inDomain(entries []algo.LogEntry) bool {
	for _, e := range entries {
		if e.TS < 0 || e.TS >= 1<<62 || e.Cost < 1 || e.Cost >= 1<<62 {
			return false
		}
	}
	return true
}

func e(ts, cost int64) algo.LogEntry { return algo.LogEntry{TS: ts, Cost: cost} }

func TestLogCodec(t *testing.T) {
	every30s := make([]algo.LogEntry, 100)
	for i := range every30s {
		every30s[i] = e(t0+int64(i)*30*sec, 1)
	}
	tests := []struct {
		name     string
		entries  []algo.LogEntry
		wantH    byte
		wantSize int
	}{
		{"one entry", []algo.LogEntry{e(t0, 1)}, 0, 1},
		{"one costly entry", []algo.LogEntry{e(t0, 5)}, logExt, 1 + 2},                                // 1 + 6 + 3 bits
		{"cost 1, steps of 63 µs", []algo.LogEntry{e(t0, 1), e(t0+63, 1), e(t0+126, 1)}, 5, 1 + 2},    // 2 × (1+1+5) bits
		{"equal times", []algo.LogEntry{e(t0, 1), e(t0, 1), e(t0, 1)}, 0, 1 + 1},                      // 2 × 1 bit
		{"RL.LOG's memory test: 100 entries 30 s apart", every30s, 24, 1 + 322},                       // 99 × 26 bits
		{"cost 0 and costly", []algo.LogEntry{e(t0, 0), e(t0+1, 1000)}, logExt, 1 + 4},                // 7 + 2 + 17 bits
		{"clock stepped back", []algo.LogEntry{e(t0, 1), e(t0-sec, 1), e(t0, 1)}, logExt | 19, 1 + 7}, // 1 + 30 + 22 bits
		{"extremes of the domain", []algo.LogEntry{e(0, 1<<62-1), e(1<<62-1, 0), e(0, 1)}, logExt | 61, 1 + 27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := logHeader(tt.entries, 0)
			got, size := roundTrip(t, tt.entries, h)
			if !slices.Equal(got, tt.entries) || h != tt.wantH || size != tt.wantSize {
				t.Fatalf("got %v in %d bytes, header %#x; want %v in %d, header %#x", got, size, h, tt.entries, tt.wantSize, tt.wantH)
			}
			for k := range byte(maxLogK + 1) { // any k codes any log, only in more bits
				for _, ext := range []byte{0, logExt} {
					if ext == 0 && h&logExt != 0 {
						continue
					}
					if got, _ := roundTrip(t, tt.entries, k|ext); !slices.Equal(got, tt.entries) {
						t.Fatalf("header %#x: got %v", k|ext, got)
					}
				}
			}
		})
	}
}

// TestLogCodecRandom round-trips random logs of steps of every scale, with some costs
// other than 1, equal times and steps back, under the header logHeader picks and a
// random one.
func TestLogCodecRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		entries := randomLog(rng, 1+rng.IntN(150))
		h := logHeader(entries, uint(rng.IntN(maxLogK+1)))
		if got, _ := roundTrip(t, entries, h); !slices.Equal(got, entries) {
			t.Fatalf("got %v, want %v", got, entries)
		}
		h = byte(rng.IntN(maxLogK+1)) | h&logExt | byte(rng.IntN(2))*logExt
		if got, _ := roundTrip(t, entries, h); !slices.Equal(got, entries) {
			t.Fatalf("header %#x: got %v, want %v", h, got, entries)
		}
	}
}

// randomLog returns n entries in the store's domain.
func randomLog(rng *rand.Rand, n int) []algo.LogEntry {
	scale := rng.IntN(62)
	ts := rng.Int64N(1 << 62)
	entries := make([]algo.LogEntry, n)
	for i := range entries {
		c := int64(1)
		switch rng.IntN(20) {
		case 0:
			c = rng.Int64N(1<<62-1) + 1
		case 1:
			c = rng.Int64N(10) + 1
		}
		entries[i] = e(ts, c)
		step := rng.Int64N(1 << scale)
		switch rng.IntN(30) {
		case 0:
			step = -step
		case 1:
			step = 0
		case 2:
			step = rng.Int64N(1 << 62)
		}
		ts = min(max(ts+step, 0), 1<<62-1)
	}
	return entries
}

// FuzzLogCodec round-trips any log the store can hold: times and costs in [0, 2^62).
// Its seed corpus runs with go test.
func FuzzLogCodec(f *testing.F) {
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(t0)), 1))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x40\x01\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x3f\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add(slices.Repeat([]byte{0x10, 0x27, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, 50))
	f.Fuzz(func(t *testing.T, data []byte) {
		var entries []algo.LogEntry
		for ; len(data) >= 16; data = data[16:] {
			entries = append(entries, algo.LogEntry{
				TS:   int64(binary.LittleEndian.Uint64(data) & (1<<62 - 1)),
				Cost: int64(binary.LittleEndian.Uint64(data[8:]) & (1<<62 - 1)),
			})
		}
		if len(entries) == 0 {
			return
		}
		got, size := roundTrip(t, entries, logHeader(entries, 0))
		if !slices.Equal(got, entries) {
			t.Fatalf("got %v, want %v", got, entries)
		}
		if size > 1+len(entries)*maxEntryBytes {
			t.Fatalf("%d entries in %d bytes", len(entries), size)
		}
	})
}

// TestLogAppendsMatchAlgo drives RL.LOG keys through Do with random steps (back ones
// and repeats too), costs and windows, against algo.Log on a plain slice: every
// decision and every stored log must match, whether the call appended in place
// (appendLog) or encoded the log whole.
func TestLogAppendsMatchAlgo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := newStore(t, Config{Shards: 1})
	type log struct {
		entries  []algo.LogEntry
		deadline int64
	}
	oracle := map[string]log{}
	keys := []string{"a", "a key long enough to spill on its own, well past fourteen bytes"}
	now := t0
	for i := range 200_000 {
		key := keys[rng.IntN(len(keys))]
		switch rng.IntN(100) {
		case 0:
			now -= rng.Int64N(sec)
		case 1, 2:
		default:
			now += rng.Int64N(1 << rng.IntN(30))
		}
		r := algo.Request{Kind: algo.KindLog, Limit: 300, Window: 20 * sec, Cost: 1}
		if rng.IntN(50) == 0 {
			r.Cost = rng.Int64N(5)
		}
		if rng.IntN(500) == 0 {
			r.Window = rng.Int64N(40*sec) + 1
		}
		o := oracle[key]
		if o.deadline <= now { // fresh: the store forgets it
			o = log{}
		}
		want, wd := algo.Log(slices.Clone(o.entries), r, now)
		if wd.Write {
			o = log{want, wd.FreshAt}
		}
		oracle[key] = o
		d, err := s.Do([]byte(key), r, now)
		if err != nil || d != wd {
			t.Fatalf("call %d on %q: %+v, %v; want %+v", i, key, d, err, wd)
		}
		sh, tag := s.locate([]byte(key), now)
		var got []algo.LogEntry
		if pos, slot := sh.get([]byte(key), tag, now); pos >= 0 {
			e := sh.at(slot)
			base, size := e.state()
			got, _ = decodeLog(sh.tail(e), int64(base), nil)
			if h := sh.tail(e)[0]; int(size) != logSize(got, h) {
				t.Fatalf("call %d on %q: %d bytes stored for %d", i, key, size, logSize(got, h))
			}
		}
		sh.mu.Unlock()
		if o.deadline <= now {
			o.entries = nil
		}
		if !slices.Equal(got, o.entries) {
			t.Fatalf("call %d on %q: stored %v, want %v", i, key, got, o.entries)
		}
	}
}
