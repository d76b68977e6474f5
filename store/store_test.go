package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

const (
	ms  = int64(1000)
	sec = 1000 * ms
)

// t0 is an arbitrary present, 2026-01-01T00:00:00.123456Z, in µs.
const t0 = int64(1767225600123456)

var kinds = []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken, algo.KindGCRA, algo.KindLeaky, algo.KindThrottle}

// request returns a valid request of kind with limit and window, cost 1.
func request(kind algo.Kind, limit, window int64) algo.Request {
	r := algo.Request{Kind: kind, Limit: limit, Window: window, Cost: 1}
	switch kind {
	case algo.KindToken, algo.KindThrottle:
		r.Rate = limit
	case algo.KindGCRA:
		r.Burst = limit
	case algo.KindLeaky:
		r.Queue = limit - 1 // so that a burst of limit calls is admitted, as by the others
	}
	return r
}

func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		cfg        Config
		wantShards int
		wantErr    string
	}{
		{Config{}, DefaultShards, ""},
		{Config{Shards: 1, MaxLogLimit: 1}, 1, ""},
		{Config{Shards: 1024, MaxLogLimit: maxLogLimit}, 1024, ""},
		{Config{Shards: 48}, 0, "store: Shards must be a power of two between 1 and 65536, got 48"},
		{Config{Shards: -4}, 0, "store: Shards must be a power of two between 1 and 65536, got -4"},
		{Config{Shards: 1 << 17}, 0, "store: Shards must be a power of two between 1 and 65536, got 131072"},
		{Config{MaxLogLimit: -1}, 0, "store: MaxLogLimit must be between 1 and 10000000, got -1"},
		{Config{MaxLogLimit: maxLogLimit + 1}, 0, "store: MaxLogLimit must be between 1 and 10000000, got 10000001"},
	}
	for _, tt := range tests {
		s, err := New(tt.cfg)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("New(%+v): %v", tt.cfg, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("New(%+v) = %v, want error %q", tt.cfg, err, tt.wantErr)
		case tt.wantErr == "" && len(s.shards) != tt.wantShards:
			t.Errorf("New(%+v) has %d shards, want %d", tt.cfg, len(s.shards), tt.wantShards)
		}
	}
}

// model is what the store must behave like: each key's state as the algorithms left
// it, kept in plain Go values, gone at its FreshAt.
type model struct {
	keys map[string]*modelKey
}

type modelKey struct {
	kind    algo.Kind
	a, b    uint64 // every kind but RL.LOG, as codec.go packs them
	log     []algo.LogEntry
	freshAt int64
}

func (m *model) get(key string, now int64) *modelKey {
	k := m.keys[key]
	if k != nil && k.freshAt <= now {
		delete(m.keys, key)
		return nil
	}
	return k
}

func (m *model) do(key string, r algo.Request, now int64) (algo.Decision, error) {
	k := m.get(key, now)
	if k != nil && k.kind != r.Kind {
		return algo.Decision{}, ErrWrongType
	}
	if k == nil {
		k = &modelKey{kind: r.Kind}
	}
	var d algo.Decision
	next := *k
	if r.Kind == algo.KindLog {
		next.log, d = algo.Log(slices.Clone(k.log), r, now)
	} else {
		next.a, next.b, d, _ = decide(r, k.a, k.b, now)
	}
	if d.Write {
		next.freshAt = d.FreshAt
		if d.FreshAt <= now {
			delete(m.keys, key)
		} else {
			m.keys[key] = &next
		}
	}
	return d, nil
}

// checker runs the same calls on a Store and a model and fails on any difference.
type checker struct {
	t *testing.T
	s *Store
	m model
}

func newChecker(t *testing.T, cfg Config) *checker {
	return &checker{t: t, s: newStore(t, cfg), m: model{keys: map[string]*modelKey{}}}
}

func (c *checker) do(key string, r algo.Request, now int64) algo.Decision {
	c.t.Helper()
	got, gotErr := c.s.Do([]byte(key), r, now)
	want, wantErr := c.m.do(key, r, now)
	if got != want || gotErr != wantErr {
		c.t.Fatalf("Do(%q, %+v, t0%+d) = %+v, %v; want %+v, %v", key, r, now-t0, got, gotErr, want, wantErr)
	}
	c.check(key, now)
	return got
}

// check compares what the store says about key with the model.
func (c *checker) check(key string, now int64) {
	c.t.Helper()
	k := c.m.get(key, now)
	gotKind, gotOK := c.s.Type([]byte(key), now)
	gotTTL, ttlOK := c.s.TTL([]byte(key), now)
	exists := c.s.Exists([]byte(key), now)
	if k == nil {
		if gotOK || ttlOK || exists {
			c.t.Fatalf("key %q at t0%+d: Type %v %v, TTL %d %v, Exists %v; want absent", key, now-t0, gotKind, gotOK, gotTTL, ttlOK, exists)
		}
		return
	}
	if !gotOK || gotKind != k.kind || !ttlOK || gotTTL != k.freshAt-now || !exists {
		c.t.Fatalf("key %q at t0%+d: Type %v %v, TTL %d %v, Exists %v; want %v, TTL %d", key, now-t0, gotKind, gotOK, gotTTL, ttlOK, exists, k.kind, k.freshAt-now)
	}
}

func TestDoMatchesModel(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			c := newChecker(t, Config{Shards: 4})
			rng := rand.New(rand.NewPCG(uint64(kind), 7))
			now := t0
			for range 20000 {
				key := fmt.Sprintf("user:%d", rng.IntN(20))
				r := request(kind, 1+rng.Int64N(20), (1+rng.Int64N(500))*ms)
				r.Cost = rng.Int64N(3)
				r.Peek = rng.IntN(10) == 0
				if rng.IntN(5) == 0 { // a refund: what the calls spent given back, in part or whole
					r.Cost, r.Peek, r.Refund = 0, false, 1+rng.Int64N(2*r.Limit)
				}
				if kind == algo.KindThrottle {
					r.Window = r.Window / ms * sec // CL.THROTTLE's period is whole seconds
				}
				now += rng.Int64N(30 * ms)
				c.do(key, r, now)
			}
			want := 0
			for _, k := range c.m.keys {
				if k.freshAt > now {
					want++
				}
			}
			if got := c.s.Len(now); got != want || want == 0 {
				t.Fatalf("Len = %d, want %d (> 0)", got, want)
			}
		})
	}
}

// TestLogMovesBetweenClasses grows one log to thousands of entries and lets it drain:
// the log moves up and down the size classes and must stay intact.
func TestLogMovesBetweenClasses(t *testing.T) {
	c := newChecker(t, Config{Shards: 1})
	r := request(algo.KindLog, 5000, 10*sec)
	now := t0
	for i := range 12000 {
		r.Cost = 1 + int64(i%5/4)*1000 // mostly 1, sometimes 1000 (the costly encoding)
		c.do("log", r, now)
		now += int64(1 + i%3*700)
	}
	for range 200 {
		now += 97 * ms
		r.Cost = 0
		c.do("log", r, now)
		r.Peek = true
		r.Cost = 1
		c.do("log", r, now)
		r.Peek = false
		c.do("log", r, now) // one entry in, the oldest ones out
	}
	sh := &c.s.shards[0]
	if live := sh.live; live != 1 {
		t.Fatalf("live = %d", live)
	}
}

func TestWrongType(t *testing.T) {
	for _, stored := range kinds {
		for _, asked := range kinds {
			if stored == asked {
				continue
			}
			s := newStore(t, Config{})
			if _, err := s.Do([]byte("k"), request(stored, 10, sec), t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Do([]byte("k"), request(asked, 10, sec), t0); err != ErrWrongType {
				t.Errorf("%v then %v: err = %v, want ErrWrongType", stored, asked, err)
			}
			if kind, _ := s.Type([]byte("k"), t0); kind != stored {
				t.Errorf("%v then %v: Type = %v", stored, asked, kind)
			}
		}
	}
}

func TestKeyManagement(t *testing.T) {
	s := newStore(t, Config{})
	fixed := request(algo.KindFixed, 10, 10*sec) // fresh at the next multiple of 10 s
	now := t0
	end := (now/(10*sec) + 1) * 10 * sec
	for _, key := range []string{"a", "b", "", strings.Repeat("x", 100)} {
		if _, err := s.Do([]byte(key), fixed, now); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Exists a", s.Exists([]byte("a"), now), true},
		{"Exists empty key", s.Exists([]byte(""), now), true},
		{"Exists c", s.Exists([]byte("c"), now), false},
		{"Type b", fmt.Sprint(s.Type([]byte("b"), now)), "rl.fixed true"},
		{"Type c", fmt.Sprint(s.Type([]byte("c"), now)), "none false"},
		{"TTL a", fmt.Sprint(s.TTL([]byte("a"), now)), fmt.Sprint(end-now, true)},
		{"TTL c", fmt.Sprint(s.TTL([]byte("c"), now)), "0 false"},
		{"Len", s.Len(now), 4},
		{"Delete a", s.Delete([]byte("a"), now), true},
		{"Delete a again", s.Delete([]byte("a"), now), false},
		{"Exists a after Delete", s.Exists([]byte("a"), now), false},
		{"Len after Delete", s.Len(now), 3},
		{"Exists b 1µs before fresh", s.Exists([]byte("b"), end-1), true},
		{"Exists b when fresh", s.Exists([]byte("b"), end), false},
		{"Len when fresh", s.Len(end), 0},
		{"Stats.Keys", s.Stats().Keys, 0},
		{"Stats.Expired", s.Stats().Expired, uint64(3)},
		{"Stats.Allowed", s.Stats().Allowed[algo.KindFixed], uint64(4)},
	}
	for _, tt := range tests {
		if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestDoRejects(t *testing.T) {
	s := newStore(t, Config{MaxLogLimit: 100})
	tests := []struct {
		name string
		key  []byte
		r    algo.Request
		want error
	}{
		{"log limit above the max", []byte("k"), request(algo.KindLog, 101, sec), ErrLogLimit},
		{"log limit at the max", []byte("k"), request(algo.KindLog, 100, sec), nil},
		{"key too long", make([]byte, maxKeyLen+1), request(algo.KindFixed, 1, sec), ErrKeyTooLong},
		{"slice on RL.LOG", []byte("s"), sliceOf(request(algo.KindLog, 10, sec), 3), ErrSliceKind},
		{"slice on RL.LEAKY", []byte("s"), sliceOf(request(algo.KindLeaky, 10, sec), 3), ErrSliceKind},
		{"slice on CL.THROTTLE", []byte("s"), sliceOf(request(algo.KindThrottle, 10, sec), 3), ErrSliceKind},
	}
	for _, tt := range tests {
		if _, err := s.Do(tt.key, tt.r, t0); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if s.Exists([]byte("s"), t0) {
		t.Error("a refused slice created its key")
	}
}

// sliceOf is r as a slice of n.
func sliceOf(r algo.Request, n int64) algo.Request {
	r.Cost, r.Slice = 0, n
	return r
}

func TestExpiryRemovesAtFreshAt(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			s := newStore(t, Config{Shards: 2})
			r := request(kind, 3, 2*sec)
			var freshAt []int64
			for i := range 50 {
				d, err := s.Do([]byte(fmt.Sprint("k", i)), r, t0+int64(i)*100)
				if err != nil || !d.Write {
					t.Fatalf("Do: %+v, %v", d, err)
				}
				freshAt = append(freshAt, d.FreshAt)
			}
			last := slices.Max(freshAt)
			times := []int64{slices.Min(freshAt) - 1, slices.Min(freshAt), last - 1}
			slices.Sort(times) // fixed and slide windows end together: min = last
			for _, at := range times {
				want := 0
				for _, f := range freshAt {
					if f > at {
						want++
					}
				}
				if got := s.Len(at); got != want {
					t.Fatalf("Len(t0%+d) = %d, want %d", at-t0, got, want)
				}
			}
			left := 0
			for _, f := range freshAt {
				if f > times[len(times)-1] {
					left++
				}
			}
			if n := s.Expire(last); n != left {
				t.Fatalf("Expire(last FreshAt) removed %d, want %d", n, left)
			}
			st := s.Stats()
			if st.Keys != 0 || st.Expired != 50 {
				t.Fatalf("Stats = %+v", st)
			}
			for i := range s.shards { // every chunk page went back: nothing is live
				for _, cl := range s.shards[i].chunks.classes {
					if len(cl.pages) != 0 {
						t.Fatalf("class %d keeps %d pages", cl.size, len(cl.pages))
					}
				}
			}
		})
	}
}

// TestManyKeysTotals runs 100k random keys through every algorithm and checks that
// the counters and the key count add up.
func TestManyKeysTotals(t *testing.T) {
	s := newStore(t, Config{})
	rng := rand.New(rand.NewPCG(3, 4))
	var allowed, limited [kindCount]uint64
	live := map[string]int64{} // key → FreshAt
	var lastFresh int64
	now := t0
	for i := range 100000 {
		kind := kinds[rng.IntN(len(kinds))]
		key := fmt.Sprintf("%s:%08x", kind, rng.Uint32())
		r := request(kind, 1+rng.Int64N(3), (1+rng.Int64N(60))*sec)
		d, err := s.Do([]byte(key), r, now)
		if err == ErrWrongType {
			continue // a key already drawn for another kind; vanishingly rare
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed[kind]++
		} else {
			limited[kind]++
		}
		if d.Write {
			live[key] = d.FreshAt
			lastFresh = max(lastFresh, d.FreshAt)
		}
		if i%1000 == 0 {
			now += 50 * ms
		}
	}
	st := s.Stats()
	if st.Allowed != allowed || st.Limited != limited {
		t.Fatalf("Stats allowed %v limited %v, want %v %v", st.Allowed, st.Limited, allowed, limited)
	}
	for _, at := range []int64{now, now + 30*sec, lastFresh - 1, lastFresh} {
		want := 0
		for _, freshAt := range live {
			if freshAt > at {
				want++
			}
		}
		if got := s.Len(at); got != want {
			t.Fatalf("Len(now%+d) = %d, want %d", at-now, got, want)
		}
	}
	if st := s.Stats(); st.Keys != 0 || st.Expired != uint64(len(live)) {
		t.Fatalf("Stats after all fresh: %+v, want 0 keys, %d expired", st, len(live))
	}
}

// TestAtomicity hits one key from 64 goroutines at one instant: exactly what a
// serial run admits may pass, for every algorithm.
func TestAtomicity(t *testing.T) {
	const goroutines, calls, limit = 64, 50, 1000
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			r := request(kind, limit, 3600*sec)
			serial := newStore(t, Config{})
			want := 0
			for range goroutines * calls {
				if d, _ := serial.Do([]byte("k"), r, t0); d.Allowed {
					want++
				}
			}
			if want < limit || want > limit+1 { // CL.THROTTLE admits max_burst+1
				t.Fatalf("a serial run admitted %d, want the limit %d", want, limit)
			}
			s := newStore(t, Config{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			got := 0
			for range goroutines {
				wg.Go(func() {
					n := 0
					for range calls {
						d, err := s.Do([]byte("k"), r, t0)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							n++
						}
					}
					mu.Lock()
					got += n
					mu.Unlock()
				})
			}
			wg.Wait()
			if got != want {
				t.Fatalf("admitted %d, want %d", got, want)
			}
		})
	}
}

func TestMemoryUsage(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	key16 := []byte("0123456789abcdef")
	if _, err := s.Do(key16, request(algo.KindToken, 10, sec), t0); err != nil {
		t.Fatal(err)
	}
	// 40 (a bucket record with 21 bytes of key room) + the index's 16 buckets and padding
	// over 1 key + 16/16 (the group's wheel id)
	table := minBuckets*idxBucket + idxPad
	if got, ok := s.MemoryUsage(key16, t0); !ok || got != int64(40+table+1) {
		t.Fatalf("MemoryUsage = %d, %v; want %d", got, ok, 40+table+1)
	}
	// A key too long for any record's room: a 40-byte record and a chunk.
	long := bytes.Repeat([]byte("k"), maxInlineKey+1)
	s.Do(long, request(algo.KindToken, 10, sec), t0)
	want := 40 + classSizes[classFor(len(long))] + (table+1)/2 + 1
	if got, ok := s.MemoryUsage(long, t0); !ok || got != int64(want) {
		t.Fatalf("MemoryUsage of a %d-byte key = %d, %v; want %d", len(long), got, ok, want)
	}
	if _, ok := s.MemoryUsage([]byte("absent"), t0); ok {
		t.Fatal("MemoryUsage of an absent key")
	}
	r := request(algo.KindLog, 100, 60*sec)
	for i := range 100 {
		if _, err := s.Do([]byte("log"), r, t0+int64(i)*600*ms); err != nil {
			t.Fatal(err)
		}
	}
	// 100 steps of 600 ms: a header byte, then 21 bits for each entry but the first
	// (k = 18: q = 2); the token key has gone, so this key has the 16 buckets to itself.
	want = 40 + classSizes[classFor(len("log")+1+(99*21+7)/8)] + table + 1
	if got, _ := s.MemoryUsage([]byte("log"), t0+99*600*ms); got != int64(want) {
		t.Fatalf("MemoryUsage of a 100-entry log = %d, want %d", got, want)
	}
}

func TestFlush(t *testing.T) {
	s := newStore(t, Config{})
	for i := range 1000 {
		if _, err := s.Do(fmt.Appendf(nil, "k%d", i), request(algo.KindGCRA, 10, sec), t0); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	if n := s.Len(t0); n != 0 {
		t.Fatalf("Len after Flush = %d", n)
	}
	empty := newStore(t, Config{}).Stats().Bytes // the wheels' bucket heads
	if st := s.Stats(); st.Bytes != empty || st.Allowed[algo.KindGCRA] != 1000 {
		t.Fatalf("Stats after Flush = %+v", st)
	}
	if d, _ := s.Do([]byte("k1"), request(algo.KindGCRA, 10, sec), t0); d.Remaining != 9 {
		t.Fatalf("k1 after Flush: %+v, want a fresh key", d)
	}
}

// TestExpireReleasesEmptyShards checks that memory follows the keys down: once every
// key has become fresh, Expire gives back each shard's slab, index, wheel and pages, and
// the shards work again after.
func TestExpireReleasesEmptyShards(t *testing.T) {
	s := newStore(t, Config{})
	empty := s.Stats().Bytes
	var buf [16]byte
	for i := range 20_000 {
		if _, err := s.Do(key16(&buf, i), request(algo.KindFixed, 10, sec), t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Keys != 20_000 || st.Bytes < 20_000*50 {
		t.Fatalf("loaded: %d keys, %d bytes", st.Keys, st.Bytes)
	}
	later := t0 + 2*sec // every window has ended
	if n := s.Expire(later); n != 20_000 {
		t.Fatalf("Expire removed %d keys, want 20000", n)
	}
	if got := s.Stats().Bytes; got != empty {
		t.Fatalf("Stats.Bytes after every key went: %d, want %d (empty)", got, empty)
	}
	for i := range 1000 {
		if d, err := s.Do(key16(&buf, i), request(algo.KindFixed, 10, sec), later); err != nil || d.Remaining != 9 {
			t.Fatalf("key %d after release: %+v, %v", i, d, err)
		}
	}
	if n := s.Len(later); n != 1000 {
		t.Fatalf("Len = %d after 1000 new keys", n)
	}
}

// scanAll runs a whole scan and returns its keys as strings.
func scanAll(s *Store, count int, match string, kind algo.Kind, now int64) []string {
	var pattern []byte
	if match != "" {
		pattern = []byte(match)
	}
	var keys []string
	cursor := uint64(0)
	for {
		next, batch := s.Scan(cursor, count, pattern, kind, now)
		for _, k := range batch {
			keys = append(keys, string(k))
		}
		if next == 0 {
			return keys
		}
		cursor = next
	}
}

func TestScan(t *testing.T) {
	s := newStore(t, Config{Shards: 8})
	var all []string
	var freshAt []int64
	for i := range 300 {
		kind := kinds[i%2] // fixed and slide
		key := fmt.Sprintf("user:%03d", i)
		d, err := s.Do([]byte(key), request(kind, 10, (10+int64(i))*sec), t0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, key)
		freshAt = append(freshAt, d.FreshAt)
	}
	later := slices.Sorted(slices.Values(freshAt))[100]
	tests := []struct {
		name  string
		count int
		match string
		kind  algo.Kind
		now   int64
		want  func(i int, key string) bool
	}{
		{"all, count 1", 1, "", 0, t0, func(int, string) bool { return true }},
		{"all, count 0 (default)", 0, "", 0, t0, func(int, string) bool { return true }},
		{"all, count 1000", 1000, "", 0, t0, func(int, string) bool { return true }},
		{"match", 7, "user:1?5", 0, t0, func(_ int, k string) bool { return k[5] == '1' && k[7] == '5' }},
		{"match and type", 7, "user:[0-1]*", algo.KindSlide, t0, func(i int, k string) bool { return k[5] <= '1' && i%2 == 1 }},
		{"type", 50, "", algo.KindFixed, t0, func(i int, _ string) bool { return i%2 == 0 }},
		{"fresh keys left out", 50, "", 0, later, func(i int, _ string) bool { return freshAt[i] > later }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			for i, k := range all {
				if tt.want(i, k) {
					want = append(want, k)
				}
			}
			got := scanAll(s, tt.count, tt.match, tt.kind, tt.now)
			slices.Sort(got)
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("got %d keys %v, want %d %v", len(got), got, len(want), want)
			}
		})
	}
}

// TestScanUnderChurn scans while other goroutines add and remove keys: every key
// present for the whole scan must come back exactly once, and nothing else but the
// churning keys.
func TestScanUnderChurn(t *testing.T) {
	s := newStore(t, Config{Shards: 4})
	r := request(algo.KindToken, 10, 3600*sec)
	stable := map[string]bool{}
	for i := range 2000 {
		key := fmt.Sprintf("stable:%d", i)
		stable[key] = true
		if _, err := s.Do([]byte(key), r, t0); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Appendf(nil, "churn:%d", rng.IntN(5000))
				if rng.IntN(2) == 0 {
					s.Do(key, r, t0)
				} else {
					s.Delete(key, t0)
				}
			}
		})
	}
	for range 20 {
		seen := map[string]int{}
		for _, k := range scanAll(s, 17, "", 0, t0) {
			seen[k]++
			if !stable[k] && !strings.HasPrefix(k, "churn:") {
				t.Errorf("scan returned %q", k)
			}
		}
		for k := range stable {
			if seen[k] != 1 {
				t.Errorf("%q returned %d times", k, seen[k])
			}
		}
	}
	close(stop)
	wg.Wait()
}

func TestScanCursorOutOfRange(t *testing.T) {
	s := newStore(t, Config{Shards: 2})
	if _, err := s.Do([]byte("k"), request(algo.KindFixed, 1, sec), t0); err != nil {
		t.Fatal(err)
	}
	for _, cursor := range []uint64{2 << 32, math.MaxUint64, 1<<32 | uint64(len(slabClasses))<<slotClassShift} {
		if next, keys := s.Scan(cursor, 10, nil, 0, t0); next != 0 || len(keys) != 0 {
			t.Errorf("Scan(%#x) = %#x, %q", cursor, next, keys)
		}
	}
}

func TestScanReturnsCopies(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	if _, err := s.Do([]byte("key"), request(algo.KindFixed, 1, sec), t0); err != nil {
		t.Fatal(err)
	}
	_, keys := s.Scan(0, 10, nil, 0, t0)
	keys[0][0] = 'X'
	if _, got := s.Scan(0, 10, nil, 0, t0); !bytes.Equal(got[0], []byte("key")) {
		t.Fatalf("the store's key changed to %q", got[0])
	}
}

// TestRefund: a refund on an absent key creates nothing and sends nothing to the
// backlog; one that gives back everything removes the key, and the replica's copy
// with it; refunds are not counted as calls.
func TestRefund(t *testing.T) {
	for _, kind := range kinds {
		s := newStore(t, Config{Shards: 1})
		bl := NewBacklog(1<<16, 0)
		s.SetBacklog(bl)
		key := []byte("r")
		r := request(kind, 5, sec)
		if kind == algo.KindThrottle {
			r.Limit = 4 // max_burst: 5 at once
		}
		back := r
		back.Cost, back.Refund = 0, 3
		if d, err := s.Do(key, back, t0); err != nil || d.Write || s.Exists(key, t0) {
			t.Fatalf("%v: refund on an absent key = %+v, %v; exists %v", kind, d, err, s.Exists(key, t0))
		}
		if _, end := bl.Offsets(); end != 0 {
			t.Fatalf("%v: a refund that changed nothing sent %d bytes", kind, end)
		}
		r.Cost = 4
		spent, _ := s.Do(key, r, t0)
		d, err := s.Do(key, back, t0)
		if err != nil || !d.Write || d.Remaining != spent.Remaining+3 {
			t.Fatalf("%v: refund 3 of 4 = %+v, %v; want remaining %d", kind, d, err, spent.Remaining+3)
		}
		back.Refund = 100
		replica := newStore(t, Config{Shards: 2})
		_, end := bl.Offsets()
		data, _ := drain(t, bl, 0)
		if _, err := replica.NewApplier(0).Apply(data, t0); err != nil || !replica.Exists(key, t0) {
			t.Fatalf("%v: replica after %d bytes: %v, exists %v", kind, end, err, replica.Exists(key, t0))
		}
		if d, _ = s.Do(key, back, t0); !d.Write || s.Exists(key, t0) {
			t.Fatalf("%v: refund of all = %+v, key still there: %v", kind, d, s.Exists(key, t0))
		}
		data, _ = drain(t, bl, end)
		if _, err := replica.NewApplier(0).Apply(data, t0); err != nil || replica.Exists(key, t0) {
			t.Fatalf("%v: the replica keeps the key refunded whole (%v)", kind, err)
		}
		if st := s.Stats(); st.Allowed[kind] != 1 || st.Limited[kind] != 0 {
			t.Fatalf("%v: Stats count %d allowed, %d limited; want the one call", kind, st.Allowed[kind], st.Limited[kind])
		}
	}
}

// TestSliceConcurrent: 32 goroutines take slices of random sizes on one key at once,
// in rounds at moments moving forward by random steps. What the store grants never
// passes what the algorithm admits: per window at most the limit (RL.FIXED, RL.SLIDE),
// and since the first round at most capacity + rate × elapsed (RL.TOKEN, RL.GCRA).
// Partial slices are exact: RL.FIXED grants each window min(limit, what was asked).
func TestSliceConcurrent(t *testing.T) {
	const goroutines, perRound, rounds, limit = 32, 4, 200, 100
	window := 50 * ms
	for _, kind := range []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindToken, algo.KindGCRA} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newStore(t, Config{MonotonicTime: true})
			rng := rand.New(rand.NewPCG(uint64(kind), 38))
			base := nextWindow(window)
			now := base
			granted, asked := map[int64]int64{}, map[int64]int64{}
			var total int64
			for range rounds {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						var got, want int64
						for i := range perRound {
							n := 1 + int64((g*7+i*13)%limit)
							d, err := s.Do([]byte("k"), sliceOf(request(kind, limit, window), n), now)
							if err != nil || d.Granted < 0 || d.Granted > n {
								t.Errorf("slice of %d: granted %d, %v", n, d.Granted, err)
								return
							}
							got, want = got+d.Granted, want+n
						}
						mu.Lock()
						granted[now/window] += got
						asked[now/window] += want
						total += got
						mu.Unlock()
					})
				}
				wg.Wait()
				bound := int64(limit) // per window
				sum := granted[now/window]
				if kind == algo.KindToken || kind == algo.KindGCRA {
					bound, sum = limit+(now-base)*limit/window, total // rate limit per window
				}
				if sum > bound {
					t.Fatalf("at +%d µs: %d granted, at most %d", now-base, sum, bound)
				}
				now += rng.Int64N(window / 3)
			}
			if kind != algo.KindFixed {
				return
			}
			for w, g := range granted {
				if g != min(limit, asked[w]) {
					t.Fatalf("window %d: granted %d of %d asked", w, g, asked[w])
				}
			}
		})
	}
}

// nextWindow is the first moment of a window of w at or after t0.
func nextWindow(w int64) int64 { return (t0/w + 1) * w }
