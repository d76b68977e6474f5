package middleware_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

// slowHandler runs each request for took, on the real clock, says when one has
// entered, and keeps when each returned.
type slowHandler struct {
	took    time.Duration
	entered chan struct{}
	mu      sync.Mutex
	ends    []time.Time
}

func (s *slowHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.entered <- struct{}{}
	time.Sleep(s.took)
	s.mu.Lock()
	s.ends = append(s.ends, time.Now())
	s.mu.Unlock()
}

// refusal is a 429's Retry-After and retryAfterMs.
func refusal(t *testing.T, rec *httptest.ResponseRecorder) (header, body time.Duration) {
	t.Helper()
	var b struct {
		Error        string
		RetryAfterMs int64
	}
	secs, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if rec.Code != 429 || err != nil || json.Unmarshal(rec.Body.Bytes(), &b) != nil || b.Error != "concurrency_limited" {
		t.Fatalf("got %d %v %q, want a concurrency 429", rec.Code, rec.Header(), rec.Body.String())
	}
	return time.Duration(secs) * time.Second, time.Duration(b.RetryAfterMs) * time.Millisecond
}

// TestConcurrencyRealWait: 2 places on a handler that runs 2 s, on a real rlserver
// and the real clock. A third request is told when the earliest place really frees,
// within 1 s (Retry-After, whole seconds, at most 1 s past it), not the
// Lease's 10 s: the leases are renewed towards the handler's expected end. Asked
// twice: at once, and after renewals.
func TestConcurrencyRealWait(t *testing.T) {
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	slow := &slowHandler{took: 2 * time.Second, entered: make(chan struct{}, 4)}
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: networkClient(t, p.Addr, false, 5*sec),
		Concurrency: &middleware.Concurrency{Name: "report", By: middleware.ByRoute, Limit: 2, Lease: 10 * sec, Renew: 250 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(slow)
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/report", nil))
		return rec
	}
	if rec := serve(); rec.Code != 200 { // the handler's first time: its estimate
		t.Fatalf("first request: %d", rec.Code)
	}
	<-slow.entered
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if rec := serve(); rec.Code != 200 {
				t.Errorf("a request with a place: %d", rec.Code)
			}
		})
	}
	<-slow.entered
	<-slow.entered
	type probe struct {
		at           time.Time
		header, body time.Duration
	}
	var probes []probe
	for _, after := range []time.Duration{0, time.Second} {
		time.Sleep(after)
		header, body := refusal(t, serve())
		probes = append(probes, probe{time.Now(), header, body})
	}
	wg.Wait()
	freed := slow.ends[1] // the earlier of the two held places' ends
	for i, pr := range probes {
		real := freed.Sub(pr.at)
		t.Logf("probe %d: Retry-After %v, retryAfterMs %v; the place freed %v later", i, pr.header, pr.body, real)
		if pr.header > real+time.Second || (pr.body-real).Abs() > time.Second {
			t.Errorf("probe %d: told Retry-After %v (%v in the body); the place freed %v later: want within 1 s",
				i, pr.header, pr.body, real)
		}
	}
}

// TestConcurrencyRenewed: a request running 3 times its 1 s lease keeps its place
// (renewed every 300 ms), and a refused request is told at most the Lease: a crashed
// instance's place frees within one.
func TestConcurrencyRenewed(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, true),
		Concurrency: &middleware.Concurrency{Name: "job", By: middleware.ByRoute, Limit: 1, Lease: sec,
			Renew: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") != "" {
			close(entered)
			<-release
		}
	}))
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/job?hold=1", nil))
		done <- rec.Code
	}()
	<-entered
	time.Sleep(3 * sec)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/job", nil))
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the long request: %d", code)
	}
	if _, body := refusal(t, rec); body > sec {
		t.Errorf("refused with retryAfterMs %v, want at most the 1 s Lease", body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/job", nil))
	if rec.Code != 200 {
		t.Errorf("after the long request: %d, want its place given back", rec.Code)
	}
}
