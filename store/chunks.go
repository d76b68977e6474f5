package store

import (
	"math/bits"

	"github.com/rlserver/rlserver/internal/offheap"
)

// Key bytes, and an RL.LOG key's log after them, live in fixed-size chunks carved from
// pages of a size class: 8 to 64 bytes in steps of 8 (so a 16-byte key wastes
// nothing), then ×1.25 rounded up to 8, ~10% waste on average. Eighths of a power of
// two (208 classes, ~4% waste) measured worse on RL.LOG's memory test: its 336-byte
// chunk rounds to 352 either way, and the more classes the logs pass through as they
// grow left 429 B of store per key of 100k against 421 (RSS 456 B against 452).
// Pages are mapped off the Go heap (offheap.Page, or offheap.Make for a class whose
// chunk is bigger than a page), so the GC never looks inside them; only the page
// lists are scanned (one pointer per 16 KiB).
//
// A class hands out its lowest free chunk (a bitmap with a summary level finds it in
// a few word reads), which packs the live chunks at the front; the empty pages at the
// end are dropped but one (and that one too by dropIdle once the class is empty), and
// their memory goes back to the OS at once (offheap.FreePage: madvise MADV_DONTNEED). That matters for RL.LOG: when users' logs grow together
// they all leave a class at about the same time, and a free list alone would keep
// every class they passed through. An empty page in the middle stays until the pages
// after it empty.

const (
	pageBytes = offheap.PageBytes
	// maxChunk bounds a chunk: a key of up to maxKeyLen bytes plus the longest log
	// (maxLogLimit entries of at most maxEntryBytes) or lease set (maxLogLimit leases of
	// at most maxLeaseBytes), 1.7 GB.
	maxChunk = maxKeyLen + maxLogLimit*max(maxEntryBytes, maxLeaseBytes)
)

// classSizes lists the chunk size of each class, ascending.
var classSizes = func() []int {
	var sizes []int
	for s := 8; s <= 64; s += 8 {
		sizes = append(sizes, s)
	}
	for s := 64; s < maxChunk; {
		s = (s + s/4 + 7) &^ 7
		sizes = append(sizes, s)
	}
	return sizes
}()

// classFor returns the smallest class whose chunks hold n bytes.
func classFor(n int) uint8 {
	if n <= 64 {
		return uint8(max(n-1, 0) / 8)
	}
	lo, hi := 8, len(classSizes)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if classSizes[mid] >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return uint8(lo)
}

// class is one size class's chunks: chunk i is at pages[i/perPage][(i%perPage)*size:].
type class struct {
	size, perPage int
	pages         [][]byte
	live          []int32  // live chunks per page
	free          []uint64 // bit i set: chunk i is free
	nonEmpty      []uint64 // bit w set: free[w] != 0
	lowest        int      // no free chunk in free[:lowest]
}

// chunks is a shard's chunk allocator: its classes up to the largest used so far
// (a class is 120 bytes; all 81 of them in 64 shards would be 0.6 B per key of 1M).
type chunks struct {
	classes []class
}

// alloc returns a free chunk of class c.
func (a *chunks) alloc(c uint8) uint32 {
	for int(c) >= len(a.classes) {
		size := classSizes[len(a.classes)]
		a.classes = append(a.classes, class{size: size, perPage: max(1, pageBytes/size)})
	}
	cl := &a.classes[c]
	w := cl.firstNonEmpty()
	if w < 0 {
		w = cl.addPage()
	}
	b := bits.TrailingZeros64(cl.free[w])
	cl.free[w] &^= 1 << b
	if cl.free[w] == 0 {
		cl.nonEmpty[w/64] &^= 1 << (w % 64)
	}
	i := w*64 + b
	cl.live[i/cl.perPage]++
	return uint32(i)
}

// release frees chunk i of class c.
func (a *chunks) release(c uint8, i uint32) {
	cl := &a.classes[c]
	w := int(i / 64)
	cl.free[w] |= 1 << (i % 64)
	cl.nonEmpty[w/64] |= 1 << (w % 64)
	cl.lowest = min(cl.lowest, w)
	p := int(i) / cl.perPage
	cl.live[p]--
	if cl.live[p] == 0 && p >= len(cl.pages)-2 {
		cl.dropEmptyPages(1)
	}
}

// dropIdle drops the last page of each class that has no live chunk. release keeps
// it, so that a key deleted and created again, over and over, does not make and drop
// a page each time (a mapping and an madvise a call); the store
// calls dropIdle from Expire, on the server's ticker.
func (a *chunks) dropIdle() {
	for i := range a.classes {
		if cl := &a.classes[i]; len(cl.pages) == 1 && cl.live[0] == 0 {
			cl.dropEmptyPages(0)
		}
	}
}

// bytes returns chunk i of class c.
func (a *chunks) bytes(c uint8, i uint32) []byte {
	cl := &a.classes[c]
	p, off := int(i)/cl.perPage, int(i)%cl.perPage*cl.size
	return cl.pages[p][off : off+cl.size : off+cl.size]
}

// held is the memory of the pages and bitmaps.
func (a *chunks) held() int64 {
	var n int64
	for i := range a.classes {
		cl := &a.classes[i]
		n += int64(len(cl.pages)*cl.perPage*cl.size) + int64(cap(cl.pages))*24 +
			int64(cap(cl.live))*4 + int64(cap(cl.free)+cap(cl.nonEmpty))*8
	}
	return n + int64(cap(a.classes))*int64(classBytes)
}

// classBytes is the size of the class struct: four slice headers and three ints.
const classBytes = 4*24 + 3*8

func (cl *class) firstNonEmpty() int {
	for s := cl.lowest / 64; s < len(cl.nonEmpty); s++ {
		if word := cl.nonEmpty[s]; word != 0 {
			w := s*64 + bits.TrailingZeros64(word)
			cl.lowest = w
			return w
		}
	}
	cl.lowest = len(cl.free)
	return -1
}

// addPage appends a page of free chunks and returns the free-bitmap word of its first.
func (cl *class) addPage() int {
	first := len(cl.pages) * cl.perPage
	cl.pages = append(cl.pages, newPage(cl.perPage*cl.size))
	cl.live = append(cl.live, 0)
	end := first + cl.perPage
	for len(cl.free)*64 < end {
		cl.free = append(cl.free, 0)
	}
	for len(cl.nonEmpty)*64 < len(cl.free) {
		cl.nonEmpty = append(cl.nonEmpty, 0)
	}
	for w := first / 64; w*64 < end; w++ { // whole words at a time
		lo, hi := max(first-w*64, 0), min(end-w*64, 64)
		cl.free[w] |= (1<<(hi-lo) - 1) << lo // hi-lo = 64 shifts to 0: 0-1 is all ones
		cl.nonEmpty[w/64] |= 1 << (w % 64)
	}
	cl.lowest = min(cl.lowest, first/64)
	return first / 64
}

// dropEmptyPages drops the trailing pages that hold no live chunk but keeps `spare`
// of them, so that a class whose use goes up and down across a page boundary does not
// make and drop a page each time. It then shortens the bitmaps to the chunks left.
func (cl *class) dropEmptyPages(spare int) {
	n := len(cl.pages)
	for n > 0 && cl.live[n-1] == 0 {
		n--
	}
	n = min(n+spare, len(cl.pages))
	if n == len(cl.pages) {
		return
	}
	for i, p := range cl.pages[n:] {
		freePage(p)
		cl.pages[n+i] = nil
	}
	cl.pages, cl.live = cl.pages[:n], cl.live[:n]
	end := n * cl.perPage
	words := (end + 63) / 64
	clear(cl.free[words:])
	cl.free = cl.free[:words]
	if end%64 != 0 {
		cl.free[words-1] &= 1<<(end%64) - 1
	}
	clear(cl.nonEmpty)
	cl.nonEmpty = cl.nonEmpty[:(words+63)/64]
	for w, word := range cl.free {
		if word != 0 {
			cl.nonEmpty[w/64] |= 1 << (w % 64)
		}
	}
	cl.lowest = min(cl.lowest, words)
}

// newPage returns a zeroed page of n bytes: a chunk page (n ≤ pageBytes), or the one
// chunk of a class bigger than that, mapped on its own.
func newPage(n int) []byte {
	if n <= pageBytes {
		return offheap.Page()[:n]
	}
	return offheap.Make[byte](n)
}

// freePage gives back a page from newPage.
func freePage(p []byte) {
	if cap(p) == pageBytes {
		offheap.FreePage(p[:pageBytes])
	} else {
		offheap.Free(p)
	}
}

// releaseAll gives back every page and empties the allocator.
func (a *chunks) releaseAll() {
	for i := range a.classes {
		for _, p := range a.classes[i].pages {
			freePage(p)
		}
	}
	*a = chunks{}
}
