package main

import (
	"context"
	"flag"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/rlserver/rlserver/internal/tracing"
)

// tracingOptions are the flags of OpenTelemetry tracing (internal/tracing), named
// after envoyproxy/ratelimit's TRACING_* variables, which set them.
type tracingOptions struct {
	enabled bool
	cfg     tracing.Config
}

func tracingFlags(fs *flag.FlagSet, o *tracingOptions) {
	fs.BoolVar(&o.enabled, "tracing", false, "trace ShouldRateLimit, /json, /check and a -tracing-sampling-rate share of RESP commands over OTLP, to $OTEL_EXPORTER_OTLP_ENDPOINT (TRACING_ENABLED)")
	fs.StringVar(&o.cfg.ServiceName, "tracing-service-name", "RateLimit", "the service.name of -tracing's spans")
	fs.StringVar(&o.cfg.ServiceNamespace, "tracing-service-namespace", "", "the service.namespace of -tracing's spans")
	fs.StringVar(&o.cfg.ServiceInstanceID, "tracing-service-instance-id", "", "the service.instance.id of -tracing's spans")
	fs.Float64Var(&o.cfg.SamplingRate, "tracing-sampling-rate", 1, "the share, 0 to 1, of traces no caller sampled that -tracing keeps, and of RESP commands")
	fs.StringVar(&o.cfg.Protocol, "tracing-protocol", "http", "OTLP over `http` or grpc")
}

// tracingEnv are the TRACING_* variables and the flags they set.
var tracingEnv = [][2]string{
	{"TRACING_SERVICE_NAME", "tracing-service-name"},
	{"TRACING_SERVICE_NAMESPACE", "tracing-service-namespace"},
	{"TRACING_SERVICE_INSTANCE_ID", "tracing-service-instance-id"},
	{"TRACING_SAMPLING_RATE", "tracing-sampling-rate"},
	{"TRACING_EXPORTER_PROTOCOL", "tracing-protocol"},
}

// setTracingEnv sets the -tracing flags from envoyproxy/ratelimit's variables.
func setTracingEnv(set func(name, value string) error, getenv func(string) string) error {
	if err := set("tracing", boolText(getenv("TRACING_ENABLED"))); err != nil {
		return err
	}
	for _, kv := range tracingEnv {
		if err := set(kv[1], getenv(kv[0])); err != nil {
			return err
		}
	}
	return nil
}

// startTracing is the tracer provider of o, nil when tracing is off.
func startTracing(ctx context.Context, o tracingOptions) (*sdktrace.TracerProvider, error) {
	if !o.enabled {
		return nil, nil
	}
	tp, err := tracing.New(ctx, o.cfg)
	if err != nil {
		return nil, fmt.Errorf("-tracing: %w", err)
	}
	return tp, nil
}

// traceProvider is tp as the fronts take it: a nil interface when tracing is off, so
// that they skip it altogether.
func traceProvider(tp *sdktrace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return nil
	}
	return tp
}
