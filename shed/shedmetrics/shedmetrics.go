// Package shedmetrics exports a shed.Shedder's state as Prometheus metrics, apart from
// package shed so that importing the shedder pulls no Prometheus.
//
//	prometheus.MustRegister(shedmetrics.New(s, "api"))
package shedmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/shed"
)

// Collector is a prometheus.Collector of one Shedder, read from shed.Stats when
// scraped: a Shedder nobody scrapes pays nothing.
type Collector struct {
	s                                *shed.Shedder
	limit, inflight, queued, latency *prometheus.Desc
	admitted, shedded                *prometheus.Desc
}

// New returns the Collector of s, its metrics labelled shedder=name (one process may
// run several shedders):
//
//	rlserver_shed_limit            the learned concurrency limit
//	rlserver_shed_in_flight        requests admitted and not done
//	rlserver_shed_queued           requests waiting for a slot
//	rlserver_shed_latency_seconds  the last window's mean latency
//	rlserver_shed_admitted_total   requests admitted, by priority
//	rlserver_shed_shed_total       requests shed, by priority
func New(s *shed.Shedder, name string) *Collector {
	c := prometheus.Labels{"shedder": name}
	return &Collector{
		s:        s,
		limit:    prometheus.NewDesc("rlserver_shed_limit", "The concurrency limit the shedder learned from latency.", nil, c),
		inflight: prometheus.NewDesc("rlserver_shed_in_flight", "Requests admitted by the shedder and not yet done.", nil, c),
		queued:   prometheus.NewDesc("rlserver_shed_queued", "Requests waiting in the shedder's queue for a slot.", nil, c),
		latency:  prometheus.NewDesc("rlserver_shed_latency_seconds", "Mean latency of the admitted requests of the shedder's last window.", nil, c),
		admitted: prometheus.NewDesc("rlserver_shed_admitted_total", "Requests the shedder admitted, by priority.", []string{"priority"}, c),
		shedded:  prometheus.NewDesc("rlserver_shed_shed_total", "Requests the shedder refused (503, UNAVAILABLE), by priority.", []string{"priority"}, c),
	}
}

// Describe sends the descriptions of the metrics Collect sends.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inflight, c.queued, c.latency, c.admitted, c.shedded} {
		ch <- d
	}
}

// Collect sends the shedder's state as it stands.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(st.Limit))
	ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, st.Latency.Seconds())
	for i, name := range st.Names {
		ch <- prometheus.MustNewConstMetric(c.admitted, prometheus.CounterValue, float64(st.Admitted[i]), name)
		ch <- prometheus.MustNewConstMetric(c.shedded, prometheus.CounterValue, float64(st.Shed[i]), name)
	}
}
