package middleware

import "github.com/prometheus/client_golang/prometheus"

// The Limiter's metrics, read from Stats when scraped: nothing is counted twice, and
// a Limiter nobody scrapes pays nothing.
var (
	requestsDesc = prometheus.NewDesc("rlserver_middleware_requests_total",
		"Requests the rate-limiting middleware has seen, by outcome: allowed, limited (a dimension denied), "+
			"busy (no concurrency place), bypassed (health checks) or failed (the limiter failed).",
		[]string{"outcome"}, nil)
	degradedDesc = prometheus.NewDesc("rlserver_middleware_degraded_total",
		"Requests decided in-process at this replica's share because the limiter was unreachable (FallbackLocal).",
		nil, nil)
)

// Describe sends the descriptions of the metrics Collect sends: a Limiter is a
// prometheus.Collector, registered with prometheus.MustRegister(lim).
func (l *Limiter) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- degradedDesc
}

// Collect sends the Limiter's counts as they stand (Stats).
func (l *Limiter) Collect(ch chan<- prometheus.Metric) {
	st := l.Stats()
	for _, c := range []struct {
		outcome string
		n       uint64
	}{{"allowed", st.Allowed}, {"limited", st.Limited}, {"busy", st.Busy}, {"bypassed", st.Bypassed}, {"failed", st.Failed}} {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(c.n), c.outcome)
	}
	ch <- prometheus.MustNewConstMetric(degradedDesc, prometheus.CounterValue, float64(st.Degraded))
}
