//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd) || rlserver_heap

package offheap

// mmapped says that arrays and pages are on the Go heap here: plain slices, zeroed by
// make, freed by the collector. They hold no pointers (T must not), so the collector
// never scans them; only the GOGC headroom and slow return of freed spans that the
// mappings avoid apply.
const mmapped = false

// Make returns a zeroed slice of n T's (length and capacity n) on the Go heap; nil if n
// is 0.
func Make[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, n)
}

// Free lets s's array go: the collector frees it once nothing refers to it. s must not
// be used after, as where Free unmaps.
func Free[T any](s []T) {}

// Page returns a zeroed page of PageBytes.
func Page() []byte { return make([]byte, PageBytes) }

// FreePage lets a page from Page go: the collector frees it.
func FreePage(p []byte) {}
