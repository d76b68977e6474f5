package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/resp"
)

// TestNoPollution: a request one dimension denies consumes nothing in the others,
// on every backend. Checked one by one, the IP's count would grow with every request
// the user's limit refuses.
func TestNoPollution(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) *client.Client
	}{
		{"embedded", func(t *testing.T) *client.Client { return embeddedClient(t, false) }},
		{"rlserver", func(t *testing.T) *client.Client {
			return networkClient(t, testenv.StartServer(t, resp.Config{}), false, 5*sec)
		}},
		{"redis+lua", func(t *testing.T) *client.Client { return networkClient(t, testenv.StartRedis(t), true, 5*sec) }},
	}
	ip := client.Fixed(100, minute)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c := b.open(t)
			lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam, Dimensions: []middleware.Dimension{
				{Name: "ip", By: middleware.ByIP, Limit: ip},
				{Name: "user", By: middleware.ByUser, Limit: client.Fixed(1, minute)}}})
			if err != nil {
				t.Fatal(err)
			}
			h := lim.Handler(ok)
			for i := range 5 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/?user=bob", nil))
				if want := map[bool]int{true: 200, false: 429}[i == 0]; rec.Code != want {
					t.Fatalf("request %d: %d, want %d", i, rec.Code, want)
				}
			}
			// One request consumed from the IP's 100; the peek leaves 98.
			if res, err := c.Peek(context.Background(), "rl:ip:192.0.2.1", ip); err != nil || res.Remaining != 98 {
				t.Fatalf("Peek the IP's key: %+v, %v; want 98 remaining after it: the 4 denied requests took nothing", res, err)
			}
			if s := lim.Stats(); s != (middleware.Stats{Allowed: 1, Limited: 4}) {
				t.Fatalf("Stats() = %+v", s)
			}
		})
	}
}

// gated is a handler that blocks each request until its gate (?n=) opens, and says
// when it has entered.
type gated struct {
	entered chan string
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func newGated() *gated {
	return &gated{entered: make(chan string), gates: map[string]chan struct{}{}}
}

func (g *gated) gate(n string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[n] == nil {
		g.gates[n] = make(chan struct{})
	}
	return g.gates[n]
}

func (g *gated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := r.URL.Query().Get("n")
	g.entered <- n
	<-g.gate(n)
	io.WriteString(w, "ok")
}

// TestConcurrency holds requests inside the handler: a user's third at once is
// refused with the time until the earliest lease ends, another user is not, and a
// finished request gives its place back.
func TestConcurrency(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false), User: userParam,
		Dimensions:  []middleware.Dimension{{Name: "rate", By: middleware.ByUser, Limit: client.Fixed(100, minute)}},
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 2, Lease: minute}})
	if err != nil {
		t.Fatal(err)
	}
	g := newGated()
	h := lim.Handler(g)
	var wg sync.WaitGroup
	done := map[string]chan *httptest.ResponseRecorder{}
	start := func(target, n string) {
		ch := make(chan *httptest.ResponseRecorder, 1)
		done[n] = ch
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", target+"&n="+n, nil))
			ch <- rec
		})
		if got := <-g.entered; got != n {
			t.Fatalf("request %s entered, want %s", got, n)
		}
	}
	defer func() { // never leave a request blocked, whatever failed
		for _, n := range []string{"1", "2", "3", "4"} {
			select {
			case <-g.gate(n):
			default:
				close(g.gate(n))
			}
		}
		wg.Wait()
	}()
	start("/?user=alice", "1")
	start("/?user=alice", "2")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?user=alice&n=x", nil))
	// The rate limit admitted it: only the concurrency limit's answer shows. The
	// handler has no running time yet: the leases end 2 renewals (2 s) on, not after
	// the Lease's minute.
	checkResponse(t, rec, 429, `{"error":"concurrency_limited","retryAfterMs":2000}`, map[string]string{
		"Retry-After": "2", "Content-Type": "application/json",
	})
	start("/?user=bob", "3")
	close(g.gate("1"))
	if rec := <-done["1"]; rec.Code != 200 {
		t.Fatalf("request 1: %d", rec.Code)
	}
	start("/?user=alice", "4") // in the place request 1 gave back
	if s := lim.Stats(); s != (middleware.Stats{Allowed: 4, Busy: 1}) {
		t.Fatalf("Stats() = %+v, want 4 allowed, 1 busy", s)
	}
}

// TestConcurrencyReleased: the lease is given back when the handler returns, and when
// it panics; a request without a key for the limit (anonymous) is not limited.
func TestConcurrencyReleased(t *testing.T) {
	c := embeddedClient(t, false)
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam,
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 1, Lease: minute}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("panic") != "" {
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "ok")
	}))
	serve := func(target string) (code int, panicked bool) {
		defer func() { panicked = recover() != nil }()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec.Code, false
	}
	for i, tc := range []struct {
		target   string
		code     int
		panicked bool
	}{
		{"/?user=alice", 200, false},
		{"/?user=alice", 200, false},
		{"/?user=alice&panic=1", 0, true},
		{"/?user=alice", 200, false},
		{"/", 200, false},
	} {
		if code, panicked := serve(tc.target); panicked != tc.panicked || !panicked && code != tc.code {
			t.Fatalf("request %d (%s): %d, panicked %v; want %d, panicked %v", i, tc.target, code, panicked, tc.code, tc.panicked)
		}
	}
	// Every lease was given back: the key is free.
	lease, err := c.Acquire(context.Background(), "rl:inflight:alice", 1, minute)
	if err != nil || !lease.Acquired {
		t.Fatalf("Acquire alice's key: %+v, %v; want a free place", lease, err)
	}
}
