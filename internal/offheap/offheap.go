// Package offheap allocates the store's big pointer-free arrays outside the Go heap,
// in anonymous private mappings (mmap), as VictoriaMetrics/fastcache's malloc_mmap.go
// does for its chunks.
//
// Why: users measure a server's memory by its RSS, and on the Go heap the
// store cost about twice what it holds. The collector lets the heap grow to twice the
// live data before collecting (GOGC=100) and hands freed spans back to the OS only
// slowly; a slice that grows by copying leaves its old array behind until then
// (TestMemoryPerUser measures RSS per user; docs/benchmarks.md has the figures).
// Memory mapped here is never scanned or counted by the collector, so no GOGC headroom
// applies to it, an array that grows is unmapped the moment it has been copied, and the
// RSS of an array's capacity not yet used stays zero until it is touched.
//
// Arrays come from Make and go back with Free (or are moved by Grow): one mapping each,
// but for arrays under a page, which stay on the Go heap (smallBytes).
// Chunk pages, which come and go by the thousand, come from Page and go back with
// FreePage, which gives their memory to the OS (madvise) and keeps the address range
// for the next Page, so that the process's mappings do not multiply.
//
// Platforms: the mappings are made on Linux, macOS and the BSDs (mmap.go). Elsewhere
// (Windows, wasm, ...), and on any platform built with the tag rlserver_heap, every
// array and page is a plain Go slice (heap.go): the same API and the same zeroed
// memory, collected by the Go runtime, with Bytes always 0.
//
// T must hold no pointers: the collector does not see mapped memory, and a pointer held
// only there would not keep its target alive.
package offheap

import "sync/atomic"

// PageBytes is the size of a page from Page.
const PageBytes = 16 << 10

var mapped atomic.Int64 // bytes of arrays and pages handed out and not yet returned

// Bytes returns the bytes of arrays and pages handed out and not returned that live
// off the Go heap: the off-heap part of the process's memory (INFO used_memory adds it
// to the Go heap). It is 0 where the arrays are on the heap (heap.go).
func Bytes() int64 { return mapped.Load() }

// Grow returns s with capacity n (≥ len(s)) in a new array, its elements copied,
// and frees s's array (Free).
func Grow[T any](s []T, n int) []T {
	grown := Make[T](n)[:len(s)]
	copy(grown, s)
	Free(s)
	return grown
}
