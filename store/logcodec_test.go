package store

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// roundTrip encodes entries and decodes them back, checking logSize on the way.
func roundTrip(t *testing.T, entries []algo.LogEntry) ([]algo.LogEntry, int) {
	t.Helper()
	var base int64
	if len(entries) > 0 {
		base = entries[0].TS
	}
	size := logSize(entries, base)
	buf := make([]byte, size+8)
	for i := range buf {
		buf[i] = 0xAA // what was in the chunk before
	}
	encodeLog(buf[:size], entries, base)
	if buf[size] != 0xAA {
		t.Fatalf("encodeLog wrote past logSize %d", size)
	}
	return decodeLog(buf[:size], base, nil), size
}

func e(ts, cost int64) algo.LogEntry { return algo.LogEntry{TS: ts, Cost: cost} }

func TestLogCodec(t *testing.T) {
	tests := []struct {
		name     string
		entries  []algo.LogEntry
		wantSize int
	}{
		{"empty", nil, 0},
		{"one entry", []algo.LogEntry{e(t0, 1)}, 1},
		{"cost 1, steps of 63 µs", []algo.LogEntry{e(t0, 1), e(t0+63, 1), e(t0+126, 1)}, 3},
		{"cost 1, steps of 600 ms", []algo.LogEntry{e(t0, 1), e(t0+600*ms, 1)}, 1 + 3},
		{"cost 0 and costly", []algo.LogEntry{e(t0, 0), e(t0+1, 1000)}, 2 + 1 + 2},
		{"clock stepped back", []algo.LogEntry{e(t0, 1), e(t0-sec, 1), e(t0, 1)}, 1 + 3 + 1 + 3},
		{"extremes of the domain", []algo.LogEntry{e(0, 1<<62-1), e(1<<62-1, 0), e(0, 1)}, 1 + 9 + 9 + 1 + 9 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, size := roundTrip(t, tt.entries)
			if !slices.Equal(got, tt.entries) || size != tt.wantSize {
				t.Fatalf("got %v in %d bytes, want %v in %d", got, size, tt.entries, tt.wantSize)
			}
		})
	}
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
		got, size := roundTrip(t, entries)
		if !slices.Equal(got, entries) {
			t.Fatalf("got %v, want %v", got, entries)
		}
		if size > len(entries)*maxEntryBytes {
			t.Fatalf("%d entries in %d bytes", len(entries), size)
		}
	})
}
