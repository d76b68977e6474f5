// The regions tests: a home rlserver and a region rlserver (-quota-upstream)
// processes on loopback, a TCP proxy between them adding a link's round trip and
// cutting it at will (a partition), and go-redis clients on both sides counting what
// each window of a key admitted against its limit.
//
//	go test -race -count=1 -v ./test/regions/
package regions_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// linkRTT is the round trip the proxy adds between a region and its home.
const linkRTT = 50 * time.Millisecond

// startServer starts the rlserver binary with args on a free loopback port, stopped
// when t ends.
func startServer(t testing.TB, args ...string) *launch.Proc {
	t.Helper()
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir(), append([]string{"-loglevel", "INFO"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// startRegion starts a home, a proxy to it, and a region of it through the proxy
// with the fallback mode for 2 regions, and more flags.
func startRegion(t testing.TB, mode string, more ...string) (home *launch.Proc, px *proxy, region *launch.Proc) {
	t.Helper()
	home = startServer(t)
	px = startProxy(t, home.Addr, linkRTT)
	region = startServer(t, append([]string{"-quota-upstream", "redis://" + px.addr(), "-quota-upstream-regions", "2",
		"-quota-upstream-fallback", mode}, more...)...)
	return home, px, region
}

// newClient connects to addr without retries: a retried RL.* call would count twice.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 16,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// call is one limiter call's outcome: when it was sent, when its reply came, whether
// it was allowed, and its reset_after.
type call struct {
	sent, at time.Time
	allowed  bool
	took     time.Duration
	reset    time.Duration
}

// do makes one limiter call and records it.
func do(t testing.TB, rdb *redis.Client, args []any) call {
	start := time.Now()
	v, err := rdb.Do(context.Background(), args...).Int64Slice()
	end := time.Now()
	if err != nil || len(v) != 5 {
		t.Errorf("%v: %v %v", args, v, err)
		return call{sent: start, at: end}
	}
	return call{sent: start, at: end, allowed: v[0] == 1, took: end.Sub(start), reset: time.Duration(v[4]) * time.Millisecond}
}

// load makes calls of args on rdb from n goroutines, each pace apart, until stop
// is closed, and returns them all.
func load(t testing.TB, rdb *redis.Client, args []any, n int, pace time.Duration, stop <-chan struct{}) func() []call {
	return loadWith(t, rdb, args, n, pace, stop, do)
}

// loadWith is load making each call with do.
func loadWith(t testing.TB, rdb *redis.Client, args []any, n int, pace time.Duration, stop <-chan struct{},
	do func(testing.TB, *redis.Client, []any) call) func() []call {
	var mu sync.Mutex
	var calls []call
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				c := do(t, rdb, args)
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			}
		})
	}
	return func() []call {
		wg.Wait()
		return calls
	}
}

// window counts of one side's calls: allowed and denied per window index (time /
// the window).
type window struct{ allowed, denied int }

// perWindow counts Fixed calls of window w in the windows they were decided in: the
// one ending at the call's time plus its reset_after. The call was decided between
// its send and its reply, so the end is the multiple of w nearest the middle plus
// reset_after (the reply's time alone would put a call decided at a window's end and
// answered late, on a loaded machine, in the next).
func perWindow(calls []call, w time.Duration) map[int64]window {
	m := map[int64]window{}
	for _, c := range calls {
		mid := c.sent.Add(c.at.Sub(c.sent) / 2)
		i := (mid.Add(c.reset).UnixMicro()+w.Microseconds()/2)/w.Microseconds() - 1
		x := m[i]
		if c.allowed {
			x.allowed++
		} else {
			x.denied++
		}
		m[i] = x
	}
	return m
}

// pct is the p-th percentile of the calls' times.
func pct(calls []call, p int) time.Duration {
	d := make([]time.Duration, len(calls))
	for i, c := range calls {
		d[i] = c.took
	}
	slices.Sort(d)
	return d[len(d)*p/100]
}
