package shed

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestHandlerShedsWith503(t *testing.T) {
	s := newTest(t, 1, Config{RetrySpread: time.Second})
	ran := 0
	h := s.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++ }), HandlerOptions{
		Priority: func(r *http.Request) Priority { p, _ := s.Lookup(r.Header.Get("Priority")); return p },
		Bypass:   func(r *http.Request) bool { return r.URL.Path == "/ping" },
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	s.Allow(t0, 0) // the only slot is taken

	get := func(path, priority string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Priority", priority)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("/work", "sheddable")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Error        string
		RetryAfterMs int64
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusServiceUnavailable || got.Error != "overloaded" || ran != 0 {
		t.Fatalf("shed request: %d %q, handler ran %d times; want 503 overloaded, not run", resp.StatusCode, body, ran)
	}
	// Base 1 ms (no window closed), spread 1 s: Retry-After is 1 or 2 s, the ms the same time.
	if got.RetryAfterMs < 1 || got.RetryAfterMs > 1001 || secs != int((got.RetryAfterMs+999)/1000) {
		t.Errorf("Retry-After %q and retryAfterMs %d: want 1 ms to 1001 ms, the header its ceiling in s", resp.Header.Get("Retry-After"), got.RetryAfterMs)
	}
	for _, path := range []string{"/healthz", "/readyz", "/ping"} {
		if resp := get(path, "sheddable"); resp.StatusCode != http.StatusOK {
			t.Errorf("health check %s at the limit: %d, want 200", path, resp.StatusCode)
		}
	}
	if ran != 3 {
		t.Errorf("handler ran %d times, want 3 (the health checks)", ran)
	}
	if st := s.Stats(); st.Shed[2] != 1 || st.Admitted[0] != 1 {
		t.Errorf("health checks counted: %+v", st)
	}
}

func TestHandlerGivesSlotBackOnPanic(t *testing.T) {
	s := newTest(t, 1, Config{})
	h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), HandlerOptions{})
	func() {
		defer func() { recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if st := s.Stats(); st.InFlight != 0 || st.Admitted[1] != 1 {
		t.Errorf("after a panic: %+v", st)
	}
}
