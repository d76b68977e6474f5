package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracedHTTP is h traced by Config.TracerProvider, a span per request drawn (see
// sampledHTTP) named by its path, /healthcheck aside; h itself without a provider.
func (s *Server) tracedHTTP(h http.Handler) http.Handler {
	tp := s.cfg.TracerProvider
	if tp == nil {
		return h
	}
	return sampledHTTP(h, otelhttp.NewHandler(h, "rlserver", otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.URL.Path }),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthcheck" })), s.cfg.TraceSampling)
}

// annotate adds a decision's domain, number of descriptors and overall code to ctx's
// span, if it records. The descriptors' values are left out: they may be personal
// data (an address, a user).
func annotate(ctx context.Context, domain string, descriptors int, code string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("ratelimit.domain", domain), attribute.Int("ratelimit.descriptors", descriptors),
		attribute.String("ratelimit.overall_code", code))
}
