package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/resp"
)

// BenchmarkMiddleware measures what the limiter adds to a request: the same handler
// bare and behind one dimension on each backend, at a limit no request reaches (the
// lesson's /fast against /limited). "handler" calls ServeHTTP directly: the
// middleware's own cost plus one backend call; "http" goes through a loopback HTTP
// server and client, as the lesson measured. Besides ns/op it reports the p50 and
// p99 of the single requests.
//
//	go test -run '^$' -bench Middleware -benchtime 20000x ./middleware/
func BenchmarkMiddleware(b *testing.B) {
	limited := func(b *testing.B, c *client.Client) http.Handler {
		lim, err := middleware.New(middleware.Config{Client: c, Dimensions: []middleware.Dimension{
			{Name: "ip", By: middleware.ByIP, Limit: client.Token(1_000_000_000, time.Second)}}})
		if err != nil {
			b.Fatal(err)
		}
		return lim.Handler(ok)
	}
	handlers := []struct {
		name string
		make func(b *testing.B) http.Handler
	}{
		{"bare", func(*testing.B) http.Handler { return ok }},
		{"embedded", func(b *testing.B) http.Handler { return limited(b, embeddedClient(b, true)) }},
		{"rlserver", func(b *testing.B) http.Handler {
			return limited(b, networkClient(b, testenv.StartServer(b, resp.Config{}), false, 0))
		}},
		{"redis+lua", func(b *testing.B) http.Handler { return limited(b, networkClient(b, testenv.StartRedis(b), true, 0)) }},
	}
	for _, h := range handlers {
		b.Run("handler/"+h.name, func(b *testing.B) {
			handler := h.make(b)
			r := httptest.NewRequest("GET", "/limited", nil)
			w := &discard{header: http.Header{}}
			measure(b, func() {
				handler.ServeHTTP(w, r)
				if w.status != 0 && w.status != 200 {
					b.Fatalf("status %d", w.status)
				}
			})
		})
	}
	for _, h := range handlers {
		if h.name == "embedded" {
			continue
		}
		b.Run("http/"+h.name, func(b *testing.B) {
			srv := httptest.NewServer(h.make(b))
			defer srv.Close()
			hc := srv.Client()
			measure(b, func() {
				resp, err := hc.Get(srv.URL + "/limited")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			})
		})
	}
}

// measure runs op b.N times, timing each, and reports the p50 and p99.
func measure(b *testing.B, op func()) {
	took := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		op()
		took[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1000, "p99-µs")
}

// discard is a ResponseWriter that keeps only the status.
type discard struct {
	header http.Header
	status int
}

func (d *discard) Header() http.Header { return d.header }

func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

func (d *discard) WriteHeader(status int) { d.status = status }
