package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// TestFailFast kills a real rlserver process under a Limiter in each fallback mode:
// once the breaker has opened (client.DefaultFailures failed calls), every request is
// answered in under 1 ms, measured, instead of paying the timeout; the log names the
// Limiter, and says once that the limiter is back after a restart.
func TestFailFast(t *testing.T) {
	bin := testenv.RLServerBin(t)
	for _, mode := range []middleware.Fallback{middleware.FallbackOpen, middleware.FallbackClosed, middleware.FallbackLocal} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			p, err := launch.RLServer(bin, dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop() })
			// go-redis's default dial retries (5, 100 ms apart) make every failed call
			// cost the Limiter's whole 50 ms budget: what the breaker must spare.
			rdb := redis.NewClient(&redis.Options{Addr: p.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { rdb.Close() })
			var opts client.Options
			if mode == middleware.FallbackLocal {
				opts.Fallback = &client.Fallback{Replicas: 1}
			}
			c, err := client.New(rdb, opts)
			if err != nil {
				t.Fatal(err)
			}
			var logs testenv.Buffer
			lim, err := middleware.New(middleware.Config{
				Client: c, User: userParam, Fallback: mode, Name: "api-" + mode.String(),
				Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
				Dimensions:  []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(1000, time.Second)}},
				Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 10, Lease: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := lim.Handler(ok)
			serve := func() (int, time.Duration) {
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=u", nil))
				return rec.Code, time.Since(start)
			}
			if code, _ := serve(); code != 200 {
				t.Fatalf("with rlserver up: %d, want 200", code)
			}

			p.Kill()
			<-p.Exited()
			var slowest time.Duration
			for range client.DefaultFailures { // the failures that open the breaker
				_, took := serve()
				slowest = max(slowest, took)
			}
			var took []time.Duration
			for range 20 {
				code, d := serve()
				if want := map[middleware.Fallback]int{middleware.FallbackClosed: 429}[mode]; want != 0 && code != want {
					t.Errorf("fail closed answered %d, want %d", code, want)
				}
				took = append(took, d)
			}
			slices.Sort(took)
			t.Logf("the %d calls that opened the breaker took up to %v; then 20 requests: median %v, max %v",
				client.DefaultFailures, slowest, took[len(took)/2], took[len(took)-1])
			// The median, not the max: on a shared machine under -race a GC pause or a
			// preemption costs a few ms now and then; the timeout costs 50 ms each time.
			if took[len(took)/2] >= time.Millisecond {
				t.Errorf("with the breaker open, requests took %v (sorted): want under 1 ms", took)
			}
			line := logs.String()
			if !strings.Contains(line, "limiter=api-"+mode.String()) {
				t.Errorf("no log line names the Limiter api-%v:\n%s", mode, line)
			}

			// Restarted on its address: requests pass through rlserver again (once the
			// breaker's pause is over), and one line says so.
			p2, err := launch.RLServerAt(bin, dir, p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p2.Stop() })
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), "rate limiter back") && time.Now().Before(deadline) {
				serve()
			}
			serve()
			if n := strings.Count(logs.String(), "rate limiter back"); n != 1 {
				t.Errorf("%d lines say the limiter is back, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// TestBreakerRootCause: the breaker's errors keep the dial error of the dead server,
// the call that failed and the refusals that follow it without I/O alike.
// DialerRetries 1: go-redis dials on a goroutine of its own, by default retrying 5
// times 100 ms apart, so that a caller with a shorter budget gets only its context's
// error, never the dial's.
func TestBreakerRootCause(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.DeadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.NewBreaker(client.Fallback{Failures: 1, Backoff: time.Hour, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	do := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		return b.Do(ctx, func(ctx context.Context) error {
			calls++
			_, err := c.Allow(ctx, "k", client.Token(1, time.Second))
			return err
		})
	}
	for i, what := range []string{"the failed call", "the refusal of the open circuit"} {
		err := do()
		if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%s: %v, want ErrUnavailable wrapping ECONNREFUSED", what, err)
		}
		if calls != 1 {
			t.Errorf("after %s (%d): %d calls went out, want 1", what, i, calls)
		}
	}
	if _, err := client.NewBreaker(client.Fallback{Backoff: time.Second, MaxBackoff: time.Millisecond}); err == nil {
		t.Error("NewBreaker with MaxBackoff below Backoff: no error")
	}
}
