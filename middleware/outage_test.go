package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

// goRedisLog holds what go-redis logs to its process-wide logger, and when.
type goRedisLog struct {
	mu    sync.Mutex
	lines []string
	at    []time.Time
}

func (g *goRedisLog) Printf(_ context.Context, format string, v ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, fmt.Sprintf(format, v...))
	g.at = append(g.at, time.Now())
}

// since is the lines logged after the first n, and how long after the first of
// them the last came (0 for fewer than two).
func (g *goRedisLog) since(n int) ([]string, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var spread time.Duration
	if len(g.at) > n {
		spread = g.at[len(g.at)-1].Sub(g.at[n])
	}
	return append([]string(nil), g.lines[n:]...), spread
}

func (g *goRedisLog) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lines)
}

// TestQuietOutage kills a real rlserver process (SIGKILL) twice under a steady load
// through a Limiter on client.Open's client, in each fallback mode: go-redis logs
// only as the outage begins (a failed pool dial of each call in flight then, one
// line in most runs), never again however many requests the outage meets, and the
// Limiter says once per outage that the limiter is back. The outages are counted in
// requests, served at about 1000 a second by 8 goroutines, so that the breaker
// probes several times (after 100, 200, 400, 800 ms of backoff...): without the
// client's dial gate go-redis logged a line per probe, 5 to 8 per outage.
func TestQuietOutage(t *testing.T) {
	bin := testenv.RLServerBin(t)
	const callers = 8 // goroutines sending requests
	var goRedis goRedisLog
	redis.SetLogger(&goRedis) // this test binary's go-redis clients, for this test only
	t.Cleanup(logging.Enable)
	for _, mode := range []middleware.Fallback{middleware.FallbackOpen, middleware.FallbackClosed, middleware.FallbackLocal} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			p, err := launch.RLServer(bin, dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop() })
			var opts client.Options
			if mode == middleware.FallbackLocal {
				opts.Fallback = &client.Fallback{Replicas: 1}
			}
			c, err := client.Open("redis://"+p.Addr+"/", opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			var logs testenv.Buffer
			lim, err := middleware.New(middleware.Config{
				Client: c, User: userParam, Fallback: mode, LogInterval: time.Millisecond, // a failure line, then a back line, per outage
				Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
				Dimensions:  []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(100_000, time.Second)}},
				Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 100, Lease: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := lim.Handler(ok)
			var served atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range callers {
				wg.Go(func() {
					tick := time.NewTicker(8 * time.Millisecond)
					defer tick.Stop()
					url := fmt.Sprintf("/x?user=u%d", g)
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", url, nil))
						served.Add(1)
					}
				})
			}
			t.Cleanup(func() { close(stop); wg.Wait() })
			// waitServed returns once n more requests have been answered.
			waitServed := func(n int64) {
				for target := served.Load() + n; served.Load() < target; {
					time.Sleep(10 * time.Millisecond)
				}
			}

			waitServed(200)
			before := goRedis.count()
			for outage, length := range []int64{1000, 3000} {
				p.Kill()
				start := time.Now()
				waitServed(length)
				down := time.Since(start)
				p, err = launch.RLServerAt(bin, dir, p.Addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Stop() })
				deadline := time.Now().Add(10 * time.Second)
				for strings.Count(logs.String(), "rate limiter back") <= outage && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := strings.Count(logs.String(), "rate limiter back"); n != outage+1 {
					t.Fatalf("outage %d: %d lines say the limiter is back, want %d:\n%s", outage+1, n, outage+1, logs.String())
				}
				lines, spread := goRedis.since(before)
				t.Logf("outage %d: %d requests in %v, %d go-redis lines over %v: %q", outage+1, length, down.Round(time.Millisecond), len(lines), spread, lines)
				if len(lines) > callers || spread > 50*time.Millisecond { // the first probe is 100 ms in
					t.Errorf("outage %d: go-redis logged %d lines over %v, want at most %d as it began", outage+1, len(lines), spread, callers)
				}
				before += len(lines)
			}
		})
	}
}
