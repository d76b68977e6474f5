package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkGC10M pits the store against the obvious alternative, a map[string]*state,
// at 10M RL.FIXED keys: ns/op is one full, forced collection (runtime.GC), which must
// mark the whole live heap; max-pause-µs is the longest stop-the-world pause among
// them. The store's memory has no pointers to follow, the map's has 20M.
// Run it with -benchtime=3x; it needs ~2.5 GB.
func BenchmarkGC10M(b *testing.B) {
	const n = 10_000_000
	b.Run("store", func(b *testing.B) {
		before := usedBytes()
		s := newStore(b, Config{})
		buildKeys(b, s, algo.KindFixed, n)
		heap := usedBytes() - before
		measureGC(b)
		b.ReportMetric(float64(heap)/n, "B/key") // after b.Loop, which resets metrics
		s.Flush()                                // its memory is not the map's to count
	})
	b.Run("map", func(b *testing.B) {
		before := usedBytes()
		m := map[string]*algo.FixedState{} // grown as a server would, no size hint
		var buf [16]byte
		for i := range n {
			m[string(key16(&buf, i))] = &algo.FixedState{Window: t0 / (60 * sec), Count: 1}
		}
		heap := usedBytes() - before
		measureGC(b)
		b.ReportMetric(float64(heap)/n, "B/key")
		runtime.KeepAlive(m)
	})
}

func measureGC(b *testing.B) {
	var st debug.GCStats
	debug.ReadGCStats(&st)
	first := st.NumGC
	for b.Loop() {
		runtime.GC()
	}
	debug.ReadGCStats(&st)
	pauses := st.Pause[:min(int(st.NumGC-first), len(st.Pause))] // most recent first
	b.ReportMetric(float64(slices.Max(pauses))/float64(time.Microsecond), "max-pause-µs")
}

// BenchmarkIndexVsMap compares the shard index with map[uint64]uint32 at 1M keys:
// bytes per key from the heap, and ns per lookup of a present key. (The index's
// lookup here confirms a tag match by slot, where the store compares key bytes.)
func BenchmarkIndexVsMap(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = rng.Uint64()
	}
	b.Run("index", func(b *testing.B) {
		before := usedBytes()
		var x index
		for i, h := range hashes {
			x.insert(uint32(h>>32), uint32(i+1))
		}
		heap := usedBytes() - before
		for b.Loop() {
			i := rng.IntN(n)
			if x.find(uint32(hashes[i]>>32), func(slot uint32) bool { return slot == uint32(i+1) }) < 0 {
				b.Fatal("lost a key")
			}
		}
		b.ReportMetric(float64(heap)/n, "B/key")
	})
	b.Run("map", func(b *testing.B) {
		before := usedBytes()
		m := map[uint64]uint32{}
		for i, h := range hashes {
			m[h] = uint32(i + 1)
		}
		heap := usedBytes() - before
		for b.Loop() {
			i := rng.IntN(n)
			if m[hashes[i]] != uint32(i+1) {
				b.Fatal("lost a key")
			}
		}
		b.ReportMetric(float64(heap)/n, "B/key")
	})
}

// BenchmarkShards runs RL.TOKEN on 1M random keys from all cores with different
// shard counts, reporting B/key from Stats.Bytes too: more shards mean less lock
// contention and smaller index rehashes, and more partly filled pages.
func BenchmarkShards(b *testing.B) {
	const n = 1_000_000
	r := benchRequest(algo.KindToken)
	for _, shards := range []int{16, 64, 256, 1024} {
		s := newStore(b, Config{Shards: shards})
		buildKeys(b, s, algo.KindToken, n)
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var buf [16]byte
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				for pb.Next() {
					s.Do(key16(&buf, rng.IntN(n)), r, t0)
				}
			})
			b.ReportMetric(float64(s.Stats().Bytes)/n, "accounted-B/key")
		})
	}
}
