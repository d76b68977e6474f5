package gateway

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/internal/sampled"
)

// The fronts draw their sample before any of OpenTelemetry's work: otelgrpc and
// otelhttp do theirs (the propagators, a context, a non-recording span) for every
// call, sampled or not, which at 1% sampling cost ShouldRateLimit a quarter of its
// throughput on make bench-rls (0.74x of tracing off, same run). A call the draw
// leaves out, and that no caller's sampled trace asks for, costs a random draw; a call
// drawn is marked (sampled.Mark) so that the SDK's sampler keeps it without drawing
// again.

// traceparentSampled reports whether a W3C traceparent value
// (version-traceid-parentid-flags) asks for its trace to be sampled.
func traceparentSampled(v string) bool {
	flags := v[strings.LastIndexByte(v, '-')+1:]
	return len(flags) == 2 && strings.Contains("13579bdfBDF", flags[1:])
}

// drawn reports whether a call is traced: its caller's trace is sampled (traceparent),
// or it is drawn at rate.
func drawn(traceparent string, rate float64) bool {
	return traceparent != "" && traceparentSampled(traceparent) || rand.Float64() < rate
}

// tracingUnary traces the unary calls drawn, a span each named by the method and
// continuing the caller's trace context; health checks are never traced. It is an
// interceptor rather than otelgrpc's stats.Handler: with any stats.Handler, grpc-go
// builds the stats of every call for it, 23 allocations a ShouldRateLimit even when
// the handler ignores them (BenchmarkTracing: 159 allocations off, 182 at 1%).
func tracingUnary(tp trace.TracerProvider, rate float64) grpc.UnaryServerInterceptor {
	tracer := tp.Tracer("github.com/rlserver/rlserver/gateway")
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var parent string
		if v := metadata.ValueFromIncomingContext(ctx, "traceparent"); len(v) > 0 {
			parent = v[0]
		}
		if strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") || !drawn(parent, rate) {
			return handler(ctx, req)
		}
		ctx = propagation.TraceContext{}.Extract(sampled.Mark(ctx), incoming{ctx})
		service, method, _ := strings.Cut(strings.TrimPrefix(info.FullMethod, "/"), "/")
		ctx, span := tracer.Start(ctx, service+"/"+method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service),
				attribute.String("rpc.method", method)))
		defer span.End()
		resp, err := handler(ctx, req)
		code := status.Code(err)
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
		if code != grpccodes.OK {
			span.SetStatus(otelcodes.Error, code.String())
		}
		return resp, err
	}
}

// incoming is a call's incoming gRPC metadata as a propagation.TextMapCarrier, read
// one key at a time: metadata.FromIncomingContext would copy all of it.
type incoming struct{ ctx context.Context }

func (c incoming) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set is not for a server's incoming metadata, which it never injects into.
func (incoming) Set(string, string) {}

func (c incoming) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}

// sampledHTTP serves a request through traced if it is drawn, else through plain.
func sampledHTTP(plain, traced http.Handler, rate float64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if drawn(r.Header.Get("traceparent"), rate) {
			traced.ServeHTTP(w, r.WithContext(sampled.Mark(r.Context())))
			return
		}
		plain.ServeHTTP(w, r)
	})
}
