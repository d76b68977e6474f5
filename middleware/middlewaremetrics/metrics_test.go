package middlewaremetrics_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/middleware/middlewaremetrics"
)

// TestMetrics: the Collector reads a Limiter's Stats, local decisions included.
func TestMetrics(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.DeadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(rdb, client.Options{Fallback: &client.Fallback{Replicas: 2}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{
		Client: c, User: func(r *http.Request) string { return r.URL.Query().Get("user") },
		Fallback: middleware.FallbackLocal, Logger: slog.New(slog.DiscardHandler),
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Log(2, time.Hour)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, path := range []string{"/x?user=u", "/x?user=u", "/healthz"} {
		lim.Handler(ok).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	want := `
# HELP rlserver_middleware_degraded_total Requests decided in-process at this replica's share because the limiter was unreachable (FallbackLocal).
# TYPE rlserver_middleware_degraded_total counter
rlserver_middleware_degraded_total{limiter="api"} 2
# HELP rlserver_middleware_requests_total Requests the rate-limiting middleware has seen, by outcome: allowed, limited (a dimension denied), busy (no concurrency place), bypassed (health checks) or failed (the limiter failed).
# TYPE rlserver_middleware_requests_total counter
rlserver_middleware_requests_total{limiter="api",outcome="allowed"} 1
rlserver_middleware_requests_total{limiter="api",outcome="busy"} 0
rlserver_middleware_requests_total{limiter="api",outcome="bypassed"} 1
rlserver_middleware_requests_total{limiter="api",outcome="failed"} 0
rlserver_middleware_requests_total{limiter="api",outcome="limited"} 1
`
	col := middlewaremetrics.New(lim, "api")
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
