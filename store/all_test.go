package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// rule returns a rule on key of kind, limit and window, cost 1.
func rule(key string, kind algo.Kind, limit, window int64) algo.Rule {
	return algo.Rule{Key: []byte(key), Req: request(kind, limit, window)}
}

// doAllByDo is what DoAll must answer, played with Do on another store: every rule as
// PEEK, and only if all admit and none asked for PEEK, every rule for real.
func doAllByDo(t *testing.T, s *Store, rules []algo.Rule, now int64) (bool, []algo.Decision, error) {
	t.Helper()
	ds := make([]algo.Decision, len(rules))
	all, peek := true, false
	for i, rule := range rules {
		r := rule.Req
		peek = peek || r.Peek
		r.Peek = true
		d, err := s.Do(rule.Key, r, now)
		if err != nil {
			return false, nil, err
		}
		ds[i], all = d, all && d.Allowed
	}
	if !all || peek {
		return all, ds, nil
	}
	for i, rule := range rules {
		d, err := s.Do(rule.Key, rule.Req, now)
		if err != nil {
			t.Fatalf("second pass by Do: %v", err)
		}
		ds[i] = d
	}
	return true, ds, nil
}

// fingerprint describes keys in s at now as a caller can see them: kind, TTL, memory,
// and each one's PEEK answer to a request of its kind (a lease key: its TTL says it).
func fingerprint(s *Store, keys []string, now int64) string {
	var b strings.Builder
	for _, key := range keys {
		k := []byte(key)
		kind, ok := s.Type(k, now)
		ttl, _ := s.TTL(k, now)
		mem, _ := s.MemoryUsage(k, now)
		fmt.Fprintf(&b, "%s: %v %v ttl %d mem %d", key, kind, ok, ttl, mem)
		if ok && kind != algo.KindLease {
			r := request(kind, 10, 60*sec)
			r.Peek = true
			d, err := s.Do(k, r, now)
			fmt.Fprintf(&b, " peek %+v %v", d, err)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestDoAllMatchesDo plays random RL.ALL calls on a store with DoAll and on another
// with Do, rule by rule as the contract describes DoAll, and requires the same
// answers and the same keys after every call, with one shard (LOG rules share its
// scratch) and with many.
func TestDoAllMatchesDo(t *testing.T) {
	allKinds := []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken, algo.KindGCRA, algo.KindLeaky}
	for _, shards := range []int{1, 64} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) {
			s := newStore(t, Config{Shards: shards})
			ref := newStore(t, Config{Shards: shards})
			rng := rand.New(rand.NewPCG(uint64(shards), 9))
			var keys []string
			for i := range 12 {
				keys = append(keys, fmt.Sprintf("%s:%d", allKinds[i%len(allKinds)], i))
			}
			now := t0
			for call := range 3000 {
				now += rng.Int64N(200 * ms)
				var rules []algo.Rule
				for _, i := range rng.Perm(len(keys))[:1+rng.IntN(4)] {
					r := rule(keys[i], allKinds[i%len(allKinds)], 1+rng.Int64N(5), (1+rng.Int64N(3))*sec)
					r.Req.Cost = rng.Int64N(3)
					r.Req.Peek = rng.IntN(8) == 0
					rules = append(rules, r)
				}
				ds := make([]algo.Decision, len(rules))
				stats := s.Stats()
				got, err := s.DoAll(rules, ds, now)
				counted := s.Stats()
				want, wantDs, wantErr := doAllByDo(t, ref, rules, now)
				if err != wantErr || got != want {
					t.Fatalf("call %d: DoAll = %v, %v; want %v, %v", call, got, err, want, wantErr)
				}
				for i := range ds {
					if ds[i] != wantDs[i] {
						t.Fatalf("call %d rule %d (%s): %+v, want %+v", call, i, rules[i].Key, ds[i], wantDs[i])
					}
					if ds[i].Allowed {
						stats.Allowed[rules[i].Req.Kind]++
					} else {
						stats.Limited[rules[i].Req.Kind]++
					}
				}
				if counted.Allowed != stats.Allowed || counted.Limited != stats.Limited {
					t.Fatalf("call %d: counted allowed %v limited %v, want each answer once: %v %v",
						call, counted.Allowed, counted.Limited, stats.Allowed, stats.Limited)
				}
				if f, wantF := fingerprint(s, keys, now), fingerprint(ref, keys, now); f != wantF {
					t.Fatalf("call %d: keys\n%s\nwant\n%s", call, f, wantF)
				}
			}
		})
	}
}

// keysInShards returns n keys of distinct shards of s, named prefix and a number.
func keysInShards(s *Store, prefix string, n int) []string {
	seen := map[uint64]bool{}
	var keys []string
	for i := 0; len(keys) < n; i++ {
		key := fmt.Sprint(prefix, i)
		if sh := xxh3.HashString(key) & s.mask; !seen[sh] {
			seen[sh] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// TestDoAllChangesNothingUnlessAllAdmit: a denied call, a PEEK, an error in any rule
// (WRONGTYPE in the third, the same key twice) leave every key as it was.
func TestDoAllChangesNothingUnlessAllAdmit(t *testing.T) {
	s := newStore(t, Config{Shards: 8})
	keys := keysInShards(s, "k", 4)
	a, b, c, tok := keys[0], keys[1], keys[2], keys[3]
	for _, setup := range []algo.Rule{
		rule(a, algo.KindFixed, 10, 60*sec), rule(b, algo.KindLog, 10, 60*sec),
		rule(c, algo.KindFixed, 1, 60*sec), rule(tok, algo.KindToken, 10, 60*sec),
	} {
		if _, err := s.Do(setup.Key, setup.Req, t0); err != nil {
			t.Fatal(err)
		}
	}
	peek := rule(a, algo.KindFixed, 10, 60*sec)
	peek.Req.Peek = true
	tests := []struct {
		name      string
		rules     []algo.Rule
		wantAll   bool
		wantErr   error
		wantFirst int64 // the first rule's remaining when no error: its own would-be answer
	}{
		{"denied by the third", []algo.Rule{rule(a, algo.KindFixed, 10, 60*sec), rule(b, algo.KindLog, 10, 60*sec),
			rule(c, algo.KindFixed, 1, 60*sec)}, false, nil, 8},
		{"PEEK in one rule", []algo.Rule{rule(b, algo.KindLog, 10, 60*sec), peek}, true, nil, 8},
		{"WRONGTYPE in the third", []algo.Rule{rule(a, algo.KindFixed, 10, 60*sec), rule(b, algo.KindLog, 10, 60*sec),
			rule(tok, algo.KindFixed, 10, 60*sec)}, false, ErrWrongType, 0},
		{"new keys, WRONGTYPE in the third", []algo.Rule{rule("new1", algo.KindFixed, 10, 60*sec),
			rule("new2", algo.KindLog, 10, 60*sec), rule(tok, algo.KindFixed, 10, 60*sec)}, false, ErrWrongType, 0},
		{"same key twice", []algo.Rule{rule(a, algo.KindFixed, 10, 60*sec), rule(b, algo.KindFixed, 10, 60*sec),
			rule(a, algo.KindFixed, 10, 60*sec)}, false, ErrSameKey, 0},
		{"key too long", []algo.Rule{rule(a, algo.KindFixed, 10, 60*sec), {Key: make([]byte, maxKeyLen+1),
			Req: request(algo.KindFixed, 1, sec)}}, false, ErrKeyTooLong, 0},
	}
	all := append(keys, "new1", "new2")
	now := t0 + sec
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fingerprint(s, all, now)
			stats := s.Stats()
			ds := make([]algo.Decision, len(tt.rules))
			got, err := s.DoAll(tt.rules, ds, now)
			if got != tt.wantAll || !errors.Is(err, tt.wantErr) {
				t.Fatalf("DoAll = %v, %v; want %v, %v", got, err, tt.wantAll, tt.wantErr)
			}
			if after := fingerprint(s, all, now); after != before {
				t.Fatalf("keys changed:\n%s\nwant\n%s", after, before)
			}
			if err == nil && (!ds[0].Allowed || ds[0].Remaining != tt.wantFirst || ds[0].Write) {
				t.Errorf("first rule: %+v, want allowed, remaining %d, no write", ds[0], tt.wantFirst)
			}
			st := s.Stats()
			counted := 0
			for k := range st.Allowed {
				counted += int(st.Allowed[k] - stats.Allowed[k] + st.Limited[k] - stats.Limited[k])
			}
			// fingerprint's PEEKs count too: one per key of a limiter kind, per fingerprint.
			if want := len(tt.rules) + 4; err == nil && counted != want {
				t.Errorf("%d answers counted, want %d", counted, want)
			}
		})
	}
}

// TestDoAllOOM: under PolicyNoEviction, a call whose second new key finds no room
// answers ErrOOM and leaves nothing: not the first new key, not the existing one.
func TestDoAllOOM(t *testing.T) {
	s := newStore(t, Config{Shards: 1, MaxMemory: 4 * minShardBudget, Policy: PolicyNoEviction})
	var n int
	for ; ; n++ {
		if _, err := s.Do([]byte(fmt.Sprintf("fill%06d", n)), request(algo.KindFixed, 10, 60*sec), t0); err != nil {
			if !errors.Is(err, ErrOOM) {
				t.Fatal(err)
			}
			break
		}
	}
	s.Delete([]byte("fill000001"), t0) // room for exactly one more key, in its slot and chunk
	keys := []string{"fill000000", "new0000001", "new0000002"}
	before := fingerprint(s, keys, t0)
	rules := []algo.Rule{rule(keys[0], algo.KindFixed, 10, 60*sec), rule(keys[1], algo.KindFixed, 10, 60*sec),
		rule(keys[2], algo.KindFixed, 10, 60*sec)}
	ds := make([]algo.Decision, len(rules))
	if ok, err := s.DoAll(rules, ds, t0); ok || !errors.Is(err, ErrOOM) {
		t.Fatalf("DoAll = %v, %v; want ErrOOM", ok, err)
	}
	if after := fingerprint(s, keys, t0); after != before {
		t.Fatalf("keys changed:\n%s\nwant\n%s", after, before)
	}
	if got := s.Len(t0); got != n-1 {
		t.Fatalf("%d keys, want %d", got, n-1)
	}
	// One new key fits, and is created.
	if ok, err := s.DoAll(rules[:2], ds[:2], t0); !ok || err != nil {
		t.Fatalf("DoAll with one new key = %v, %v", ok, err)
	}
}

// TestDoAllStress runs overlapping DoAll calls from many goroutines over keys in
// different shards, each pair in both orders: no deadlock (bounded by a timeout), and
// exact totals. A and C never limit and B allows 500, so B counts exactly 500, A counts
// exactly the admitted (A,B) calls and C the admitted (B,C) calls: all or none.
func TestDoAllStress(t *testing.T) {
	const goroutines, calls, limitB = 16, 150, 500
	s := newStore(t, Config{Shards: 64, MonotonicTime: true})
	keys := keysInShards(s, "stress", 3)
	a := rule(keys[0], algo.KindFixed, 1e9, 3600*sec)
	b := rule(keys[1], algo.KindSlide, limitB, 3600*sec)
	c := rule(keys[2], algo.KindFixed, 1e9, 3600*sec)
	orders := [][]algo.Rule{{a, b}, {b, a}, {b, c}, {c, b}}
	var admittedAB, admittedBC int64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				var ab, bc int64
				ds := make([]algo.Decision, 2)
				for i := range calls {
					o := (g + i) % len(orders)
					ok, err := s.DoAll(orders[o], ds, t0+int64(i)*ms)
					if err != nil {
						t.Error(err)
						return
					}
					if ok && o < 2 {
						ab++
					} else if ok {
						bc++
					}
				}
				mu.Lock()
				admittedAB += ab
				admittedBC += bc
				mu.Unlock()
			})
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("DoAll calls did not finish in 60 s: deadlock")
	}
	st := s.Stats()
	if n := st.Allowed[algo.KindFixed] + st.Limited[algo.KindFixed]; n != goroutines*calls {
		t.Errorf("A's and C's kind counted %d answers, want one per call, %d", n, goroutines*calls)
	}
	at := t0 + calls*ms
	count := func(r algo.Rule) int64 {
		r.Req.Peek, r.Req.Cost = true, 0
		d, err := s.Do(r.Key, r.Req, at)
		if err != nil {
			t.Fatal(err)
		}
		return r.Req.Limit - d.Remaining
	}
	if got := count(b); got != limitB || admittedAB+admittedBC != limitB {
		t.Errorf("B counts %d, admitted %d+%d, want %d", got, admittedAB, admittedBC, limitB)
	}
	if got := count(a); got != admittedAB {
		t.Errorf("A counts %d, want the %d admitted (A,B) calls", got, admittedAB)
	}
	if got := count(c); got != admittedBC {
		t.Errorf("C counts %d, want the %d admitted (B,C) calls", got, admittedBC)
	}
}

// TestDoAllLogRulesShareShard: two RL.LOG rules in one shard share its scratch; each
// must keep its own log, in the first pass's answers and in what the second writes.
func TestDoAllLogRulesShareShard(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	long, short := rule("long", algo.KindLog, 10, 60*sec), rule("short", algo.KindLog, 10, 60*sec)
	for i := range 6 {
		s.Do(long.Key, long.Req, t0+int64(i)*ms)
	}
	s.Do(short.Key, short.Req, t0)
	ds := make([]algo.Decision, 2)
	for call, want := range [][2]int64{{3, 8}, {2, 7}, {1, 6}, {0, 5}} {
		ok, err := s.DoAll([]algo.Rule{long, short}, ds, t0+sec)
		if !ok || err != nil || ds[0].Remaining != want[0] || ds[1].Remaining != want[1] {
			t.Fatalf("call %d: %v %v, remaining %d and %d; want %v", call, ok, err, ds[0].Remaining, ds[1].Remaining, want)
		}
	}
	if ok, _ := s.DoAll([]algo.Rule{short, long}, ds, t0+sec); ok || ds[0].Remaining != 4 || algo.Millis(ds[1].RetryAfter) != 59000 {
		t.Fatalf("long full: %v, %+v", ok, ds)
	}
}
