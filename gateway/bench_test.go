package gateway

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const benchPolicy = `
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: ip
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: plan
    rate_limit: {unit: hour, requests_per_unit: 1000000}
`

// benchRequests are n requests of k descriptors each over 100,000 users.
func benchRequests(n, k int) []*pb.RateLimitRequest {
	keys := []string{"user", "path", "ip", "tenant", "plan"}
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		r := &pb.RateLimitRequest{Domain: "bench"}
		for j := range k {
			r.Descriptors = append(r.Descriptors, &rlv3.RateLimitDescriptor{
				Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: keys[j], Value: strconv.Itoa(i % 100_000)}}})
		}
		reqs[i] = r
	}
	return reqs
}

// BenchmarkDecide is a request's cost in the front and the engine, without the wire:
// one descriptor against five (the bound: five cost less than twice one).
func BenchmarkDecide(b *testing.B) {
	e, _ := newEngine(b, benchPolicy)
	s, err := New(Config{Decider: e})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, k := range []int{1, 5} {
		reqs := benchRequests(100_000, k)
		for _, r := range reqs { // every key made first: the steady state, not the store's growth
			if _, err := s.decide(r); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(strconv.Itoa(k)+"desc", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.decide(reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkShouldRateLimit is the call over loopback gRPC, 32 streams on one
// connection, of one descriptor and of five: client and server share the process
// (make bench-rls separates them).
func BenchmarkShouldRateLimit(b *testing.B) {
	e, _ := newEngine(b, benchPolicy)
	f := startFront(b, Config{Decider: e})
	for _, k := range []int{1, 5} {
		reqs := benchRequests(100_000, k)
		for _, r := range reqs { // every key made first: b.Run runs the body several times
			if _, err := f.srv.decide(r); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(strconv.Itoa(k)+"desc", func(b *testing.B) { benchCalls(b, f, reqs) })
	}
}

// benchCalls makes f's client call ShouldRateLimit with reqs in turn, b.N times over
// 32 streams (16 goroutines a CPU of 2).
func benchCalls(b *testing.B, f *front, reqs []*pb.RateLimitRequest) {
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := ctxT(b)
		for pb.Next() {
			if _, err := f.client.ShouldRateLimit(ctx, reqs[next.Add(1)%int64(len(reqs))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCheck is /check's handler alone, as nginx's subrequest asks it: one
// remote_address descriptor over 100,000 addresses, no wire.
func BenchmarkCheck(b *testing.B) {
	e, _ := newEngine(b, "domain: bench\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n")
	s, err := New(Config{Decider: e})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/check?domain=bench&descriptor=remote_address&status=403", nil)
		reqs[i].RemoteAddr = "127.0.0.1:5000"
		reqs[i].Header.Set("X-Real-IP", "10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250))
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		clear(w.h)
		s.serveCheck(w, reqs[i%len(reqs)])
		if w.code != 0 && w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// discardWriter is a ResponseWriter keeping only the status and the headers.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkTracing is BenchmarkShouldRateLimit's call of one descriptor without a
// tracer provider and with one at 1% sampling (the front's draw, the SDK keeping what
// it drew, a batch exporter that drops the spans): what tracing costs a call.
func BenchmarkTracing(b *testing.B) {
	reqs := benchRequests(100_000, 1)
	for _, bc := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", nil},
		{"1pct", sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e, _ := newEngine(b, benchPolicy)
			f := startFront(b, Config{Decider: e, TracerProvider: bc.tp, TraceSampling: 0.01})
			benchCalls(b, f, reqs)
		})
	}
}
