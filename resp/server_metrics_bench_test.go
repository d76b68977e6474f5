package resp

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkLatencyObserve weighs what timing a command costs: the clock readings, and
// recording into latencyHistogram or into a prometheus.Histogram, from all cores at
// once on one histogram (the worst case: every connection runs the same command).
func BenchmarkLatencyObserve(b *testing.B) {
	var own latencyHistogram
	prom := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x",
		Buckets: prometheus.ExponentialBuckets(256e-9, 2, latencyBuckets-1)})
	for _, bc := range []struct {
		name string
		fn   func(d time.Duration)
	}{
		{"clock only", func(time.Duration) {}},
		{"latencyHistogram", own.observe},
		{"prometheus.Histogram", func(d time.Duration) { prom.Observe(d.Seconds()) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					begin := time.Now()
					bc.fn(time.Since(begin))
				}
			})
		})
		b.Run(bc.name+"/record only", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				d := 700 * time.Nanosecond
				for pb.Next() {
					bc.fn(d)
				}
			})
		})
	}
}
