package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

func TestInternPrefixRefuses(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	for _, p := range []string{"", "a=", "abc", "rl:a=b=", "=rl:", strings.Repeat("x", maxPrefixLen) + "="} {
		if err := s.InternPrefix([]byte(p)); !errors.Is(err, ErrPrefix) {
			t.Errorf("InternPrefix(%.20q) = %v, want ErrPrefix", p, err)
		}
	}
	for i := range MaxPrefixes {
		if err := s.InternPrefix(fmt.Appendf(nil, "p%d=", i)); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := s.InternPrefix([]byte("p0=")); err != nil {
		t.Fatalf("interning a prefix again: %v", err)
	}
	if err := s.InternPrefix([]byte("one-more=")); !errors.Is(err, ErrPrefixes) {
		t.Fatalf("prefix %d: %v, want ErrPrefixes", MaxPrefixes+1, err)
	}
}

// prefixKeys are keys with an interned prefix (rests of every length up to past a
// record's room), with a prefix not interned, and without '='.
func prefixKeys(rng *rand.Rand) string {
	rest := strings.Repeat("v", rng.IntN(50)) + fmt.Sprint(rng.IntN(8))
	switch rng.IntN(4) {
	case 0:
		return "rl:d:fixed/1s:user=" + rest
	case 1:
		return "rl:d:token/1s:k=" + rest
	case 2:
		return "rl:other=" + rest
	}
	return "plain:" + rest
}

// TestInternedKeysMatchModel runs the model check of TestDoMatchesModel over keys of
// which some start with interned prefixes: every answer, TYPE and TTL as the model's.
func TestInternedKeysMatchModel(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			c := newChecker(t, Config{Shards: 2})
			for _, p := range []string{"rl:d:fixed/1s:user=", "rl:d:token/1s:k="} {
				if err := c.s.InternPrefix([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(kind), 11))
			now := t0
			for range 20000 {
				r := request(kind, 1+rng.Int64N(20), (1+rng.Int64N(500))*ms)
				r.Cost = rng.Int64N(3)
				if kind == algo.KindThrottle {
					r.Window = r.Window / ms * sec
				}
				now += rng.Int64N(30 * ms)
				c.do(prefixKeys(rng), r, now)
			}
			var want []string
			for k, v := range c.m.keys {
				if v.freshAt > now {
					want = append(want, k)
				}
			}
			got := scanAll(c.s, 7, "", 0, now)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("SCAN = %q\nwant %q", got, want)
			}
		})
	}
}

// TestInternedKeysLeaveWhole fills a store with interned keys past several index
// growths, and checks that SCAN, MATCH, a snapshot, DUMP and RESTORE see whole keys,
// and that a store without the prefixes loads the snapshot to the same keys.
func TestInternedKeysLeaveWhole(t *testing.T) {
	const n = 20000
	s := newStore(t, Config{Shards: 4})
	prefix := "rl:bench:fixed/3600s:user="
	if err := s.InternPrefix([]byte(prefix)); err != nil {
		t.Fatal(err)
	}
	r := request(algo.KindFixed, 10, 3600*sec)
	for i := range n {
		if _, err := s.Do(fmt.Appendf(nil, "%sm%d", prefix, i), r, t0); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(scanAll(s, 100, prefix+"m1*", 0, t0)); got != 11111 {
		t.Fatalf("SCAN MATCH %sm1* found %d keys, want 11111", prefix, got)
	}
	var snap bytes.Buffer
	if _, err := s.WriteSnapshot(&snap, t0); err != nil {
		t.Fatal(err)
	}
	plain := newStore(t, Config{Shards: 4})
	if _, err := plain.ReadSnapshot(bytes.NewReader(snap.Bytes()), t0); err != nil {
		t.Fatal(err)
	}
	a, b := scanAll(s, 100, "", 0, t0), scanAll(plain, 100, "", 0, t0)
	slices.Sort(a)
	slices.Sort(b)
	if len(a) != n || !slices.Equal(a, b) || !strings.HasPrefix(a[0], prefix) {
		t.Fatalf("interned store has %d keys (%.40q…), the plain one loaded from its snapshot %d", len(a), a[0], len(b))
	}
	key := []byte(prefix + "m42")
	payload, ok := s.Dump(key, t0)
	if !ok {
		t.Fatal("DUMP found no key")
	}
	if err := s.Restore(key, payload, 0, true, t0); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Do(key, r, t0); err != nil || d.Remaining != 8 {
		t.Fatalf("after RESTORE: %+v, %v; want 8 remaining", d, err)
	}
	if s.Stats().Bytes >= plain.Stats().Bytes {
		t.Fatalf("interned keys take %d B, as many plain ones %d", s.Stats().Bytes, plain.Stats().Bytes)
	}
	if !s.Delete(key, t0) || s.Exists(key, t0) || s.Len(t0) != n-1 {
		t.Fatal("DEL of an interned key")
	}
}
