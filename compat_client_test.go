// The compatibility suite's scenarios through package client (compat_test.go).

package rlserver_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/lab"
)

// TestClientBackends runs the compat scenarios through package client's three
// backends: rlserver (native RL.*), Redis running the scripts (EVALSHA) and the
// embedded store. On an injected clock, the embedded store and rlserver replay the
// differential runs (CL.THROTTLE aside: the client has no call for it, and a peek
// costs 1) and must answer exactly as package algo, read through client.Result. The
// scripts cannot take the test's clock through the client, which never sends one:
// TestLuaMatchesAlgo holds them to algo on the wire, and client's TestBackendsAgree
// holds all three backends to the same Results. On the real clock, all three pass
// clientScenarios, which compat_cluster_test.go runs on a Redis Cluster and on three
// rlserver nodes in cluster mode too.
func TestClientBackends(t *testing.T) {
	r, s := needRedis(t), needServer(t)
	t.Cleanup(func() { flush(t, r); flush(t, s) })
	ctx := context.Background()
	connect := func(addr string) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	native, err := client.New(connect(s.addr), clientOptions)
	if err != nil {
		t.Fatal(err)
	}
	scripted, err := client.NewLua(connect(r.addr), client.LuaOptions{Options: clientOptions})
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := client.NewEmbedded(client.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("differential", func(t *testing.T) {
		defer flush(t, s) // the real clock back for the scenarios below
		sd := seed(t)
		var now int64
		frozen, err := client.NewEmbedded(client.EmbeddedOptions{Clock: func() time.Time { return time.UnixMicro(now) }})
		if err != nil {
			t.Fatal(err)
		}
		sides := []struct {
			name   string
			c      *client.Client
			setNow func(us int64) error
		}{
			{"embedded", frozen, func(us int64) error { now = us; return nil }},
			{"rlserver", native, func(us int64) error { return s.client.Do(ctx, "DEBUG", "CLOCK", "SET", us).Err() }},
		}
		for _, ks := range differentialCases() {
			if ks = withoutThrottle(ks); len(ks) == 0 {
				continue
			}
			name := label(ks)
			t.Run(name, func(t *testing.T) {
				// The client has no REFUND (a RESP option only): its steps draw none.
				steps := genSteps(t, sd, "client-"+name, max(1, *compatCalls/5), false, ks...)
				ref := algoSide{map[string]*algoKey{}}
				for i, st := range steps {
					if st.req.Peek {
						st.req.Cost = 1 // client.Peek decides a cost of 1
					}
					want := ref.do(st)
					wantRes := client.Result{Allowed: want.reply[0] == 1, Limit: int(want.reply[1]), Remaining: int(want.reply[2]),
						RetryAfter: time.Duration(want.reply[3]) * time.Millisecond, ResetAfter: time.Duration(want.reply[4]) * time.Millisecond}
					if want.reply[3] == -1 {
						wantRes.RetryAfter = client.Never
					}
					l := clientLimit(st.req)
					for _, side := range sides {
						if err := side.setNow(st.now); err != nil {
							t.Fatal(err)
						}
						var got client.Result
						var err error
						if st.req.Peek {
							got, err = side.c.Peek(ctx, st.key, l)
						} else {
							got, err = side.c.AllowN(ctx, st.key, l, int(st.req.Cost))
						}
						if want.err != "" && errors.Is(err, client.ErrWrongType) || want.err == "" && err == nil && got == wantRes {
							continue
						}
						t.Fatalf("-compat.seed=%d, step %d: %s %s %+v cost %d peek %v at %d µs:\n  %s: %+v, %v\n  algo: %+v %s",
							sd, i, side.name, st.key, l, st.req.Cost, st.req.Peek, st.now, side.name, got, err, wantRes, want.err)
					}
				}
			})
		}
	})

	runClientScenarios(t, []clientBackend{{"embedded", embedded}, {"rlserver", native}, {"redis+lua", scripted}})
}

// clientOptions are the options of the network clients under test: a budget no
// loaded machine under -race reaches, for the timeout is not under test here.
var clientOptions = client.Options{Timeout: time.Minute}

// clientBackend is a package client on one backend, named for the failures.
type clientBackend struct {
	name string
	c    *client.Client
}

// clientScenarios are the real-clock scenarios every backend of package client
// passes, as the wire sides pass TestWindowBoundary, TestAtomicity and TestWrongType:
// each runs on all the backends given at once.
var clientScenarios = []struct {
	name string
	run  func(t *testing.T, backends []clientBackend)
}{
	{"window boundary", clientWindowBoundary},
	{"atomicity", clientAtomicity},
	{"wrong type", clientWrongType},
	{"retry after", clientRetryAfter},
}

// runClientScenarios runs each of clientScenarios on backends, as a subtest.
func runClientScenarios(t *testing.T, backends []clientBackend) {
	for _, sc := range clientScenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, backends) })
	}
}

// clientLimit is r as a client.Limit.
func clientLimit(r algo.Request) client.Limit {
	w := time.Duration(r.Window) * time.Microsecond
	n := int(r.Limit)
	switch r.Kind {
	case algo.KindFixed:
		return client.Fixed(n, w)
	case algo.KindSlide:
		return client.Slide(n, w)
	case algo.KindLog:
		return client.Log(n, w)
	case algo.KindToken:
		return client.TokenRate(int(cmp.Or(r.Rate, r.Limit)), w, n)
	case algo.KindGCRA:
		return client.GCRA(n, w, int(cmp.Or(r.Burst, r.Limit)))
	}
	return client.Leaky(n, w, int(r.Queue))
}

// withoutThrottle is ks but CL.THROTTLE, which the client has no call for.
func withoutThrottle(ks []algo.Kind) []algo.Kind {
	return slices.DeleteFunc(slices.Clone(ks), func(k algo.Kind) bool { return k == algo.KindThrottle })
}

// clientWindowBoundary is TestWindowBoundary's timing with more lead: limit 100 per
// 1,000 ms, 100 calls from 450 ms before a boundary of the 1-s grid, 100 calls 50 ms
// after. The fixed window must admit exactly 200 in a 1-s window across the boundary,
// the log 100. The first batch must be answered before the boundary: on a machine so
// loaded that it is not, the round is played again at a later boundary, on fresh keys,
// three times at most (the answers of a round that kept its timing are always checked).
func clientWindowBoundary(t *testing.T, backends []clientBackend) {
	ks := []algo.Kind{algo.KindFixed, algo.KindLog}
	want := map[algo.Kind]int{algo.KindFixed: 200, algo.KindLog: 100}
	for round := range 3 {
		admitted, onTime, err := boundaryRound(backends, ks, fmt.Sprintf("client-boundary-%d:", round))
		if err != nil {
			t.Fatal(err)
		}
		if !onTime {
			t.Logf("round %d: the first batch was not answered before the boundary; again", round)
			continue
		}
		for i, b := range backends {
			for j, k := range ks {
				if n := lab.MaxInWindow(admitted[i][j], time.Second); n != want[k] {
					t.Errorf("%s %s: %d admitted in a 1-s window across the boundary, want %d", b.name, k.Command(), n, want[k])
				}
			}
		}
		return
	}
	t.Fatal("three rounds in a row, 100 calls took over 450 ms: the machine is too loaded to time a window boundary")
}

// boundaryRound plays one round of clientWindowBoundary on keys with prefix: the times
// of the admitted calls per backend and kind (indexed as backends and ks), and whether
// the first batch was answered before the boundary. Each backend and kind calls from
// a goroutine of its own, so a batch takes one sequence of 100 round trips.
func boundaryRound(backends []clientBackend, ks []algo.Kind, prefix string) ([][][]time.Time, bool, error) {
	ctx := context.Background()
	now := time.Now()
	boundary := now.Truncate(time.Second).Add(time.Second)
	if boundary.Sub(now) < 500*time.Millisecond {
		boundary = boundary.Add(time.Second)
	}
	admitted := make([][][]time.Time, len(backends))
	errs := make([]error, len(backends)*len(ks))
	for i := range admitted {
		admitted[i] = make([][]time.Time, len(ks))
	}
	onTime := true
	for batch, at := range []time.Time{boundary.Add(-450 * time.Millisecond), boundary.Add(50 * time.Millisecond)} {
		time.Sleep(time.Until(at))
		var wg sync.WaitGroup
		for i, b := range backends {
			for j, k := range ks {
				wg.Go(func() {
					l := clientLimit(lab.Request(k, 100, 1000))
					for range 100 {
						sent := time.Now()
						res, err := b.c.Allow(ctx, prefix+k.Command(), l)
						if err != nil {
							errs[i*len(ks)+j] = fmt.Errorf("%s: %w", b.name, err)
							return
						}
						if res.Allowed {
							admitted[i][j] = append(admitted[i][j], sent)
						}
					}
				})
			}
		}
		wg.Wait()
		if batch == 0 && !time.Now().Before(boundary) {
			onTime = false
		}
	}
	return admitted, onTime, errors.Join(errs...)
}

// clientAtomicity is TestAtomicity's limits: 100 per a window no refill touches in
// the test, no fixed-window boundary near; 50 clients, 10 calls each, exactly 100
// admitted.
func clientAtomicity(t *testing.T, backends []clientBackend) {
	ctx := context.Background()
	const clients, calls, limit = 50, 10, 100
	windowMs := int64(31_536_000_000)
	if w := windowMs * 1000; w-time.Now().UnixMicro()%w < 600_000_000 {
		windowMs -= 86_400_000
	}
	for _, b := range backends {
		for _, k := range withoutThrottle(kinds) {
			r := lab.Request(k, limit, windowMs)
			switch k {
			case algo.KindToken:
				r.Rate = 1 // per year
			case algo.KindLeaky:
				r.Queue = limit - 1
			}
			l := clientLimit(r)
			var n atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for range clients {
				wg.Go(func() {
					for range calls {
						res, err := b.c.Allow(ctx, "client-atomic:"+k.Command(), l)
						if err != nil {
							errs <- err
							return
						}
						if res.Allowed {
							n.Add(1)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				t.Fatalf("%s %s: %v", b.name, k.Command(), err)
			}
			if n.Load() != limit {
				t.Errorf("%s %s: %d clients x %d calls admitted %d, want exactly %d", b.name, k.Command(), clients, calls, n.Load(), limit)
			}
		}
	}
}

// clientWrongType calls each algorithm on a key holding each other's state: the call
// fails with ErrWrongType and leaves the state as a control key's.
func clientWrongType(t *testing.T, backends []clientBackend) {
	ctx := context.Background()
	for _, b := range backends {
		for _, ka := range withoutThrottle(kinds) {
			for _, kb := range withoutThrottle(kinds) {
				if ka == kb {
					continue
				}
				key := "client-wrongtype:" + ka.Command() + ":" + kb.Command()
				control := "client-wrongtype-control:" + ka.Command() + ":" + kb.Command()
				la, lb := clientLimit(lab.Request(ka, 10, 60_000)), clientLimit(lab.Request(kb, 10, 60_000))
				for _, k := range []string{key, control} {
					if _, err := b.c.Allow(ctx, k, la); err != nil {
						t.Fatalf("%s %s: %v", b.name, ka.Command(), err)
					}
				}
				if _, err := b.c.Allow(ctx, key, lb); !errors.Is(err, client.ErrWrongType) {
					t.Errorf("%s: %s on a %s key: %v, want ErrWrongType", b.name, kb.Command(), ka.Command(), err)
				}
				got, err1 := b.c.Peek(ctx, key, la)
				want, err2 := b.c.Peek(ctx, control, la)
				if err1 != nil || err2 != nil || got.Allowed != want.Allowed || got.Remaining != want.Remaining {
					t.Errorf("%s %s after a WRONGTYPE call: %+v, %v; without it: %+v, %v", b.name, ka.Command(), got, err1, want, err2)
				}
			}
		}
	}
}

// clientRetryAfter spends each algorithm's limit (2 per 400 ms: a bucket refills a
// token in 200 ms, longer than a call takes on a loaded machine) until a call is
// denied, waits exactly its RetryAfter and calls again: that call must be allowed,
// for RetryAfter is never early. Twice per algorithm, the backends at once.
func clientRetryAfter(t *testing.T, backends []clientBackend) {
	ctx := context.Background()
	errs := make([]error, len(backends))
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Go(func() {
			for _, k := range withoutThrottle(kinds) {
				key := "client-retry:" + k.Command()
				l := clientLimit(lab.Request(k, 2, 400))
				for round := range 2 {
					var denied client.Result
					for calls := 0; ; calls++ {
						res, err := b.c.Allow(ctx, key, l)
						if err != nil {
							errs[i] = fmt.Errorf("%s: %w", k.Command(), err)
							return
						}
						if !res.Allowed {
							denied = res
							break
						}
						if calls == 10 {
							errs[i] = fmt.Errorf("%s: %d calls in a row allowed at a limit of 2 per 400 ms", k.Command(), calls+1)
							return
						}
					}
					if denied.RetryAfter <= 0 || denied.RetryAfter > time.Second {
						errs[i] = fmt.Errorf("%s: denied with RetryAfter %v, want 0 < it ≤ 1 s", k.Command(), denied.RetryAfter)
						return
					}
					time.Sleep(denied.RetryAfter)
					if res, err := b.c.Allow(ctx, key, l); err != nil || !res.Allowed {
						errs[i] = fmt.Errorf("%s, round %d: denied (%+v, %v) after waiting the RetryAfter %v of a denial",
							k.Command(), round, res, err, denied.RetryAfter)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for i, b := range backends {
		if errs[i] != nil {
			t.Errorf("%s: %v", b.name, errs[i])
		}
	}
}
