package middleware_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// TestWith: a route's own limit on the one Limiter. A request it refuses is answered
// by it alone (its Retry-After, X-RateLimit-* and RateLimit items, none of the user's
// or the IP's, which admitted it), and consumes nothing in the others; a route
// without it is not limited by it. Two stacked Limiters answered Retry-After: 30 with
// X-RateLimit-Remaining: 4 and RateLimit: "user";r=4;t=2, "ip";r=19;t=37 at once.
func TestWith(t *testing.T) {
	c := embeddedClient(t, false)
	user := client.Token(5, 10*sec)
	ip := client.Fixed(20, minute)
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam, Dimensions: []middleware.Dimension{
		{Name: "user", By: middleware.ByUser, Limit: user},
		{Name: "ip", By: middleware.ByIP, Limit: ip},
		{Name: "report", By: middleware.ByUser, Limit: client.Fixed(1, 30*sec), Optional: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	report, err := lim.With("report")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(h *middleware.Limiter, target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.Handler(ok).ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec
	}
	checkResponse(t, serve(report, "/report?user=alice"), 200, "ok", map[string]string{
		"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "30",
		"RateLimit-Policy": `"user";q=5;w=10, "ip";q=20;w=60, "report";q=1;w=30`,
		"RateLimit":        `"user";r=4;t=2, "ip";r=19;t=60, "report";r=0;t=30`,
	})
	checkResponse(t, serve(report, "/report?user=alice"), 429, `{"error":"rate_limited","retryAfterMs":30000}`, map[string]string{
		"Retry-After": "30", "X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "30",
		"RateLimit-Policy": `"report";q=1;w=30`, "RateLimit": `"report";r=0;t=30`, "Content-Type": "application/json",
	})
	// The refusal took nothing from the user's or the IP's limit: a peek answers what
	// one more request would leave, 3 of the user's 5 and 18 of the IP's 20.
	ctx := context.Background()
	if res, err := c.Peek(ctx, "rl:user:alice", user); err != nil || res.Remaining != 3 {
		t.Errorf("the user's limit after the refusal: %+v, %v; want 3 remaining", res, err)
	}
	if res, err := c.Peek(ctx, "rl:ip:192.0.2.1", ip); err != nil || res.Remaining != 18 {
		t.Errorf("the IP's limit after the refusal: %+v, %v; want 18 remaining", res, err)
	}
	// Another route, on the Limiter without "report", is not limited by it.
	checkResponse(t, serve(lim, "/other?user=alice"), 200, "ok", map[string]string{
		"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "3", "X-RateLimit-Reset": "4",
		"RateLimit-Policy": `"user";q=5;w=10, "ip";q=20;w=60`, "RateLimit": `"user";r=3;t=4, "ip";r=18;t=60`,
	})
	if s := lim.Stats(); s != (middleware.Stats{Allowed: 2, Limited: 1}) {
		t.Errorf("Stats() = %+v, shared by both Limiters: want 2 allowed, 1 limited", s)
	}
}

// TestWithStacked: a Limiter wrapping another that refuses leaves none of its own
// figures on the refusal, whichever limit refuses: rate, concurrency or a failure.
func TestWithStacked(t *testing.T) {
	c := embeddedClient(t, false)
	outer, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam,
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(5, 10*sec)}}})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam,
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 1, Lease: minute}})
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Acquire(context.Background(), "rl:inflight:alice", 1, minute)
	if err != nil || !held.Acquired {
		t.Fatalf("Acquire: %+v, %v", held, err)
	}
	rec := httptest.NewRecorder()
	outer.Handler(inner.Handler(ok)).ServeHTTP(rec, httptest.NewRequest("GET", "/?user=alice", nil))
	checkResponse(t, rec, 429, `{"error":"concurrency_limited","retryAfterMs":60000}`, map[string]string{
		"Retry-After": "60", "Content-Type": "application/json",
	})
}

// TestWithBad: With refuses, at once, a name that is no Optional limit of the Config.
func TestWithBad(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Client: embeddedClient(t, false), User: userParam,
		Dimensions: []middleware.Dimension{
			{Name: "user", By: middleware.ByUser, Limit: client.Token(5, 10*sec)},
			{Name: "report", By: middleware.ByUser, Limit: client.Fixed(1, 30*sec), Optional: true}},
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 2, Lease: minute, Optional: true}})
	if err != nil {
		t.Fatal(err)
	}
	both, err := lim.With("report", "inflight")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lim   *middleware.Limiter
		names []string
		want  string
	}{
		{lim, []string{"reports"}, `With("reports"): no dimension or concurrency limit of that name`},
		{lim, []string{"user"}, `With("user"): the dimension applies here already`},
		{lim, []string{"report", "report"}, `With("report"): the dimension applies here already`},
		{both, []string{"report"}, `With("report"): the dimension applies here already`},
		{both, []string{"inflight"}, `With("inflight"): the concurrency limit applies here already`},
	} {
		if _, err := c.lim.With(c.names...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("With(%q): %v, want %q", c.names, err, c.want)
		}
	}
}
