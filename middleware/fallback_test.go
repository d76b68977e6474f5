package middleware_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

// fallbackClient is a Client on a server that is down, deciding locally at 1/replicas.
func fallbackClient(t *testing.T, replicas int) *client.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.DeadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(rdb, client.Options{Fallback: &client.Fallback{Replicas: replicas}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFallbackLocal: with the limiter down, FallbackLocal goes on limiting at the
// replica's share, rate limits and concurrency alike, answering as usual, and counts
// and logs the local decisions; FallbackOpen and FallbackClosed treat them as failures.
func TestFallbackLocal(t *testing.T) {
	var logs bytes.Buffer
	lim, err := middleware.New(middleware.Config{
		Client: fallbackClient(t, 2), User: userParam, Fallback: middleware.FallbackLocal,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Dimensions:  []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Log(10, time.Hour)}},
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 3, Lease: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	codes := map[int]int{}
	for range 8 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=u", nil))
		codes[rec.Code]++
	}
	if codes[200] != 5 || codes[429] != 3 {
		t.Errorf("8 requests on a limit of 10 over 2 replicas: %v, want 5 served and 3 refused", codes)
	}
	if got, want := lim.Stats(), (middleware.Stats{Allowed: 5, Limited: 3, Degraded: 8}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if n := strings.Count(logs.String(), "deciding locally"); n != 1 {
		t.Errorf("%d log lines about local decisions, want 1 per interval:\n%s", n, logs.String())
	}

	for _, fb := range []middleware.Fallback{middleware.FallbackOpen, middleware.FallbackClosed} {
		lim, err := middleware.New(middleware.Config{
			Client: fallbackClient(t, 2), User: userParam, Fallback: fb, Logger: slog.New(slog.DiscardHandler),
			Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Log(1, time.Hour)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[middleware.Fallback]int{middleware.FallbackOpen: 200, middleware.FallbackClosed: 429}[fb]
		for range 3 {
			rec := httptest.NewRecorder()
			lim.Handler(ok).ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=u", nil))
			if rec.Code != want {
				t.Errorf("fallback %v: %d, want %d", fb, rec.Code, want)
			}
		}
		if got := lim.Stats(); got != (middleware.Stats{Failed: 3}) {
			t.Errorf("fallback %v: Stats() = %+v, want 3 failures", fb, got)
		}
	}
}

// TestFallbackConfig: the fallback settings that cannot work are refused.
func TestFallbackConfig(t *testing.T) {
	dims := []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Log(1, time.Hour)}}
	for _, c := range []struct {
		cfg  middleware.Config
		want string
	}{
		{middleware.Config{Client: embeddedClient(t, false), Dimensions: dims, Fallback: middleware.FallbackLocal},
			"the Client has no client.Options.Fallback"},
		{middleware.Config{Client: fallbackClient(t, 2), Dimensions: dims, Fallback: middleware.FallbackLocal, FailClosed: true},
			"Config.FailClosed contradicts Config.Fallback local"},
		{middleware.Config{Client: fallbackClient(t, 2), Dimensions: dims, Fallback: 7},
			"Config.Fallback Fallback(7)"},
	} {
		if _, err := middleware.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want %q", err, c.want)
		}
	}
}
