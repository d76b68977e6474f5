package store

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
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

// BenchmarkIndexVsMap compares the shard index with the 8-byte linear-probing index it
// replaced (index8, below) and map[uint64]uint32, at a shard's 15625 keys (1M over 64
// shards) and at 1M keys in one table: bytes per key from the heap and the off-heap
// mappings, and ns per lookup of a present key (hit), of a present key chosen from the
// previous lookup's answer (hit-chained), and of an absent key (miss).
//
// hit lets the CPU overlap independent lookups' cache misses, which the 5-byte index's
// longer probe loop does less well: at 1M keys in one table it took about twice
// index8's time there. hit-chained, one lookup at a time, is what the store does (each
// call takes a shard's mutex, an atomic that the next call's loads wait for): there
// they are close. The lookups confirm a match by slot, where the store compares key
// bytes: a false fingerprint match costs a record read there.
func BenchmarkIndexVsMap(b *testing.B) {
	for _, n := range []int{1_000_000 / DefaultShards, 1 << 20} {
		rng := rand.New(rand.NewPCG(1, 2))
		hashes := make([]uint64, 2*n) // the second half is never inserted: misses
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		tagOf := func(slot uint32) uint32 { return uint32(hashes[slot-1] >> 32) }
		before := usedBytes()
		var x index
		for i, h := range hashes[:n] {
			if !x.insert(uint32(h>>32), uint32(i+1), tagOf) {
				x.grow(func(yield func(tag, slot uint32) bool) {
					for j := range i + 1 {
						if !yield(tagOf(uint32(j+1)), uint32(j+1)) {
							return
						}
					}
				}, tagOf)
			}
		}
		idxHeap := usedBytes() - before
		before = usedBytes()
		var x8 index8
		for i, h := range hashes[:n] {
			x8.insert(uint32(h>>32), uint32(i+1))
		}
		idx8Heap := usedBytes() - before
		before = usedBytes()
		m := map[uint64]uint32{}
		for i, h := range hashes[:n] {
			m[h] = uint32(i + 1)
		}
		mapHeap := usedBytes() - before

		lookups := []struct {
			name string
			heap uint64
			find func(i int) int // the key's position or value, -1 if absent
		}{
			{"index", idxHeap, func(i int) int {
				return x.find(uint32(hashes[i]>>32), func(slot uint32) bool { return slot == uint32(i+1) })
			}},
			{"index8", idx8Heap, func(i int) int {
				return x8.find(uint32(hashes[i]>>32), func(slot uint32) bool { return slot == uint32(i+1) })
			}},
			{"map", mapHeap, func(i int) int {
				if v, ok := m[hashes[i]]; ok && v == uint32(i+1) {
					return int(v)
				}
				return -1
			}},
		}
		for _, l := range lookups {
			b.Run(fmt.Sprintf("%s/keys=%d/hit", l.name, n), func(b *testing.B) {
				for b.Loop() {
					if l.find(rng.IntN(n)) < 0 {
						b.Fatal("lost a key")
					}
				}
				b.ReportMetric(float64(l.heap)/float64(n), "B/key")
			})
			b.Run(fmt.Sprintf("%s/keys=%d/hit-chained", l.name, n), func(b *testing.B) {
				i := 0
				for k := uint64(1); b.Loop(); k++ {
					pos := l.find(i)
					if pos < 0 {
						b.Fatal("lost a key")
					}
					i = int(mix(k+uint64(pos)>>62) % uint64(n)) // depends on the answer: no overlap
				}
			})
			b.Run(fmt.Sprintf("%s/keys=%d/miss", l.name, n), func(b *testing.B) {
				for b.Loop() {
					if l.find(n+rng.IntN(n)) >= 0 {
						b.Fatal("found an absent key")
					}
				}
			})
		}
		x.release()
		x8.release()
	}
}

// mix is splitmix64's finalizer.
func mix(z uint64) uint64 {
	z *= 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	return z ^ z>>31
}

// index8 is the index before 5-byte buckets, for BenchmarkIndexVsMap: uint64 buckets
// of slot<<32 | tag, linear probing, load 0.68-0.85.
type index8 struct {
	buckets []uint64
	used    int
}

func (x *index8) home(tag uint32) int { return int(uint64(tag) * uint64(len(x.buckets)) >> 32) }

//go:noinline (as the store's was not: over the inlining budget)
func (x *index8) find(tag uint32, isKey func(slot uint32) bool) int {
	for i := x.home(tag); ; {
		b := x.buckets[i]
		if b == 0 {
			return -1
		}
		if uint32(b) == tag && isKey(uint32(b>>32)) {
			return i
		}
		if i++; i == len(x.buckets) {
			i = 0
		}
	}
}

func (x *index8) insert(tag, slot uint32) {
	if (x.used+1)*20 > len(x.buckets)*17 {
		old := x.buckets
		x.buckets = offheap.Make[uint64](max(minBuckets, len(old)+len(old)/4))
		for _, b := range old {
			if b != 0 {
				x.put(b)
			}
		}
		offheap.Free(old)
	}
	x.put(uint64(slot)<<32 | uint64(tag))
	x.used++
}

func (x *index8) put(b uint64) {
	i := x.home(uint32(b))
	for x.buckets[i] != 0 {
		if i++; i == len(x.buckets) {
			i = 0
		}
	}
	x.buckets[i] = b
}

func (x *index8) release() { offheap.Free(x.buckets) }

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

// BenchmarkIndexGrow compares the two ways the index can rehash its keys when it grows,
// at 1M RL.TOKEN keys in one shard (40 MB of records): from the slabs in slab order
// (what grow is given) or from the old table in its order, which reads the records at
// random. ns/op is one whole rehash.
func BenchmarkIndexGrow(b *testing.B) {
	const n = 1_000_000
	s := newStore(b, Config{Shards: 1})
	buildKeys(b, s, algo.KindToken, n)
	sh := &s.shards[0]
	x := &sh.index
	tableOrder := func(yield func(tag, slot uint32) bool) {
		for i := range x.n {
			if v := x.load(i); v != 0 && !yield(sh.tagOf(uint32(v&idxSlotMask)), uint32(v&idxSlotMask)) {
				return
			}
		}
	}
	for _, order := range []struct {
		name string
		keys iter.Seq2[uint32, uint32]
	}{{"slabs", sh.tags}, {"table", tableOrder}} {
		b.Run(order.name, func(b *testing.B) {
			for b.Loop() {
				y := index{n: x.n * 4 / 5, used: x.used - 1} // grows to about x's length
				y.grow(order.keys, sh.tagOf)
				if y.used != x.used {
					b.Fatalf("rehashed %d keys, want %d", y.used, x.used)
				}
				y.release()
			}
		})
	}
	runtime.KeepAlive(s) // its cleanup would unmap the slabs sh.tags reads
}
