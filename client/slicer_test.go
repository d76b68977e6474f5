package client_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// newSlicer is a Slicer on c, closed when t ends.
func newSlicer(t testing.TB, c *client.Client, opts client.SliceOptions) *client.Slicer {
	s, err := c.NewSlicer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hammer makes calls Allow calls on key under l from 4 goroutines and returns how
// many were allowed; an error fails t.
func hammer(t *testing.T, s *client.Slicer, key string, l client.Limit, calls int) int64 {
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls / 4 {
				res, err := s.Allow(context.Background(), key, l)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return allowed.Load()
}

// TestSlicerHotKey: a hot key under a high limit is decided in-process, at far
// fewer round trips than calls, and after Close the server has counted exactly the
// calls admitted: what was held went back.
func TestSlicerHotKey(t *testing.T) {
	rdb := rlserverProcess(t)
	c, err := client.New(rdb, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	s := newSlicer(t, c, client.SliceOptions{})
	l := client.Fixed(1_000_000, year)
	const calls = 40_000
	if allowed := hammer(t, s, "hot", l, calls); allowed != calls {
		t.Fatalf("%d of %d allowed under a limit of 1e6", allowed, calls)
	}
	st := s.Stats()
	if st.Asked*20 > calls {
		t.Fatalf("%d round trips for %d calls; want fewer than 1 in 20", st.Asked, calls)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st = s.Stats()
	t.Logf("%d calls: %+v", calls, st)
	if st.Expired != 0 || st.Taken != st.Used+st.GivenBack {
		t.Fatalf("after Close: %+v; want every unit used or given back", st)
	}
	if res, err := c.Peek(context.Background(), "hot", l); err != nil || res.Remaining != 1_000_000-calls-1 {
		t.Fatalf("at the server: %+v, %v; want %d spent", res, err, calls)
	}
}

// TestSlicerShare: two Slicers (two replicas, on connections of their own) hammer a
// key of limit 100: together they admit at most 100, and the server counts exactly
// what they admitted once both are closed.
func TestSlicerShare(t *testing.T) {
	rdb := rlserverProcess(t)
	l := client.Fixed(100, year)
	var allowed atomic.Int64
	var slicers []*client.Slicer
	var wg sync.WaitGroup
	for range 2 {
		c, err := client.New(newRedis(t, rdb.Options().Addr), client.Options{Timeout: testTimeout})
		if err != nil {
			t.Fatal(err)
		}
		s := newSlicer(t, c, client.SliceOptions{Replicas: 2})
		slicers = append(slicers, s)
		wg.Add(1)
		go func() { defer wg.Done(); allowed.Add(hammer(t, s, "shared", l, 1000)) }()
	}
	wg.Wait()
	for _, s := range slicers {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := client.New(rdb)
	res, err := c.Peek(context.Background(), "shared", l)
	if err != nil {
		t.Fatal(err)
	}
	counted := int64(100 - res.Remaining)
	if res.Allowed {
		counted-- // Peek answers as if its call passed
	}
	t.Logf("admitted %d of 100; %+v, %+v", allowed.Load(), slicers[0].Stats(), slicers[1].Stats())
	if allowed.Load() > 100 || allowed.Load() < 90 || counted != allowed.Load() {
		t.Fatalf("admitted %d, the server counted %d; want at most 100, most of them, and the same", allowed.Load(), counted)
	}
}

// TestSlicerUnreachable: with the server killed, a Slicer spends what it holds,
// then decides by the Client's Fallback (Degraded), never the other way round; a
// Slicer without a Fallback returns ErrUnavailable.
func TestSlicerUnreachable(t *testing.T) {
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	ctx, l := context.Background(), client.Token(1_000_000, year)
	c, err := client.New(newRedis(t, p.Addr), client.Options{Timeout: testTimeout, Fallback: &client.Fallback{Replicas: 2}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := client.New(newRedis(t, p.Addr), client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	s, plain := newSlicer(t, c, client.SliceOptions{}), newSlicer(t, bare, client.SliceOptions{})
	const before = 2000
	if allowed := hammer(t, s, "k", l, before); allowed != before {
		t.Fatalf("%d of %d allowed", allowed, before)
	}
	if res, err := plain.Allow(ctx, "k2", l); err != nil || !res.Allowed {
		t.Fatalf("without a fallback: %+v, %v", res, err)
	}
	p.Kill()
	<-p.Exited()
	var held, degraded int
	for degraded < 100 && held < 10_000_000 { // it held about 100 ms of its calls
		res, err := s.Allow(ctx, "k", l)
		switch {
		case err != nil || !res.Allowed:
			t.Fatalf("after the kill: %+v, %v", res, err)
		case res.Degraded:
			degraded++
		case degraded > 0:
			t.Fatalf("a call from a slice after %d degraded ones", degraded)
		default:
			held++
		}
	}
	st := s.Stats()
	if held == 0 || degraded == 0 || int64(held) != st.Taken-before-st.GivenBack-st.Expired {
		t.Fatalf("after the kill: %d from slices, %d degraded; %+v", held, degraded, st)
	}
	if _, err := plain.Allow(ctx, "k3", l); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("without a fallback, a key holding nothing: %v; want ErrUnavailable", err)
	}
}

// TestSlicerAllowAll: several limits decided from slices, all or nothing: when one
// refuses, the unit the other took goes back, and after Close the server has counted
// only the requests admitted.
func TestSlicerAllowAll(t *testing.T) {
	c, err := client.New(rlserverProcess(t), client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	s := newSlicer(t, c, client.SliceOptions{})
	ctx := context.Background()
	wide, narrow := client.Fixed(100, year), client.Fixed(3, year)
	var allowed int
	for range 10 {
		res, err := s.AllowAll(ctx, client.Rule{Key: "wide", Limit: wide}, client.Rule{Key: "narrow", Limit: narrow})
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed != (res.Results[0].Allowed && res.Results[1].Allowed) {
			t.Fatalf("%+v: Allowed is not every rule's", res)
		}
		if res.Allowed {
			allowed++
		}
	}
	if _, err := s.AllowAll(ctx, client.Rule{Key: "x", Limit: wide}, client.Rule{Key: "x", Limit: narrow}); !errors.Is(err, client.ErrBadLimit) {
		t.Fatalf("a key twice: %v; want ErrBadLimit", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Peek(ctx, "wide", wide); allowed != 3 || err != nil || res.Remaining != 100-allowed-1 {
		t.Fatalf("allowed %d; wide at the server %+v, %v; want 3 allowed and counted", allowed, res, err)
	}
}

// BenchmarkHotKey is one hot key under a limit that never refuses, from 32
// goroutines per core (enough for batching to fill pipelines) on a real rlserver: each call a batched round trip (client,
// the anchor), then decided in-process from slices (slicer); ns per decision and
// commands sent per decision (calls, or slices asked).
func BenchmarkHotKey(b *testing.B) {
	c, err := client.New(rlserverProcess(b))
	if err != nil {
		b.Fatal(err)
	}
	l := client.Fixed(1_000_000_000, year)
	run := func(b *testing.B, allow func() (client.Result, error)) {
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, err := allow(); err != nil || !res.Allowed {
					b.Errorf("%+v, %v", res, err)
					return
				}
			}
		})
	}
	ctx := context.Background()
	b.Run("client", func(b *testing.B) {
		run(b, func() (client.Result, error) { return c.Allow(ctx, "hot", l) })
		b.ReportMetric(1, "commands/op")
	})
	b.Run("slicer", func(b *testing.B) {
		s := newSlicer(b, c, client.SliceOptions{})
		run(b, func() (client.Result, error) { return s.Allow(ctx, "hot", l) })
		b.ReportMetric(float64(s.Stats().Asked)/float64(b.N), "commands/op")
	})
}
