package resp

import (
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkTracing: pipelined RL.TOKEN without a tracer, and with one sampling 1%
// and 100% of the commands into a batch exporter that drops them (the SDK's work,
// not the network's): what -tracing costs the RESP hot path.
func BenchmarkTracing(b *testing.B) {
	for _, bc := range []struct {
		name string
		rate float64
	}{{"off", -1}, {"1pct", 0.01}, {"all", 1}} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/P%d", bc.name, depth), func(b *testing.B) {
				var cfg Config
				if bc.rate >= 0 {
					tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
					defer tp.Shutdown(b.Context())
					cfg.TracerProvider, cfg.TraceSampling = tp, bc.rate
				}
				benchPipeline(b, cfg, "RL.TOKEN user:%d 100 1000", depth)
			})
		}
	}
}
