// Package middlewaremetrics exports a middleware.Limiter's Stats as Prometheus
// metrics, apart from package middleware so that importing the middleware pulls no
// Prometheus (and its protobufs):
//
//	prometheus.MustRegister(middlewaremetrics.New(lim, "api"))
package middlewaremetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/middleware"
)

// Collector is a prometheus.Collector of one Limiter, read from its Stats when
// scraped: nothing is counted twice, and a Limiter nobody scrapes pays nothing.
type Collector struct {
	l                  *middleware.Limiter
	requests, degraded *prometheus.Desc
}

// New returns the Collector of l, its metrics labelled limiter=name (one process may
// run several Limiters; those With makes of l share its Stats, and are not
// registered again):
//
//	rlserver_middleware_requests_total{outcome}  requests by outcome: allowed, limited, busy, bypassed, failed
//	rlserver_middleware_degraded_total           requests decided in-process (FallbackLocal)
func New(l *middleware.Limiter, name string) *Collector {
	c := prometheus.Labels{"limiter": name}
	return &Collector{
		l: l,
		requests: prometheus.NewDesc("rlserver_middleware_requests_total",
			"Requests the rate-limiting middleware has seen, by outcome: allowed, limited (a dimension denied), "+
				"busy (no concurrency place), bypassed (health checks) or failed (the limiter failed).",
			[]string{"outcome"}, c),
		degraded: prometheus.NewDesc("rlserver_middleware_degraded_total",
			"Requests decided in-process at this replica's share because the limiter was unreachable (FallbackLocal).",
			nil, c),
	}
}

// Describe sends the descriptions of the metrics Collect sends.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.degraded
}

// Collect sends the Limiter's counts as they stand.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.l.Stats()
	for _, o := range []struct {
		outcome string
		n       uint64
	}{{"allowed", st.Allowed}, {"limited", st.Limited}, {"busy", st.Busy}, {"bypassed", st.Bypassed}, {"failed", st.Failed}} {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(o.n), o.outcome)
	}
	ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.CounterValue, float64(st.Degraded))
}
