// Package tracing builds rlserver's OpenTelemetry tracer provider as
// envoyproxy/ratelimit builds its own from TRACING_*: spans exported over OTLP (HTTP
// or gRPC; the endpoint, headers and certificates from the SDK's OTEL_EXPORTER_OTLP_*
// variables), sampled at a ratio unless the caller's trace is sampled already. The
// fronts take the provider; without one they trace nothing and pay nothing. A front
// that draws its own sample before it builds anything (the RESP front: a command it
// leaves out must cost nothing) starts its spans from a context of sampled.Mark.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/rlserver/rlserver/internal/sampled"
)

// Config is envoyproxy/ratelimit's tracing settings.
type Config struct {
	ServiceName       string  // TRACING_SERVICE_NAME; empty: RateLimit, theirs
	ServiceNamespace  string  // TRACING_SERVICE_NAMESPACE
	ServiceInstanceID string  // TRACING_SERVICE_INSTANCE_ID
	SamplingRate      float64 // TRACING_SAMPLING_RATE, 0 to 1, of the traces no caller sampled
	Protocol          string  // TRACING_EXPORTER_PROTOCOL: http (theirs by default) or grpc
}

// ErrConfig is wrapped by the errors of a Config that cannot be used.
var ErrConfig = errors.New("tracing")

// New returns the tracer provider of c and sets the W3C trace context as the
// process's propagator, so that a caller's traceparent is continued. Shutdown flushes
// and stops it.
func New(ctx context.Context, c Config) (*sdktrace.TracerProvider, error) {
	if c.SamplingRate < 0 || c.SamplingRate > 1 {
		return nil, fmt.Errorf("%w: sampling rate %v is not between 0 and 1", ErrConfig, c.SamplingRate)
	}
	var exp sdktrace.SpanExporter
	var err error
	switch c.Protocol {
	case "", "http":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w: exporter protocol %q: http or grpc", ErrConfig, c.Protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	name := c.ServiceName
	if name == "" {
		name = "RateLimit"
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(name))}
	if c.ServiceNamespace != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceNamespace(c.ServiceNamespace)))
	}
	if c.ServiceInstanceID != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceInstanceID(c.ServiceInstanceID)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(rootSampler{sdktrace.TraceIDRatioBased(c.SamplingRate)})),
	), nil
}

// rootSampler decides a trace no caller started: kept if the front sampled it
// (sampled.Marked), else by ratio.
type rootSampler struct{ ratio sdktrace.Sampler }

func (r rootSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if sampled.Marked(p.ParentContext) {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	return r.ratio.ShouldSample(p)
}

func (r rootSampler) Description() string { return "SampledOr{" + r.ratio.Description() + "}" }
