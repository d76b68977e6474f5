//go:build (linux || darwin || dragonfly || freebsd || netbsd || openbsd) && !rlserver_heap

package offheap

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmapped says that arrays of smallBytes and more, and pages, are mapped off the heap.
const mmapped = true

// regionPages is how many pages one mapping for Page holds: 4 MiB, so that a
// million-key store maps a few dozen regions rather than thousands of pages.
const regionPages = 256

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
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
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
	if err := unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size)); err != nil {
		panic(fmt.Sprintf("offheap: munmap %d bytes: %v", size, err))
	}
	mapped.Add(-int64(size))
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
// memory goes back to the OS, and a later Page reads it as zeros.
func FreePage(p []byte) {
	release(p)
	pages.mu.Lock()
	pages.free = append(pages.free, p)
	pages.mu.Unlock()
	mapped.Add(-PageBytes)
}

// release gives p's memory back to the OS and leaves it reading as zeros. Linux's
// MADV_DONTNEED drops a private anonymous page at once and maps zeros on the next
// touch. Elsewhere MADV_DONTNEED is only a hint that keeps the contents, so p is
// cleared first and MADV_FREE lets the kernel take the pages when it wants memory:
// either way p then reads as zeros.
func release(p []byte) {
	advice := unix.MADV_DONTNEED
	if runtime.GOOS != "linux" {
		clear(p)
		advice = unix.MADV_FREE
	}
	if err := unix.Madvise(p, advice); err != nil {
		panic(fmt.Sprintf("offheap: madvise: %v", err))
	}
}
