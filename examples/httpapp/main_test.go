package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestApp runs the app on the embedded backend and on an rlserver: /fast is never
// limited, /limited lets 3 a second per user through and then answers the lesson's 429.
func TestApp(t *testing.T) {
	for _, backend := range []string{"embedded", "rlserver"} {
		t.Run(backend, func(t *testing.T) {
			var addr string
			if backend == "rlserver" {
				addr = testenv.StartServer(t, resp.Config{})
			}
			c, closeBackend, err := newClient(backend, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer closeBackend()
			app, _, err := newApp(c, config{rate: 3, timeout: 5 * time.Second})
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
			if code != 429 || h.Get("Retry-After") != "1" || h.Get("RateLimit") == "" ||
				reply.Error != "rate_limited" || reply.RetryAfterMs < 1 || reply.RetryAfterMs > 334 {
				t.Fatalf("/limited, drained: %d %q %v; want 429, Retry-After 1, retryAfterMs in 1..334", code, body, h)
			}
			if code, _, body := get("/healthz"); code != 200 || body != `{"allowed":3,"limited":1,"failed":0}` {
				t.Fatalf("/healthz: %d %q", code, body)
			}
		})
	}
}

func TestNewClientRefusesUnknownBackend(t *testing.T) {
	if _, _, err := newClient("memcached", "127.0.0.1:11211"); err == nil {
		t.Fatal("newClient accepted -backend memcached")
	}
}
