package topk

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSketchFindsHeavyHitters feeds a stream where 5 keys take 60% of 100,000 counts
// and 10,000 others share the rest, and checks against exact counts that the sketch
// of 50 keys ranks the 5 first, each within its error bound.
func TestSketchFindsHeavyHitters(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := map[string]uint64{}
	s := New(50)
	const total = 100_000
	for i := 0; i < total; i++ {
		var k string
		if rng.IntN(10) < 6 {
			k = fmt.Sprintf("heavy%d", rng.IntN(5))
		} else {
			k = fmt.Sprintf("light%d", rng.IntN(10_000))
		}
		exact[k]++
		s.Add([]byte(k), 1)
	}
	got := s.Top(5)
	if len(got) != 5 {
		t.Fatalf("Top(5) gave %d items", len(got))
	}
	for _, it := range got {
		if it.Key[:5] != "heavy" {
			t.Errorf("top 5 holds %q (%d): %v", it.Key, it.Count, got)
		}
		if e := exact[it.Key]; it.Count < e || it.Count-it.Err > e || it.Err > total/50 {
			t.Errorf("%s: estimate %d (err %d), exact %d", it.Key, it.Count, it.Err, e)
		}
	}
	if len(s.items) > 50 || len(s.index) > 50 {
		t.Fatalf("sketch holds %d items, %d index entries, capacity 50", len(s.items), len(s.index))
	}
}

// TestSketchReplacesLeast checks the eviction rule on a small case worked by hand.
func TestSketchReplacesLeast(t *testing.T) {
	s := New(2)
	s.Add([]byte("a"), 5)
	s.Add([]byte("b"), 2)
	s.Add([]byte("c"), 1) // replaces b (2): c = 3, err 2
	got := s.Top(3)
	want := []Item{{"a", 5, 0}, {"c", 3, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	s.Add([]byte("x"), 0) // zero counts nothing
	if n := len(s.Top(5)); n != 2 {
		t.Fatalf("after Add(x, 0): %d items", n)
	}
}

// TestWindowForgetsOldBuckets checks that counts leave the window once their bucket is
// older than the span, with time passed in.
func TestWindowForgetsOldBuckets(t *testing.T) {
	const sec = 1_000_000
	w := NewWindow(8, 60*sec, 6) // 10 s buckets
	t0 := int64(1_000_000 * sec)
	w.Add([]byte("old"), 10, t0)
	w.Add([]byte("new"), 3, t0+30*sec)
	w.Add([]byte("new"), 4, t0+55*sec)
	if got := w.Top(5, t0+55*sec); fmt.Sprint(got) != fmt.Sprint([]Item{{"old", 10, 0}, {"new", 7, 0}}) {
		t.Fatalf("at +55s: %v", got)
	}
	if got := w.Top(5, t0+65*sec); fmt.Sprint(got) != fmt.Sprint([]Item{{"new", 7, 0}}) {
		t.Fatalf("at +65s: %v", got)
	}
	if got := w.Top(5, t0+200*sec); len(got) != 0 {
		t.Fatalf("at +200s: %v", got)
	}
	// A bucket reused for a later slice starts empty.
	w.Add([]byte("later"), 1, t0+120*sec)
	if got := w.Top(5, t0+120*sec); fmt.Sprint(got) != fmt.Sprint([]Item{{"later", 1, 0}}) {
		t.Fatalf("at +120s: %v", got)
	}
}

// BenchmarkWindowAdd adds to a window of RL.TOP's size (256 keys a bucket): keys of a
// flood, each new (every Add evicts), and a skewed stream of 1,000 keys.
func BenchmarkWindowAdd(b *testing.B) {
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "rl.token\x00user:%d", i)
	}
	for _, tc := range []struct {
		name string
		pick func(i int) []byte
	}{
		{"new", func(i int) []byte { return keys[i&(len(keys)-1)] }},
		{"skewed", func(i int) []byte { return keys[(i*i)%1000] }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := NewWindow(256, 60_000_000, 6)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w.Add(tc.pick(i), 1, 1_000_000)
			}
		})
	}
}
