package middleware_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/shed"
)

// classOf is the tests' Priority: the X-Priority header.
func classOf(r *http.Request) string { return r.Header.Get("X-Priority") }

// get serves one request of class (no header if "") from peer through h.
func get(h http.Handler, path, class string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	if class != "" {
		r.Header.Set("X-Priority", class)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestPriorityClasses: on a limit of 10 a minute where "sheddable" leaves 20% to
// "critical", sheddable requests get 8 and critical ones the last 2; a request
// without a class, or of a class the service does not know, is sheddable. The
// concurrency limit's 5 places keep 2 (40%) the same way.
func TestPriorityClasses(t *testing.T) {
	p, err := client.NewPriorities(client.Class{Name: "critical"}, client.Class{Name: "sheddable", ReservePercent: 20})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false),
		Priorities: p, Priority: classOf,
		Dimensions: []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(10, minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	for i, class := range []string{"sheddable", "", "vip", "sheddable", "sheddable", "sheddable", "sheddable", "sheddable"} {
		if rec := get(h, "/", class); rec.Code != 200 {
			t.Fatalf("request %d (%q): %d, want 200 within sheddable's 8", i, class, rec.Code)
		}
	}
	if rec := get(h, "/", "sheddable"); rec.Code != 429 || !waitWithin(rec.Header().Get("Retry-After"), "60", sec) {
		t.Fatalf("the 9th, sheddable: %d Retry-After %q, want 429 until the window ends", rec.Code, rec.Header().Get("Retry-After"))
	}
	for i := range 2 {
		if rec := get(h, "/", "critical"); rec.Code != 200 {
			t.Fatalf("critical request %d in the reserve: %d, want 200", i, rec.Code)
		}
	}
	if rec := get(h, "/", "critical"); rec.Code != 429 {
		t.Fatalf("the 11th, critical: %d, want 429: the limit is 10", rec.Code)
	}

	conc, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, true),
		Priorities: mustPriorities(t, 40), Priority: classOf,
		Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByRoute, Limit: 5, Lease: 10 * sec}})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	entered := make(chan struct{}, 5)
	hold := conc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-gate
	}))
	done := make(chan int, 5)
	start := func(class string) {
		go func() { done <- get(hold, "/slow", class).Code }()
		<-entered
	}
	for range 3 {
		start("sheddable")
	}
	if rec := get(hold, "/slow", "sheddable"); rec.Code != 429 || !strings.Contains(rec.Body.String(), "concurrency_limited") {
		t.Errorf("a 4th sheddable request with 2 of 5 places left: %d %q, want 429 concurrency_limited", rec.Code, rec.Body.String())
	}
	start("critical")
	start("critical")
	close(gate)
	for range 5 {
		if code := <-done; code != 200 {
			t.Errorf("a request that had a place: %d", code)
		}
	}
}

// mustPriorities is "critical" and "sheddable", the latter leaving percent.
func mustPriorities(t *testing.T, percent int) client.Priorities {
	t.Helper()
	p, err := client.NewPriorities(client.Class{Name: "critical"}, client.Class{Name: "sheddable", ReservePercent: percent})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShedderFirst: with its one slot taken, the Shedder answers a sheddable request
// 503 before the limiter is called (a dead limiter that fails closed would answer
// 429), lets health checks through, and counts the shed by priority.
func TestShedderFirst(t *testing.T) {
	s, err := shed.New(shed.Config{Priorities: []string{"critical", "sheddable"}, MaxLimit: 1, InitialLimit: 1,
		QueueTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{Client: networkClient(t, testenv.DeadAddr(t), false, 0),
		Timeout: testTimeout, Fallback: middleware.FallbackClosed, Logger: slog.New(slog.DiscardHandler),
		Shedder: s, Priorities: mustPriorities(t, 20), Priority: classOf,
		Dimensions: []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(10, minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	ticket, admitted := s.Allow(time.Now(), 0) // the one slot, as a running request holds it
	if !admitted {
		t.Fatal("the Shedder's one slot was not free")
	}
	if rec := get(h, "/", "sheddable"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "overloaded") {
		t.Errorf("sheddable with the slot taken: %d %q, want the shedder's 503", rec.Code, rec.Body.String())
	}
	if rec := get(h, "/healthz", "sheddable"); rec.Code != 200 {
		t.Errorf("a health check with the slot taken: %d, want 200", rec.Code)
	}
	if st := lim.Stats(); st != (middleware.Stats{Bypassed: 1}) {
		t.Errorf("Stats() = %+v: the shed request must not reach the limiter", st)
	}
	ticket.Done(time.Now())
	if rec := get(h, "/", "critical"); rec.Code != 429 {
		t.Errorf("critical with the slot free: %d, want the dead limiter's 429 (FallbackClosed)", rec.Code)
	}
	if st := s.Stats(); st.Shed[1] != 1 || st.Shed[0] != 0 {
		t.Errorf("shed by priority: %v, want one sheddable", st.Shed)
	}
}

// TestPriorityBadConfig: priority settings that cannot work are refused by New.
func TestPriorityBadConfig(t *testing.T) {
	s, err := shed.New(shed.Config{Priorities: []string{"high", "low"}, MaxLimit: 4, QueueTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := embeddedClient(t, false)
	dims := []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(10, minute)}}
	for _, tc := range []struct {
		name string
		cfg  middleware.Config
		want string
	}{
		{"Priority alone", middleware.Config{Client: c, Dimensions: dims, Priority: classOf}, "Config.Priorities has none"},
		{"Priorities without Priority", middleware.Config{Client: c, Dimensions: dims, Priorities: mustPriorities(t, 20)}, "needs Config.Priority"},
		{"classes the Shedder lacks", middleware.Config{Client: c, Dimensions: dims, Priorities: mustPriorities(t, 20), Priority: classOf, Shedder: s},
			`"critical" is no priority of Config.Shedder`},
		{"with a policy", middleware.Config{Client: networkClient(t, testenv.DeadAddr(t), false, 0), Priorities: mustPriorities(t, 20), Priority: classOf,
			Policy: &middleware.Policy{Domain: "edge", Descriptors: []string{"remote_address"}}}, "a policy's domain names its own"},
	} {
		if _, err := middleware.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
