package aof

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

// framedLog writes n keys, one frame each (always, each write waited for), and
// returns the store, the increment's path and the offset each frame starts at, with
// the file's size last.
func framedLog(t *testing.T, dir string, n int) (*store.Store, string, []int64) {
	t.Helper()
	st := newStore(t)
	l, err := Open(cfg(dir), st, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		key := []byte(fmt.Sprintf("k%d", i))
		r := algo.Request{Kind: algo.KindLog, Limit: 10, Window: 60e6, Cost: 1}
		if i%2 == 1 {
			r = algo.Request{Kind: algo.KindToken, Limit: 10, Window: 60e6, Rate: 10, Burst: 10, Cost: 3}
		}
		st.Do(key, r, t0+int64(i))
		l.WaitDurable(l.End())
	}
	l.Close()
	last, _ := l.m.lastIncr()
	path := filepath.Join(dir, last.name)
	offs := []int64{fileHeadBytes}
	if _, _, err := readIncr(path, func(b []byte) error {
		offs = append(offs, offs[len(offs)-1]+frameHead+int64(len(b)))
		return nil
	}, func(uint32) {}); err != nil {
		t.Fatal(err)
	}
	if len(offs) != n+1 {
		t.Fatalf("%d frames for %d waited writes", len(offs)-1, n)
	}
	return st, path, offs
}

// copyDir copies the log's files from src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600)
	}
	return dst
}

// TestTornTail: the increment cut at every byte of its last three frames loads up to
// the last whole frame, under aof-load-truncated yes, and is cut there; under no it is
// refused naming the file and offset.
func TestTornTail(t *testing.T) {
	const n = 8
	src := t.TempDir()
	orig, path, offs := framedLog(t, src, n)
	for cut := offs[n-3] + 1; cut < offs[n]; cut++ {
		dir := copyDir(t, src)
		p := filepath.Join(dir, filepath.Base(path))
		if err := os.Truncate(p, cut); err != nil {
			t.Fatal(err)
		}
		whole := 0
		for whole < n && offs[whole+1] <= cut {
			whole++
		}
		c := cfg(dir)
		c.RefuseTruncated = true
		_, _, err := Load(c, newStore(t), t0)
		var fe *FrameError
		if cut == offs[whole] { // between two frames: a whole log
			if err != nil {
				t.Fatalf("cut between frames at %d: %v", cut, err)
			}
		} else if !errors.As(err, &fe) || !errors.Is(err, ErrTorn) || fe.Offset != offs[whole] || fe.Path != p {
			t.Fatalf("cut at %d, aof-load-truncated no: %v, want a torn frame at %d of %s", cut, err, offs[whole], p)
		}
		got, info := load(t, cfg(dir), t0)
		same(t, orig, got, whole, t0)
		if got.Len(t0) != whole || info.Truncated != cut-offs[whole] {
			t.Fatalf("cut at %d: %d keys, %d bytes cut off; want %d keys, %d bytes", cut, got.Len(t0), info.Truncated, whole, cut-offs[whole])
		}
		if st, _ := os.Stat(p); st.Size() != offs[whole] {
			t.Fatalf("cut at %d: the file is %d bytes after the load, want %d", cut, st.Size(), offs[whole])
		}
		again, _ := load(t, c, t0) // now whole: loads under aof-load-truncated no too
		same(t, orig, again, whole, t0)
	}
}

// TestCorruptMiddle: a byte flipped anywhere in a frame before the last is refused,
// naming the file and the frame's offset, under aof-load-truncated yes too; Check
// finds the same, and its fix cuts the file there so that the frames before load.
func TestCorruptMiddle(t *testing.T) {
	const n = 6
	src := t.TempDir()
	orig, path, offs := framedLog(t, src, n)
	for at := offs[2]; at < offs[3]; at++ {
		dir := copyDir(t, src)
		p := filepath.Join(dir, filepath.Base(path))
		data, _ := os.ReadFile(p)
		data[at] ^= 0x10
		os.WriteFile(p, data, 0o600)
		_, _, err := Load(cfg(dir), newStore(t), t0)
		var fe *FrameError
		if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) || fe.Offset != offs[2] || fe.Path != p {
			t.Fatalf("byte %d flipped: %v, want corruption at %d of %s", at, err, offs[2], p)
		}
		checks, err := Check(filepath.Join(dir, manifestName(DefaultName)), true)
		if err != nil {
			t.Fatal(err)
		}
		c := checks[len(checks)-1]
		if c.Path != p || c.Valid != offs[2] || !c.Fixed || !errors.Is(c.Err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: Check %+v", at, c)
		}
		got, _ := load(t, cfg(dir), t0)
		same(t, orig, got, 2, t0)
		if got.Len(t0) != 2 {
			t.Fatalf("fixed: %d keys, want 2", got.Len(t0))
		}
	}
}

// TestCheckClean: Check of a whole log finds nothing and changes nothing.
func TestCheckClean(t *testing.T) {
	dir := t.TempDir()
	_, path, offs := framedLog(t, dir, 3)
	checks, err := Check(filepath.Join(dir, manifestName(DefaultName)), true)
	if err != nil || len(checks) != 2 {
		t.Fatalf("%+v, %v", checks, err)
	}
	for _, c := range checks {
		if c.Err != nil || c.Fixed || c.Valid != c.Size {
			t.Fatalf("%+v", c)
		}
	}
	if st, _ := os.Stat(path); st.Size() != offs[3] {
		t.Fatal("Check changed a whole file")
	}
}
