package aof

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

const t0 = int64(1_700_000_000_000_000) // µs

func newStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.New(store.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// spend makes writes of every kind that writes on keys k0..k(n-1), at now.
func spend(t *testing.T, st *store.Store, n int, now int64) {
	t.Helper()
	kinds := []algo.Kind{algo.KindFixed, algo.KindToken, algo.KindLog, algo.KindGCRA}
	for i := range n {
		key := []byte(fmt.Sprintf("k%d", i))
		if i%5 == 4 {
			if _, err := st.Acquire(key, algo.LeaseRequest{Limit: 3, Duration: 60e6}, now); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r := algo.Request{Kind: kinds[i%4], Limit: 10, Window: 60e6, Rate: 10, Burst: 10, Cost: 1}
		if _, err := st.Do(key, r, now); err != nil {
			t.Fatal(err)
		}
	}
}

// same fails unless b holds a's states for keys k0..k(n-1), at now.
func same(t *testing.T, a, b *store.Store, n int, now int64) {
	t.Helper()
	for i := range n {
		key := []byte(fmt.Sprintf("k%d", i))
		da, oka := a.Digest(key, now)
		db, okb := b.Digest(key, now)
		ta, _ := a.TTL(key, now)
		tb, _ := b.TTL(key, now)
		if oka != okb || da != db || ta != tb {
			t.Fatalf("%s: held %v ttl %d, replayed %v ttl %d, or their states differ", key, oka, ta, okb, tb)
		}
	}
}

func cfg(dir string) Config {
	return Config{Dir: dir, Fsync: FsyncAlways, RewritePercentage: -1}
}

func clock(now int64) func() int64 { return func() int64 { return now } }

// load replays dir into a new store at now.
func load(t *testing.T, c Config, now int64) (*store.Store, LoadInfo) {
	t.Helper()
	st := newStore(t)
	info, found, err := Load(c, st, now)
	if err != nil || !found {
		t.Fatalf("Load: found %v, %v", found, err)
	}
	return st, info
}

// TestReplay: writes of every kind, deletions and a flush, logged and replayed,
// give the same states; replayed later, the same states at that time.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	spend(t, st, 20, t0) // before Open: they go in the first base
	l, err := Open(cfg(dir), st, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	spend(t, st, 50, t0+1e6)
	st.Delete([]byte("k3"), t0+2e6)
	spend(t, st, 50, t0+3e6)
	st.Flush()
	spend(t, st, 40, t0+4e6)
	st.Delete([]byte("k7"), t0+5e6)
	l.WaitDurable(l.End())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{t0 + 5e6, t0 + 30e6, t0 + 70e6} {
		got, _ := load(t, cfg(dir), at)
		same(t, st, got, 50, at)
	}
	got, _ := load(t, cfg(dir), t0+5e6)
	if n := got.Len(t0 + 5e6); n != 39 {
		t.Fatalf("replayed %d keys, want 39", n)
	}
}

// TestReopen: a log opened again appends to its newest increment.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	for round := range 3 {
		l, err := Open(cfg(dir), st, clock(t0))
		if err != nil {
			t.Fatal(err)
		}
		spend(t, st, 10*(round+1), t0+int64(round)*1e6)
		l.Close()
		got, _ := load(t, cfg(dir), t0+3e6)
		same(t, st, got, 30, t0+3e6)
	}
	m, err := readManifest(dir, DefaultName)
	if err != nil || len(m.incrs) != 1 || m.base == nil {
		t.Fatalf("manifest %+v, %v: want one base and one increment", m, err)
	}
}

// TestGroupCommit: under always, many writers' records share syncs, and each has
// its record durable when WaitDurable returns.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	l, err := Open(cfg(dir), st, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := []byte(fmt.Sprintf("w%d-%d", w, i))
				st.Do(key, algo.Request{Kind: algo.KindFixed, Limit: 5, Window: 60e6, Cost: 1}, t0)
				end := l.End()
				l.WaitDurable(end)
				l.mu.Lock()
				durable := l.durable
				l.mu.Unlock()
				if durable < end {
					t.Errorf("WaitDurable(%d) returned at %d", end, durable)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	frames := 0
	last, _ := l.m.lastIncr()
	if _, _, err := readIncr(filepath.Join(dir, last.name), func([]byte) error { frames++; return nil }, func(uint32) {}); err != nil {
		t.Fatal(err)
	}
	if frames >= writers*each {
		t.Fatalf("%d frames for %d writes: no write shared a sync", frames, writers*each)
	}
	t.Logf("%d writes in %d frames", writers*each, frames)
	got, _ := load(t, cfg(dir), t0)
	if n := got.Len(t0); n != writers*each {
		t.Fatalf("replayed %d keys, want %d", n, writers*each)
	}
}

// TestRewrite: a rewrite while writers go on leaves one base and one increment that
// replay to the store's states; the old files are gone.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	l, err := Open(cfg(dir), st, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	spend(t, st, 100, t0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			spend(t, st, 100, t0+int64(i%50)*1000)
		}
	}()
	for range 3 {
		if err := l.RewriteNow(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	l.Close()
	got, _ := load(t, cfg(dir), t0+1e6)
	same(t, st, got, 100, t0+1e6)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files %v: want the manifest, one base, one increment", names)
	}
	if s := l.Status(); s.Rewrites != 3 || !s.LastRewriteOK {
		t.Fatalf("status %+v", s)
	}
}

// TestAutoRewrite: the log grown past the thresholds rewrites itself.
func TestAutoRewrite(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	c := cfg(dir)
	c.RewritePercentage, c.RewriteMinSize = 100, 4096
	l, err := Open(c, st, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	var now int64
	for i := 0; l.Status().Rewrites == 0; i++ {
		if i > 100000 {
			t.Fatal("no rewrite after 100000 rounds of writes")
		}
		now = t0 + int64(i)*61e6 // a new window each round: every call writes
		spend(t, st, 10, now)
		l.WaitDurable(l.End())
	}
	l.Close()
	got, _ := load(t, c, now)
	same(t, st, got, 10, now)
}

// TestLoadNone: no manifest is a first start.
func TestLoadNone(t *testing.T) {
	_, found, err := Load(cfg(t.TempDir()), newStore(t), t0)
	if found || err != nil {
		t.Fatalf("found %v, %v", found, err)
	}
}

// TestBadManifest: a manifest that does not parse, or names a file that is not ours,
// is refused naming the file.
func TestBadManifest(t *testing.T) {
	for _, text := range []string{
		"file x seq 1\n",
		"file x seq a type b\n",
		"file x seq 1 type z\n",
		"file ../x seq 1 type i\n",
		"garbage\n",
		"",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, manifestName(DefaultName)), []byte(text), 0o600)
		_, _, err := Load(cfg(dir), newStore(t), t0)
		if !errors.Is(err, ErrManifest) {
			t.Errorf("manifest %q: %v, want ErrManifest", text, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, manifestName(DefaultName)), []byte("file a.aof seq 1 type i\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "a.aof"), []byte("*2\r\n$3\r\nSET\r\n"), 0o600) // Redis's AOF
	_, _, err := Load(cfg(dir), newStore(t), t0)
	var fe *FrameError
	if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) || fe.Path != filepath.Join(dir, "a.aof") {
		t.Fatalf("a file not ours: %v", err)
	}
}
