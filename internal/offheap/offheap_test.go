package offheap

import (
	"testing"
)

// offBytes is the Bytes an array or page of n bytes adds: n where it is mapped, 0
// where it is on the Go heap (built with rlserver_heap, or on Windows, wasm, ...).
func offBytes(n int64) int64 {
	if !mmapped {
		return 0
	}
	return n
}

func TestMakeGrowFree(t *testing.T) {
	before := Bytes()
	s := Make[uint64](4000) // 32,000 bytes: mapped where mmapped
	if len(s) != 4000 || cap(s) != 4000 {
		t.Fatalf("Make: len %d cap %d", len(s), cap(s))
	}
	for i := range s {
		if s[i] != 0 {
			t.Fatalf("Make: s[%d] = %d, want zeroed memory", i, s[i])
		}
		s[i] = uint64(i)
	}
	if got, want := Bytes()-before, offBytes(32000); got != want {
		t.Fatalf("Bytes grew by %d for 4000 uint64s, want %d", got, want)
	}
	g := Grow(s[:500], 8000)
	if len(g) != 500 || cap(g) != 8000 || g[499] != 499 {
		t.Fatalf("Grow: len %d cap %d last %d", len(g), cap(g), g[499])
	}
	if got, want := Bytes()-before, offBytes(64000); got != want {
		t.Fatalf("after Grow %d bytes mapped, want %d: the old array unmapped", got, want)
	}
	Free(g[:10])
	if got := Bytes() - before; got != 0 {
		t.Fatalf("after Free %d bytes mapped, want 0", got)
	}
	if Make[uint64](0) != nil {
		t.Fatal("Make(0) is not nil")
	}
	Free[uint64](nil)
	small := Grow(Make[uint64](10), 20) // on the heap, below smallBytes
	if len(small) != 10 || cap(small) != 20 || Bytes() != before {
		t.Fatalf("small arrays: len %d cap %d, %d bytes mapped", len(small), cap(small), Bytes()-before)
	}
	Free(small)
}

func TestPageZeroedAfterFree(t *testing.T) {
	before := Bytes()
	p := Page()
	if len(p) != PageBytes || cap(p) != PageBytes {
		t.Fatalf("Page: len %d cap %d", len(p), cap(p))
	}
	for i := range p {
		p[i] = 0xff
	}
	FreePage(p)
	if got := Bytes() - before; got != 0 {
		t.Fatalf("%d bytes handed out after FreePage", got)
	}
	q := Page() // the page just freed: the pool hands out its last
	defer FreePage(q)
	for i, b := range q {
		if b != 0 {
			t.Fatalf("a page again from the pool has byte %d = %#x, want 0", i, b)
		}
	}
}
