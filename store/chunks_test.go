package store

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestClassFor(t *testing.T) {
	tests := []struct{ n, size int }{
		{0, 8}, {1, 8}, {8, 8}, {9, 16}, {16, 16}, {17, 24}, {64, 64}, {65, 80},
		{80, 80}, {81, 104}, {301, 352}, {maxChunk, classSizes[len(classSizes)-1]},
	}
	for _, tt := range tests {
		if got := classSizes[classFor(tt.n)]; got != tt.size {
			t.Errorf("classFor(%d) has size %d, want %d", tt.n, got, tt.size)
		}
	}
	for i := 1; i < len(classSizes); i++ {
		if classSizes[i]%8 != 0 || classSizes[i] <= classSizes[i-1] || i > 8 && classSizes[i] > classSizes[i-1]*5/4+8 {
			t.Errorf("class %d: size %d after %d", i, classSizes[i], classSizes[i-1])
		}
	}
	if len(classSizes) > 256 || classSizes[len(classSizes)-1] < maxChunk {
		t.Errorf("%d classes up to %d, want ≤ 256 up to ≥ %d", len(classSizes), classSizes[len(classSizes)-1], maxChunk)
	}
}

// TestChunksKeepTheirBytes fills chunks of a few classes with their own pattern while
// others come and go, then checks that no chunk was overwritten or handed out twice.
func TestChunksKeepTheirBytes(t *testing.T) {
	type held struct {
		class uint8
		chunk uint32
		fill  byte
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var a chunks
	var live []held
	taken := map[[2]uint32]bool{}
	for step := range 100000 {
		if len(live) > 0 && rng.IntN(100) < 45 {
			i := rng.IntN(len(live))
			h := live[i]
			if got := a.bytes(h.class, h.chunk); !bytes.Equal(got, bytes.Repeat([]byte{h.fill}, len(got))) {
				t.Fatalf("step %d: class %d chunk %d was overwritten", step, h.class, h.chunk)
			}
			a.release(h.class, h.chunk)
			delete(taken, [2]uint32{uint32(h.class), h.chunk})
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			continue
		}
		c := []uint8{0, 1, 9, 20}[rng.IntN(4)] // 8, 16, 104 and 1376 bytes
		h := held{class: c, chunk: a.alloc(c), fill: byte(rng.Uint32())}
		if taken[[2]uint32{uint32(c), h.chunk}] {
			t.Fatalf("step %d: class %d chunk %d handed out twice", step, c, h.chunk)
		}
		taken[[2]uint32{uint32(c), h.chunk}] = true
		copy(a.bytes(c, h.chunk), bytes.Repeat([]byte{h.fill}, classSizes[c]))
		live = append(live, h)
	}
	for _, h := range live {
		a.release(h.class, h.chunk)
	}
	a.dropIdle()
	for _, cl := range a.classes {
		if len(cl.pages) != 0 {
			t.Errorf("class %d keeps %d pages with nothing live", cl.size, len(cl.pages))
		}
	}
}

// TestChunksReturnPages fills a class, frees it from the top and from the bottom, and
// checks that the pages behind the live chunks are dropped but one (that one too by
// dropIdle once the class is empty), and that the lowest free chunk is reused first.
func TestChunksReturnPages(t *testing.T) {
	const c = 1 // 16 bytes, 1024 per page
	var a chunks
	const n = 10 * 1024
	for i := range n {
		if got := a.alloc(c); got != uint32(i) {
			t.Fatalf("alloc %d = chunk %d, want the lowest free", i, got)
		}
	}
	cl := &a.classes[c]
	tests := []struct {
		name      string
		from, to  int // release chunks [from, to)
		wantPages int
	}{
		{"free page 9's upper half: nothing to drop", 9*1024 + 512, n, 10},
		{"free pages 5 to 9: one empty page stays", 5 * 1024, 9*1024 + 512, 6},
		{"free page 0: not at the end", 0, 1024, 6},
		{"free pages 1 to 4: the class is empty, one page stays", 1024, 5 * 1024, 1},
		{"dropIdle", 0, 0, 0},
	}
	for _, tt := range tests {
		for i := tt.from; i < tt.to; i++ {
			a.release(c, uint32(i))
		}
		if tt.name == "dropIdle" {
			a.dropIdle()
		}
		if len(cl.pages) != tt.wantPages {
			t.Fatalf("%s: %d pages, want %d", tt.name, len(cl.pages), tt.wantPages)
		}
	}
	for i := range 3000 {
		if got := a.alloc(c); got != uint32(i) {
			t.Fatalf("alloc after emptying = chunk %d, want %d", got, i)
		}
	}
}
