package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

// TestSlicer: with Config.Slicer, a user's requests and their route are decided
// from slices of a real rlserver: exactly the user's limit passes, at far fewer round
// trips than requests; a refusal by the user's limit spends nothing of the route's,
// as the one call would; and after Close the server has counted what passed.
func TestSlicer(t *testing.T) {
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	c := networkClient(t, p.Addr, false, testTimeout)
	slicer, err := c.NewSlicer(client.SliceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	year := 365 * 24 * time.Hour
	user, route := client.Fixed(200, year), client.Fixed(100_000, year)
	lim, err := middleware.New(middleware.Config{Client: c, Slicer: slicer, User: userParam, Timeout: testTimeout,
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: user}, {Name: "route", By: middleware.ByRoute, Limit: route}}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	const requests = 800
	var passed, refused atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range requests / 4 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/api?user=alice", nil))
				switch rec.Code {
				case http.StatusOK:
					passed.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				}
			}
		}()
	}
	wg.Wait()
	st := slicer.Stats()
	if err := slicer.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d passed, %d refused; %+v", passed.Load(), refused.Load(), st)
	if passed.Load() != 200 || refused.Load() != requests-200 {
		t.Fatalf("%d passed, %d refused; want the user's 200 to pass", passed.Load(), refused.Load())
	}
	if st.Asked*4 > requests {
		t.Fatalf("%d round trips for %d requests", st.Asked, requests)
	}
	ctx := context.Background()
	if res, err := c.Peek(ctx, middleware.DefaultPrefix+"route:GET /api", route); err != nil || res.Remaining != 100_000-200-1 {
		t.Fatalf("the route at the server: %+v, %v; want the 200 that passed counted", res, err)
	}
}
