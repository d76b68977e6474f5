// Package slicermetrics exports a client.Slicer's FamilyStats as Prometheus metrics,
// apart from package client so that importing the client pulls no Prometheus (and
// its protobufs):
//
//	prometheus.MustRegister(slicermetrics.New(slicer, "api"))
//
// Under-admission is measured: units_expired counts the quota a slice took at the
// server and nobody used before its Until. Over-admission is not exported, because
// nothing here could measure one: a unit is spent at the server before the Slicer
// admits it and is never admitted past its slice's Until, so admissions from slices
// stay within what the server granted, by construction; a metric of it would be a
// constant 0. What the Fallback admits with the server down is the Client's, within
// the bound docs/scaling.md states.
package slicermetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/client"
)

// Collector is a prometheus.Collector of one Slicer, read from its FamilyStats when
// scraped: a Slicer nobody scrapes pays nothing.
type Collector struct {
	s                                                    *client.Slicer
	asked, taken, used, givenBack, expired, slices, held *prometheus.Desc
}

// New returns the Collector of s, its metrics labelled slicer=name (one process may
// run several Slicers) and family, the key family (client.Slicer.FamilyStats says
// what that is; "(other)" past 64 of them):
//
//	rlserver_slicer_slices_asked_total{family}      slices asked of the server: the round trips
//	rlserver_slicer_units_taken_total{family}       units the slices granted
//	rlserver_slicer_units_used_total{family}        units admitted in-process from them
//	rlserver_slicer_units_given_back_total{family}  units given back (REFUND): idle keys, Close
//	rlserver_slicer_units_expired_total{family}     units unused at their slice's end: under-admission
//	rlserver_slicer_slices_held{family}             slices held now with units left
//	rlserver_slicer_units_held{family}              units held now
func New(s *client.Slicer, name string) *Collector {
	c := prometheus.Labels{"slicer": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc(metric, help, []string{"family"}, c)
	}
	return &Collector{
		s:     s,
		asked: desc("rlserver_slicer_slices_asked_total", "Slices the Slicer asked of the server (RL.SLICE), by key family."),
		taken: desc("rlserver_slicer_units_taken_total", "Units the Slicer's slices granted, by key family."),
		used:  desc("rlserver_slicer_units_used_total", "Units the Slicer admitted in-process from its slices, by key family."),
		givenBack: desc("rlserver_slicer_units_given_back_total",
			"Units the Slicer gave back (REFUND) when a key idled or on Close, by key family."),
		expired: desc("rlserver_slicer_units_expired_total",
			"Units of the Slicer's slices that reached their end unused, or failed to go back: quota not admitted "+
				"(under-admission), by key family."),
		slices: desc("rlserver_slicer_slices_held", "Slices the Slicer holds now with units left, by key family."),
		held:   desc("rlserver_slicer_units_held", "Units the Slicer holds now, by key family."),
	}
}

// Describe sends the descriptions of the metrics Collect sends.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.asked, c.taken, c.used, c.givenBack, c.expired, c.slices, c.held} {
		ch <- d
	}
}

// Collect sends the Slicer's counts and holdings as they stand, a series per family
// it has counted.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for f, st := range c.s.FamilyStats() {
		for _, m := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v int64
		}{
			{c.asked, prometheus.CounterValue, st.Asked}, {c.taken, prometheus.CounterValue, st.Taken},
			{c.used, prometheus.CounterValue, st.Used}, {c.givenBack, prometheus.CounterValue, st.GivenBack},
			{c.expired, prometheus.CounterValue, st.Expired},
			{c.slices, prometheus.GaugeValue, st.Slices}, {c.held, prometheus.GaugeValue, st.Held},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, float64(m.v), f)
		}
	}
}
