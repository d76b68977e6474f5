package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// backendClient is the app's client, failing open, on backend: "embedded", or
// "rlserver" on a server started for the test; closed when the test ends.
func backendClient(t *testing.T, backend string) *client.Client {
	t.Helper()
	var addr string
	if backend == "rlserver" {
		addr = testenv.StartServer(t, resp.Config{})
	}
	c, closeBackend, err := newClient(config{backend: backend, limiter: addr, fallback: "open", replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeBackend)
	return c
}

// TestApp runs the app on the embedded backend and on an rlserver: /fast is never
// limited, /limited lets 3 a second per user through and then answers the lesson's 429.
func TestApp(t *testing.T) {
	for _, backend := range []string{"embedded", "rlserver"} {
		t.Run(backend, func(t *testing.T) {
			c := backendClient(t, backend)
			app, _, err := newApp(c, config{rate: 3, reportRate: 1, timeout: 5 * time.Second}, hello)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(app)
			defer srv.Close()
			get := func(path string) (int, http.Header, string) {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(body)
			}
			for range 5 {
				if code, h, body := get("/fast"); code != 200 || body != `{"ok":true}` || h.Get("X-RateLimit-Limit") != "" {
					t.Fatalf("/fast: %d %q %v; want 200 without rate-limit headers", code, body, h)
				}
			}
			for i := range 3 {
				code, h, _ := get("/limited?user=drain2")
				if code != 200 || h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
					t.Fatalf("/limited %d: %d %v; want 200, limit 3, remaining %d", i, code, h, 2-i)
				}
			}
			// A token every 333.3 ms: the body says how long, to the ms; less the time the
			// three calls above took, which a loaded machine stretches to tens of ms.
			code, h, body := get("/limited?user=drain2")
			var reply struct {
				Error        string
				RetryAfterMs int
			}
			if err := json.Unmarshal([]byte(body), &reply); err != nil {
				t.Fatalf("/limited, drained: body %q: %v", body, err)
			}
			// The wait is spread by up to spread.Jitter (10 ms at least).
			most := 334 + int(spread.Jitter(334*time.Millisecond).Milliseconds())
			if code != 429 || h.Get("Retry-After") != "1" || h.Get("RateLimit") == "" ||
				reply.Error != "rate_limited" || reply.RetryAfterMs < 1 || reply.RetryAfterMs > most {
				t.Fatalf("/limited, drained: %d %q %v; want 429, Retry-After 1, retryAfterMs in 1..%d", code, body, h, most)
			}
			if code, _, body := get("/healthz"); code != 200 || body != `{"allowed":3,"limited":1,"busy":0,"failed":0,"degraded":0}` {
				t.Fatalf("/healthz: %d %q", code, body)
			}
		})
	}
}

func TestNewClientRefusesBadFlags(t *testing.T) {
	for _, cfg := range []config{
		{backend: "memcached", limiter: "127.0.0.1:11211", fallback: "open", replicas: 1},
		{backend: "rlserver", limiter: "127.0.0.1:6380", fallback: "sideways", replicas: 1},
		{backend: "rlserver", limiter: "127.0.0.1:6380", fallback: "local", replicas: 0},
		{backend: "embedded", fallback: "local", replicas: 2},
	} {
		if _, _, err := newClient(cfg); err == nil {
			t.Errorf("newClient accepted %+v", cfg)
		}
	}
}

// TestAppFallbackLocal: with the limiter down and -fallback local -replicas 3, the app
// goes on limiting at a third of the rate, and /healthz counts the local decisions.
func TestAppFallbackLocal(t *testing.T) {
	cfg := config{backend: "rlserver", limiter: testenv.DeadAddr(t), rate: 6, reportRate: 1, timeout: 50 * time.Millisecond, fallback: "local", replicas: 3}
	c, closeBackend, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	app, _, err := newApp(c, cfg, hello)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for range 4 {
		rec := httptest.NewRecorder()
		app.ServeHTTP(rec, httptest.NewRequest("GET", "/limited?user=u", nil))
		codes[rec.Code]++
	}
	if codes[200] != 2 || codes[429] != 2 {
		t.Errorf("4 requests at 6/s over 3 replicas: %v, want 2 served, 2 refused", codes)
	}
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if body := rec.Body.String(); body != `{"allowed":2,"limited":2,"busy":0,"failed":0,"degraded":4}` {
		t.Errorf("/healthz: %s", body)
	}
}

// TestAppReport runs /report on the embedded backend and on an rlserver: it passes the
// user and IP limits and its own (1 a minute per user here), and a refusal by its own
// limit carries that limit's headers only; /limited never shows /report's limit; a
// third /report while two are in flight is refused by the places, with a Retry-After
// and none of the rate limits' headers.
func TestAppReport(t *testing.T) {
	for _, backend := range []string{"embedded", "rlserver"} {
		t.Run(backend, func(t *testing.T) {
			c := backendClient(t, backend)
			entered, release := make(chan struct{}), make(chan struct{})
			report := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("hold") {
					entered <- struct{}{}
					<-release
				}
				hello.ServeHTTP(w, r)
			})
			app, _, err := newApp(c, config{rate: 100, reportRate: 1, timeout: 5 * time.Second}, report)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(app)
			defer srv.Close()
			get := func(path string) (int, http.Header, string) {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Error(err)
					return 0, nil, ""
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(body)
			}

			code, h, _ := get("/report?user=alice")
			if code != 200 || h.Get("RateLimit-Policy") != `"user";q=100;w=1, "ip";q=200;w=1, "report";q=1;w=60` ||
				!strings.HasPrefix(h.Get("RateLimit"), `"user";r=99;t=`) || !strings.Contains(h.Get("RateLimit"), `"report";r=0;t=`) {
				t.Fatalf("first /report: %d %v; want 200 and the three limits' headers", code, h)
			}
			code, h, body := get("/report?user=alice")
			retry, _ := strconv.Atoi(h.Get("Retry-After"))
			most := int((time.Minute + spread.Jitter(time.Minute)) / time.Second) // the wait is spread
			if code != 429 || h.Get("RateLimit-Policy") != `"report";q=1;w=60` || !strings.HasPrefix(h.Get("RateLimit"), `"report";r=0;t=`) ||
				h.Get("X-RateLimit-Limit") != "1" || h.Get("X-RateLimit-Remaining") != "0" ||
				retry < 1 || retry > most || !strings.Contains(body, `"rate_limited"`) {
				t.Fatalf("second /report: %d %q %v; want 429 with the report limit's headers only", code, body, h)
			}
			if code, h, _ := get("/limited?user=alice"); code != 200 || strings.Contains(h.Get("RateLimit-Policy")+h.Get("RateLimit"), "report") {
				t.Fatalf("/limited: %d %v; want 200 without /report's limit", code, h)
			}

			done := make(chan int, 2)
			for _, user := range []string{"bob", "carol"} {
				go func() {
					code, _, _ := get("/report?hold&user=" + user)
					done <- code
				}()
				<-entered
			}
			code, h, body = get("/report?user=dave")
			close(release)
			if code != 429 || !strings.Contains(body, `"concurrency_limited"`) || h.Get("Retry-After") == "" ||
				h.Get("RateLimit") != "" || h.Get("RateLimit-Policy") != "" || h.Get("X-RateLimit-Limit") != "" {
				t.Errorf("a third /report in flight: %d %q %v; want 429 concurrency_limited with a Retry-After only", code, body, h)
			}
			for range 2 {
				if code := <-done; code != 200 {
					t.Errorf("a held /report: %d, want 200", code)
				}
			}
			if code, _, body := get("/healthz"); code != 200 || body != `{"allowed":4,"limited":1,"busy":1,"failed":0,"degraded":0}` {
				t.Errorf("/healthz: %d %q", code, body)
			}
		})
	}
}
