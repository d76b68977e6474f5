package resp

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/internal/keyfamily"
)

// What RL.SLICE did, by key family (internal/keyfamily), for INFO slices and
// /metrics: slices granted and refused, units granted, and units given back. The
// server cannot tell a slice's give-back from any other refund: both are the
// limiter's REFUND. So given_back counts the units every REFUND asked (before the
// algorithm caps them at a fresh key) on keys of a family that has taken slices, or
// on any key counted under keyfamily.Other. What clients hold, use or let expire is
// theirs to count (client/slicermetrics).

// sliceCounts are one family's counters; they never go back (/metrics reads them).
type sliceCounts struct {
	granted, refused, units, givenBack atomic.Uint64
}

// sliceTotals are sliceCounts read at one time.
type sliceTotals struct {
	granted, refused, units, givenBack uint64
}

func (c *sliceCounts) load() sliceTotals {
	return sliceTotals{c.granted.Load(), c.refused.Load(), c.units.Load(), c.givenBack.Load()}
}

// sliceStats are the counters by family, and INFO's base: their values at the last
// CONFIG RESETSTAT.
type sliceStats struct {
	fams keyfamily.Table[sliceCounts]
	base atomic.Pointer[map[string]sliceTotals]
}

// noteSlice counts a slice asked on key that granted units (0: refused).
func (st *sliceStats) noteSlice(key []byte, units int64) {
	c := st.fams.Get(key)
	if units == 0 {
		c.refused.Add(1)
		return
	}
	c.granted.Add(1)
	c.units.Add(uint64(units))
}

// noteRefund counts a REFUND of n units on key, if its family takes slices.
func (st *sliceStats) noteRefund(key []byte, n int64) {
	if c := st.fams.Find(key); c != nil {
		c.givenBack.Add(uint64(n))
	}
}

// reset makes INFO count from now on.
func (st *sliceStats) reset() {
	base := map[string]sliceTotals{}
	st.fams.Each(func(f string, c *sliceCounts) { base[f] = c.load() })
	st.base.Store(&base)
}

// info is INFO slices: a line per family with counts since the last CONFIG RESETSTAT.
func (st *sliceStats) info() [][2]string {
	var base map[string]sliceTotals
	if p := st.base.Load(); p != nil {
		base = *p
	}
	var kv [][2]string
	st.fams.Each(func(f string, c *sliceCounts) {
		t, b := c.load(), base[f]
		t = sliceTotals{t.granted - b.granted, t.refused - b.refused, t.units - b.units, t.givenBack - b.givenBack}
		if t == (sliceTotals{}) {
			return
		}
		kv = append(kv, [2]string{"slicestat_" + f, fmt.Sprintf("granted=%d,refused=%d,units=%d,given_back=%d",
			t.granted, t.refused, t.units, t.givenBack)})
	})
	return kv
}

var (
	descSlices = prometheus.NewDesc("rlserver_slices_total",
		"RL.SLICE calls by key family (the key up to its first ':'; (other) past 64 families) and result: "+
			"granted (1 unit or more) or refused (none).",
		[]string{"family", "result"}, nil)
	descSliceUnits = prometheus.NewDesc("rlserver_slice_units_granted_total",
		"Units RL.SLICE granted, by key family.", []string{"family"}, nil)
	descSliceGivenBack = prometheus.NewDesc("rlserver_slice_units_given_back_total",
		"Units REFUND asked back on keys of a family that takes slices, by key family: "+
			"a slice's give-back and any other refund alike.", []string{"family"}, nil)
)

// collect sends the metrics of the families that have taken a slice.
func (st *sliceStats) collect(ch chan<- prometheus.Metric) {
	st.fams.Each(func(f string, c *sliceCounts) {
		t := c.load()
		if t == (sliceTotals{}) {
			return // Other, before anything counts there
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		counter(descSlices, t.granted, f, "granted")
		counter(descSlices, t.refused, f, "refused")
		counter(descSliceUnits, t.units, f)
		counter(descSliceGivenBack, t.givenBack, f)
	})
}
