// Package offheap allocates the store's big pointer-free arrays outside the Go heap,
// in anonymous private mappings (mmap), as VictoriaMetrics/fastcache's malloc_mmap.go
// does for its chunks.
//
// Why (issue 13): users measure a server's memory by its RSS, and on the Go heap the
// store cost about twice what it holds. The collector lets the heap grow to twice the
// live data before collecting (GOGC=100) and hands freed spans back to the OS only
// slowly; a slice that grows by copying leaves its old array behind until then
// (TestMemoryPerUser measures RSS per user; the README has the figures).
// Memory mapped here is never scanned or counted by the collector, so no GOGC headroom
// applies to it, an array that grows is unmapped the moment it has been copied, and the
// RSS of an array's capacity not yet used stays zero until it is touched.
//
// Arrays come from Make and go back with Free (or are moved by Grow): one mapping each,
// but for arrays under a page, which stay on the Go heap (smallBytes).
// Chunk pages, which come and go by the thousand, come from Page and go back with
// FreePage, which gives their memory to the OS (madvise MADV_DONTNEED) and keeps the
// address range for the next Page, so that the process's mappings do not multiply.
//
// T must hold no pointers: the collector does not see this memory, and a pointer held
// only here would not keep its target alive.
package offheap

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// PageBytes is the size of a page from Page.
const PageBytes = 16 << 10

// regionPages is how many pages one mapping for Page holds: 4 MiB, so that a
// million-key store maps a few dozen regions rather than thousands of pages.
const regionPages = 256

var mapped atomic.Int64 // bytes of arrays and pages handed out and not yet returned

// Bytes returns the bytes of arrays and pages handed out and not returned: the
// off-heap part of the process's memory (INFO used_memory adds it to the Go heap).
func Bytes() int64 { return mapped.Load() }

// smallBytes is the size below which Make allocates on the Go heap: a mapping takes a
// whole page, at a page-aligned address, and a shard of few keys then had its slab,
// index and wheel arrays each at the start of a page of its own, and BenchmarkDo on one
// key took measurably longer so; arrays under a page leave little behind on the heap.
const smallBytes = 4 << 10

// Make returns a zeroed slice of n T's (length and capacity n): in a mapping of its
// own, or on the Go heap if it is smaller than smallBytes; nil if n is 0.
func Make[T any](n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	size := int(unsafe.Sizeof(zero)) * n
	if size < smallBytes {
		return make([]T, n)
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("offheap: mmap %d bytes: %v", size, err)) // as make panics when out of memory
	}
	mapped.Add(int64(size))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// Free unmaps s's array, which Make or Grow returned (s may be resliced, not
// re-based). s must not be used after.
func Free[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	var zero T
	size := int(unsafe.Sizeof(zero)) * cap(s)
	if size < smallBytes {
		return // on the heap: the collector frees it
	}
	if err := syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size)); err != nil {
		panic(fmt.Sprintf("offheap: munmap %d bytes: %v", size, err))
	}
	mapped.Add(-int64(size))
}

// Grow returns s with capacity n (≥ len(s)) in a new mapping, its elements copied,
// and unmaps s's array.
func Grow[T any](s []T, n int) []T {
	grown := Make[T](n)[:len(s)]
	copy(grown, s)
	Free(s)
	return grown
}

// pages holds the free pages of the regions mapped so far: their memory has been
// given back to the OS, their addresses are kept for reuse.
var pages struct {
	mu   sync.Mutex
	free [][]byte
}

// Page returns a zeroed page of PageBytes.
func Page() []byte {
	pages.mu.Lock()
	defer pages.mu.Unlock()
	if len(pages.free) == 0 {
		region := Make[byte](regionPages * PageBytes) // ≥ smallBytes: mapped
		mapped.Add(-regionPages * PageBytes)          // counted per page as it is handed out
		for i := regionPages - 1; i >= 0; i-- {
			pages.free = append(pages.free, region[i*PageBytes:(i+1)*PageBytes:(i+1)*PageBytes])
		}
	}
	p := pages.free[len(pages.free)-1]
	pages.free = pages.free[:len(pages.free)-1]
	mapped.Add(PageBytes)
	return p
}

// FreePage returns a page from Page (its full PageBytes, as Page returned it): its
// memory goes back to the OS at once, and a later Page reads it as zeros.
func FreePage(p []byte) {
	if err := syscall.Madvise(p, syscall.MADV_DONTNEED); err != nil {
		panic(fmt.Sprintf("offheap: madvise: %v", err))
	}
	pages.mu.Lock()
	pages.free = append(pages.free, p)
	pages.mu.Unlock()
	mapped.Add(-PageBytes)
}
