package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// states returns every live key's record at now, by key: kind, state words, deadline
// and tail, what a replica must hold equal to its primary.
func states(s *Store, now int64) map[string]string {
	out := map[string]string{}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.each(func(_ uint32, e entry) {
			if e.deadline() > now {
				out[string(sh.key(e))] = string(sh.appendRecord(nil, e))
			}
		})
		sh.mu.Unlock()
	}
	return out
}

// drain copies everything in b from off on and returns it with the new offset.
func drain(t *testing.T, b *Backlog, off int64) ([]byte, int64) {
	t.Helper()
	var out []byte
	buf := make([]byte, 97) // odd, so that records are cut anywhere
	for {
		n, _, err := b.ReadAt(off, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out, off
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
}

// TestReplicaEqualsPrimary: random writes of every kind, leases, RL.ALL, deletions
// and a flush on a primary, its effects applied in pieces cut anywhere on a replica
// with another shard count: the two hold the same states, key by key.
func TestReplicaEqualsPrimary(t *testing.T) {
	primary := newStore(t, Config{Shards: 8, MonotonicTime: true})
	replica := newStore(t, Config{Shards: 4})
	bl := NewBacklog(1<<20, 0)
	primary.SetBacklog(bl)
	ap := replica.NewApplier(0)
	history := NewBacklog(1<<20, 0) // what the replica applied, byte for byte the primary's stream
	ap.SetLog(history)
	rng := rand.New(rand.NewPCG(1, 2))
	off := int64(0)
	now := t0
	for round := range 40 {
		for range 500 {
			now += int64(rng.IntN(3000))
			key := []byte(fmt.Sprintf("k%d", rng.IntN(300)))
			var err error
			switch op := rng.IntN(20); {
			case op == 0:
				primary.Delete(key, now)
			case op == 1:
				_, err = primary.Acquire(key, algo.LeaseRequest{Limit: 3, Duration: 50 * ms}, now)
			case op == 2:
				rules := []algo.Rule{
					{Key: key, Req: request(algo.KindFixed, 5, sec)},
					{Key: []byte("all:" + string(key)), Req: request(algo.KindToken, 5, sec)},
				}
				_, err = primary.DoAll(rules, make([]algo.Decision, 2), now)
			default:
				kind := kinds[rng.IntN(len(kinds))]
				r := request(kind, 1+int64(rng.IntN(10)), int64(1+rng.IntN(200))*ms)
				r.Peek = rng.IntN(10) == 0
				switch rng.IntN(6) {
				case 0: // refunds are writes, replicated as any other
					r.Cost, r.Peek, r.Refund = 0, false, 1+rng.Int64N(5)
				case 1: // and so are slices
					if kind.Sliceable() {
						r = sliceOf(r, 1+rng.Int64N(r.Limit))
					}
				}
				_, err = primary.Do(key, r, now)
			}
			if err != nil && !errors.Is(err, ErrWrongType) {
				t.Fatal(err)
			}
		}
		if round == 20 {
			primary.Flush()
		}
		var data []byte
		data, off = drain(t, bl, off)
		for len(data) > 0 {
			n := min(len(data), 1+rng.IntN(200))
			if _, err := ap.Apply(data[:n], now); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if len(ap.pending) != 0 {
			t.Fatalf("round %d: %d bytes of a record left over", round, len(ap.pending))
		}
		first, end := bl.Offsets()
		hFirst, hEnd := history.Offsets()
		if first != hFirst || end != hEnd {
			t.Fatalf("round %d: the replica's history is at %d-%d, the primary's backlog at %d-%d", round, hFirst, hEnd, first, end)
		}
		sent, _ := drain(t, bl, first)
		kept, _ := drain(t, history, hFirst)
		if !bytes.Equal(sent, kept) {
			t.Fatalf("round %d: the replica's history differs from the primary's backlog", round)
		}
		want, got := states(primary, now), states(replica, now)
		if len(want) == 0 && round != 20 {
			t.Fatalf("round %d: the primary holds no key", round)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: replica holds %d keys, primary %d", round, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("round %d: key %q differs: replica %x, primary %x", round, k, got[k], v)
			}
		}
	}
}

// TestBacklogWraps: a reader behind by more than the ring gets ErrBacklogGone; one
// within it reads the bytes in order across the wrap.
func TestBacklogWraps(t *testing.T) {
	bl := NewBacklog(10, 100)
	bl.mu.Lock()
	bl.append([]byte("abcdefgh"))
	bl.append([]byte("ijklmn"))
	bl.mu.Unlock()
	if first, end := bl.Offsets(); first != 104 || end != 114 {
		t.Fatalf("Offsets = %d, %d, want 104, 114", first, end)
	}
	if _, _, err := bl.ReadAt(103, make([]byte, 4)); !errors.Is(err, ErrBacklogGone) {
		t.Fatalf("ReadAt(103) = %v, want ErrBacklogGone", err)
	}
	if _, _, err := bl.ReadAt(115, make([]byte, 4)); !errors.Is(err, ErrBacklogGone) {
		t.Fatalf("ReadAt(115) = %v, want ErrBacklogGone", err)
	}
	p := make([]byte, 20)
	n, _, err := bl.ReadAt(104, p)
	if err != nil || string(p[:n]) != "efghijklmn" {
		t.Fatalf("ReadAt(104) = %q, %v", p[:n], err)
	}
	n, wake, err := bl.ReadAt(114, p)
	if n != 0 || wake == nil || err != nil {
		t.Fatalf("ReadAt(end) = %d, %v, %v", n, wake, err)
	}
	bl.mu.Lock()
	bl.append([]byte("o"))
	bl.mu.Unlock()
	<-wake // closed by the append
}

// TestApplierRejectsGarbage: a bad record is an error, never a panic, and the records
// before it are stored.
func TestApplierRejectsGarbage(t *testing.T) {
	good := record(byte(algo.KindFixed), "ok", 1, 2, t0+sec)
	for _, bad := range [][]byte{
		{0x0a, 1, 'k'}, // unknown kind
		{byte(algo.KindFixed), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // bad varint
		append(record(byte(algo.KindLog), "l", uint64(t0), 3, t0+sec), 0xff, 0xff, 0xff),         // bad log
	} {
		s := newStore(t, Config{})
		n, err := s.NewApplier(0).Apply(append(append([]byte(nil), good...), bad...), t0)
		if !errors.Is(err, ErrEffectCorrupt) || n != len(good) {
			t.Errorf("Apply(%x) = %d, %v; want %d, ErrEffectCorrupt", bad, n, err, len(good))
		}
		if !s.Exists([]byte("ok"), t0) {
			t.Errorf("the good record before %x was not stored", bad)
		}
	}
}

// TestEmitUnderConcurrency: writers on many goroutines, a reader draining the backlog
// meanwhile (under -race), and the replica ends equal to the primary.
func TestEmitUnderConcurrency(t *testing.T) {
	primary := newStore(t, Config{Shards: 4})
	replica := newStore(t, Config{Shards: 4})
	bl := NewBacklog(1<<22, 0)
	primary.SetBacklog(bl)
	ap := replica.NewApplier(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				key := []byte(fmt.Sprintf("k%d", (i*7+g)%100))
				if _, err := primary.Do(key, request(algo.KindToken, 50, sec), t0+int64(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		off := int64(0)
		buf := make([]byte, 4096)
		for {
			n, wake, err := bl.ReadAt(off, buf)
			if err != nil {
				t.Error(err)
				done <- off
				return
			}
			if _, err := ap.Apply(buf[:n], t0); err != nil {
				t.Error(err)
			}
			off += int64(n)
			if n == 0 {
				select {
				case <-wake:
				case <-stop:
					done <- off
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	off := <-done
	rest, _ := drain(t, bl, off)
	if _, err := ap.Apply(rest, t0); err != nil {
		t.Fatal(err)
	}
	want, got := states(primary, t0+3000), states(replica, t0+3000)
	if len(want) != 100 || len(got) != len(want) {
		t.Fatalf("primary %d keys, replica %d; want 100", len(want), len(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %q differs", k)
		}
	}
}

// A replica upgraded before its primary applies the primary's records in the older
// format of its full sync: here a version-2 log, uvarint steps, which the store now
// codes otherwise. It decides as a store that took the calls itself.
func TestApplierOfOlderPrimary(t *testing.T) {
	v2 := []byte{0x00, 0xd0, 0x0f, 0xa0, 0x1f} // entries at base, +1 ms, +3 ms: uvarint(step<<1) each
	rec := append(record(byte(algo.KindLog), "log", uint64(t0), uint64(len(v2)), t0+3*ms+60*sec), v2...)
	replica, built := newStore(t, Config{}), newStore(t, Config{})
	if n, err := replica.NewApplier(varintLogVersion).Apply(rec, t0+3*ms); err != nil || n != len(rec) {
		t.Fatalf("Apply of a version-2 log = %d, %v; want %d, nil", n, err, len(rec))
	}
	r := request(algo.KindLog, 5, 60*sec)
	for _, at := range []int64{t0, t0 + ms, t0 + 3*ms} {
		if _, err := built.Do([]byte("log"), r, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(4) {
		now := t0 + 4*ms + i*ms
		got, err1 := replica.Do([]byte("log"), r, now)
		want, err2 := built.Do([]byte("log"), r, now)
		if got != want || err1 != nil || err2 != nil {
			t.Fatalf("call %d: %+v, %v; want %+v, %v", i, got, err1, want, err2)
		}
	}
}
