package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// slicesChildEnv, set to a slicesSpec in JSON, makes rlbench one of bench-slices'
// client processes instead: it calls on one key from spec.Goroutines goroutines
// between spec.Start and spec.End in spec.Mode, and writes a slicesOut in JSON to
// stdout.
const slicesChildEnv = "RLBENCH_SLICES_CHILD"

// The three ways a process decides calls on the hot key.
const (
	modeBatched = "batched client"   // Client.Allow: a server command per call, auto-batched
	modeSlicer  = "slicer"           // Slicer.Allow: in-process, from slices (RL.SLICE)
	modeFlush   = "count-then-flush" // flushCounter: in-process, counts flushed later
)

// slicesSpec is what one client process does.
type slicesSpec struct {
	Mode       string
	Addr       string
	Key        string
	Limit      int           // per Window, Fixed
	Window     time.Duration // the Fixed window
	Start, End time.Time     // when the calls begin and end, the same for every process
	Goroutines int
	Rate       float64       // calls per second per goroutine; 0: as fast as it can
	Replicas   int           // how many processes share the key (SliceOptions.Replicas)
	Flush      time.Duration // count-then-flush's flush interval
}

// slicesOut is what one client process measured.
type slicesOut struct {
	Decisions, Admitted, Errors int64
	Trips                       int64           // network round trips: go-redis commands and pipelines sent
	Latency                     []uint64        // the decisions' histogram counts (histogram.counts)
	Windows                     map[int64]int64 // admissions per window, by Start-aligned index (UnixNano / Window)
	Stats                       client.SliceStats
	FirstError                  string
	Late                        time.Duration // the most a process was ready after Start: it measured less of the run
}

// decideFunc decides one call at t0 (the time before it) and says whether it was
// admitted, and in which window.
type decideFunc func(ctx context.Context, t0 time.Time) (ok bool, win int64, err error)

// runSlicesChild is one client process of bench-slices (see slicesChildEnv).
func runSlicesChild(spec string) error {
	var s slicesSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("%s: %w", slicesChildEnv, err)
	}
	ctx := context.Background()
	var trips tripCounter
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rdb.Close()
	rdb.AddHook(&trips)
	if err := rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	decide, stop, err := slicesDecider(ctx, s, rdb)
	if err != nil {
		return err
	}
	late := -time.Until(s.Start)
	time.Sleep(-late)
	tripsBefore := trips.n.Load()
	out := slicesLoad(ctx, s, decide)
	out.Late = max(late, 0)
	out.Trips = trips.n.Load() - tripsBefore // before stop: a Slicer's last give-back is not a decision's
	if out.Stats, err = stop(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// slicesDecider is s.Mode's decision on s.Key, and what ends it.
func slicesDecider(ctx context.Context, s slicesSpec, rdb *redis.Client) (decideFunc, func() (client.SliceStats, error), error) {
	lim := client.Fixed(s.Limit, s.Window)
	nothing := func() (client.SliceStats, error) { return client.SliceStats{}, nil }
	switch s.Mode {
	case modeFlush:
		f := newFlushCounter(rdb, s.Key, s.Limit, s.Window)
		done := make(chan struct{})
		go f.run(ctx, s.Flush, done)
		return func(context.Context, time.Time) (bool, int64, error) {
			ok, win := f.allow(time.Now()) // its own decision's time, exact
			return ok, win, nil
		}, func() (client.SliceStats, error) { close(done); return client.SliceStats{}, nil }, nil
	case modeBatched, modeSlicer:
	default:
		return nil, nil, fmt.Errorf("unknown mode %q", s.Mode)
	}
	c, err := client.New(rdb, client.Options{Timeout: time.Second})
	if err != nil {
		return nil, nil, err
	}
	if s.Mode == modeBatched {
		return func(ctx context.Context, t0 time.Time) (bool, int64, error) {
			res, err := c.Allow(ctx, s.Key, lim)
			return res.Allowed, t0.UnixNano() / int64(s.Window), err // phase 1 only: the window is not read
		}, nothing, nil
	}
	sl, err := c.NewSlicer(client.SliceOptions{Replicas: s.Replicas})
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, t0 time.Time) (bool, int64, error) {
		res, err := sl.Allow(ctx, s.Key, lim)
		return res.Allowed, admittedIn(t0, res.ResetAfter, s.Window), err
	}, func() (client.SliceStats, error) { err := sl.Close(); return sl.Stats(), err }, nil
}

// admittedIn is the window a Slicer's call begun at t0 was admitted in. The Slicer
// decides at a time of its own between t0 and its return, and admits a unit only
// before its slice's Until, at or before the end of the window the server counted the
// slice in; its Result's ResetAfter is the time from the decision to that end, in
// whole ms rounded up, counted from when the slice's reply came. So t0 + ResetAfter is
// that end within a round trip and a ms, and rounding it to the nearest window edge
// names the window, where the time after the call would misplace a call decided just
// before the edge, and the time before it one that waited for a slice across the edge.
func admittedIn(t0 time.Time, resetAfter, window time.Duration) int64 {
	end := (t0.UnixNano() + int64(resetAfter) + int64(window)/2) / int64(window)
	return end - 1
}

// slicesLoad calls decide from s.Goroutines goroutines until s.End, each paced at
// s.Rate or as fast as it can, and sums what they measured.
func slicesLoad(ctx context.Context, s slicesSpec, decide decideFunc) slicesOut {
	outs := make([]slicesOut, s.Goroutines)
	hists := make([]histogram, s.Goroutines)
	var wg sync.WaitGroup
	for g := range outs {
		wg.Go(func() {
			o, h := &outs[g], &hists[g]
			o.Windows = map[int64]int64{}
			begun := time.Now()
			for {
				if s.Rate > 0 {
					next := begun.Add(time.Duration(float64(o.Decisions) / s.Rate * 1e9))
					if wait := time.Until(next); wait > 0 {
						time.Sleep(wait)
					}
				}
				t0 := time.Now()
				if !t0.Before(s.End) {
					return
				}
				ok, win, err := decide(ctx, t0)
				h.record(time.Since(t0), 1)
				switch {
				case err != nil:
					if o.Errors++; o.FirstError == "" {
						o.FirstError = err.Error()
					}
				case ok:
					o.Admitted++
					o.Windows[win]++
				}
				o.Decisions++
			}
		})
	}
	wg.Wait()
	sum := slicesOut{Windows: map[int64]int64{}}
	var h histogram
	for g, o := range outs {
		sum.add(o)
		h.merge(&hists[g])
	}
	sum.Latency = h.counts[:]
	return sum
}

// add adds o's counts to s, and o's histogram to s's if both have one.
func (s *slicesOut) add(o slicesOut) {
	s.Decisions += o.Decisions
	s.Admitted += o.Admitted
	s.Errors += o.Errors
	s.Trips += o.Trips
	for w, n := range o.Windows {
		s.Windows[w] += n
	}
	s.Stats.Asked += o.Stats.Asked
	s.Stats.Taken += o.Stats.Taken
	s.Stats.Used += o.Stats.Used
	s.Stats.GivenBack += o.Stats.GivenBack
	s.Stats.Expired += o.Stats.Expired
	if s.FirstError == "" {
		s.FirstError = o.FirstError
	}
	s.Late = max(s.Late, o.Late)
}

// tripCounter is a go-redis hook counting what goes to the server as one round trip:
// a command on its own, or a pipeline (the batched client's, of many calls).
type tripCounter struct{ n atomic.Int64 }

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmd)
	}
}

func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// flushHuge is the limit of count-then-flush's counter key: RL.FIXED with it never
// refuses, so `RL.FIXED key flushHuge window COST n` is an INCRBY on a fixed-window
// counter whose reply carries the window's count (flushHuge − remaining).
const flushHuge = 1_000_000_000

// flushCounter is count-then-flush, written for bench-slices' comparison only and
// not a way to limit: the way Limitador's redis_cached and gubernator's GLOBAL
// behaviour work. A process admits a call in-process while the key's count in the
// window as of its last sync, plus what it admitted since, is under the limit; every
// flush interval it adds what it admitted to the server's counter in one call and
// reads the window's count back in the same reply. No call waits on the network and
// one process alone is exact, but every process spends the same quota it last heard
// of: a window passes its limit by up to what the others admit in a flush interval.
// Counts flushed after their window ended are dropped, as the window's limit no
// longer needs them.
type flushCounter struct {
	rdb    *redis.Client
	key    string
	limit  int64
	window time.Duration

	mu      sync.Mutex
	win     int64 // the window the counts below are of (UnixNano / window)
	global  int64 // the window's count at the server at the last sync
	pending int64 // admitted since the last flush
}

func newFlushCounter(rdb *redis.Client, key string, limit int, window time.Duration) *flushCounter {
	return &flushCounter{rdb: rdb, key: key, limit: int64(limit), window: window}
}

// allow decides a call at now, and says in which window.
func (f *flushCounter) allow(now time.Time) (bool, int64) {
	w := now.UnixNano() / int64(f.window)
	f.mu.Lock()
	defer f.mu.Unlock()
	if w != f.win {
		f.win, f.global, f.pending = w, 0, 0
	}
	if f.global+f.pending >= f.limit {
		return false, w
	}
	f.pending++
	return true, w
}

// run flushes every interval until done is closed.
func (f *flushCounter) run(ctx context.Context, interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			f.flush(ctx)
		}
	}
}

// flush adds what was admitted since the last flush to the window's counter at the
// server and keeps the window's count it answers. A failed flush keeps its count for
// the next.
func (f *flushCounter) flush(ctx context.Context) {
	f.mu.Lock()
	w, n := f.win, f.pending
	f.pending = 0
	f.mu.Unlock()
	if w != time.Now().UnixNano()/int64(f.window) {
		return // the window is over: its count limits nothing more
	}
	v, err := f.rdb.Do(ctx, "RL.FIXED", f.key, flushHuge, f.window.Milliseconds(), "COST", n).Int64Slice()
	if err == nil && len(v) < 3 {
		err = errors.New("short reply")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.win != w:
	case err != nil:
		f.pending += n
	default:
		f.global = flushHuge - v[2]
	}
}
