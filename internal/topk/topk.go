// Package topk finds heavy hitters in bounded memory: the Space-Saving sketch
// (Metwally, Agrawal, El Abbadi 2005), and a window of sketches over the last span of
// time. A sketch of capacity m counts every key whose share of the total is above
// 1/m, overestimating each by at most Err <= total/m.
package topk

import (
	"slices"
	"strings"
	"sync"
)

// Item is a key and its estimated count; the true count is between Count-Err and Count.
type Item struct {
	Key   string
	Count uint64
	Err   uint64
}

// Sketch is a Space-Saving sketch. It is safe for concurrent use.
type Sketch struct {
	mu     sync.Mutex
	cap    int
	index  map[string]int // key -> position in items
	items  []Item
	counts []uint64 // items[i].Count, apart: the scan for the least reads 2 KB, not 10
}

// New returns a sketch tracking at most capacity keys (at least 1).
func New(capacity int) *Sketch {
	capacity = max(1, capacity)
	return &Sketch{cap: capacity, index: make(map[string]int, capacity), items: make([]Item, 0, capacity),
		counts: make([]uint64, 0, capacity)}
}

// Add counts n more for key. A new key when the sketch is full takes the place of the
// key counted least, inheriting its count as its error. Only a new key is copied.
func (s *Sketch) Add(key []byte, n uint64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[string(key)]; ok {
		s.counts[i] += n
		return
	}
	if len(s.items) < s.cap {
		k := string(key)
		s.index[k] = len(s.items)
		s.items = append(s.items, Item{Key: k})
		s.counts = append(s.counts, n)
		return
	}
	// The capacities used are small (256 at most): a scan of the counts beat keeping
	// a heap in order, whose swaps move the keys' positions in the map too
	// (BenchmarkWindowAdd/new, tried).
	least := 0
	for i, c := range s.counts {
		if c < s.counts[least] {
			least = i
		}
	}
	delete(s.index, s.items[least].Key)
	k := string(key)
	s.index[k] = least
	s.items[least] = Item{Key: k, Err: s.counts[least]}
	s.counts[least] += n
}

// Top returns at most k items, most counted first (ties by key).
func (s *Sketch) Top(k int) []Item {
	s.mu.Lock()
	items := slices.Clone(s.items)
	for i := range items {
		items[i].Count = s.counts[i]
	}
	s.mu.Unlock()
	return top(items, k)
}

func top(items []Item, k int) []Item {
	slices.SortFunc(items, func(a, b Item) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return items[:min(max(k, 0), len(items))]
}

// Reset forgets every key.
func (s *Sketch) Reset() {
	s.mu.Lock()
	clear(s.index)
	s.items, s.counts = s.items[:0], s.counts[:0]
	s.mu.Unlock()
}

// Window keeps the heavy hitters of the last span: buckets sketches, each of an equal
// slice of the span, the oldest reused when time moves past it. Time is passed in (µs),
// never read. It is safe for concurrent use.
type Window struct {
	mu      sync.Mutex
	slice   int64 // µs a bucket covers
	buckets []*Sketch
	starts  []int64 // the slice index each bucket holds, -1 if none
}

// NewWindow returns a window of span µs cut into buckets sketches of capacity keys each.
func NewWindow(capacity int, span int64, buckets int) *Window {
	buckets = max(1, buckets)
	w := &Window{slice: max(1, span/int64(buckets)), buckets: make([]*Sketch, buckets), starts: make([]int64, buckets)}
	for i := range w.buckets {
		w.buckets[i], w.starts[i] = New(capacity), -1
	}
	return w
}

// Add counts n for key at now.
func (w *Window) Add(key []byte, n uint64, now int64) {
	idx := now / w.slice
	w.mu.Lock()
	b := int(idx % int64(len(w.buckets)))
	if w.starts[b] != idx {
		w.buckets[b].Reset()
		w.starts[b] = idx
	}
	sk := w.buckets[b]
	w.mu.Unlock()
	sk.Add(key, n)
}

// Top returns at most k items counted in the span before now, most first: the sum
// over the buckets still in the span (the oldest partly outside it, so the window
// covers between span-slice and span).
func (w *Window) Top(k int, now int64) []Item {
	idx := now / w.slice
	sum := map[string]Item{}
	w.mu.Lock()
	for b, start := range w.starts {
		if start < 0 || start > idx || idx-start >= int64(len(w.buckets)) {
			continue
		}
		for _, it := range w.buckets[b].Top(w.buckets[b].cap) {
			s := sum[it.Key]
			s.Key, s.Count, s.Err = it.Key, s.Count+it.Count, s.Err+it.Err
			sum[it.Key] = s
		}
	}
	w.mu.Unlock()
	items := make([]Item, 0, len(sum))
	for _, it := range sum {
		items = append(items, it)
	}
	return top(items, k)
}
