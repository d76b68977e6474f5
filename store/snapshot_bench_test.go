package store

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkSnapshot writes and loads 1M RL.TOKEN keys of 16 bytes: the time per key,
// the file's bytes per key, and how long one shard's lock is held while it is encoded.
func BenchmarkSnapshot(b *testing.B) {
	const keys = 1 << 20
	s := newStore(b, Config{})
	key := make([]byte, 16)
	for i := range keys {
		binary.LittleEndian.PutUint64(key, uint64(i)*0x9e3779b97f4a7c15)
		s.Do(key, request(algo.KindToken, 10, 60*sec), t0)
	}
	var data bytes.Buffer
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			data.Reset()
			if _, err := s.WriteSnapshot(&data, t0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
		b.ReportMetric(float64(data.Len())/keys, "B/key")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(s.shards)), "µs/shard")
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			loaded := newStore(b, Config{})
			b.StartTimer()
			if _, err := loaded.ReadSnapshot(bytes.NewReader(data.Bytes()), t0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
	})
}
