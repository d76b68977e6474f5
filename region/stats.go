package region

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/client/slicermetrics"
)

// downFor is how long after a call decided by the fallback the home counts as not
// reachable: twice the longest pause between two probes (maxProbe), within which a
// call finds a home that answers again.
const downFor = 2 * maxProbe

// link counts the calls the fallback decided, the home not answering.
type link struct {
	fallbacks atomic.Int64 // since the start
	last      atomic.Int64 // the latest's time (or the start's, unanswered), ns since the epoch; 0 before any
}

// fellBack records a call the fallback decided at now.
func (l *link) fellBack(now time.Time) {
	l.fallbacks.Add(1)
	l.last.Store(now.UnixNano())
}

// unanswered records the home not answering at now, no call decided.
func (l *link) unanswered(now time.Time) { l.last.Store(now.UnixNano()) }

// reachable reports whether no call fell back in the downFor before now: a region
// only learns of its home from its calls.
func (l *link) reachable(now time.Time) bool {
	last := l.last.Load()
	return last == 0 || now.Sub(time.Unix(0, last)) >= downFor
}

// Info is INFO region's fields (resp.Upstream), counts since the start: the
// options; whether the home answers (region_home_reachable 0 while calls fell back
// in the last 2 s, or after a start it did not answer); the calls the fallback decided; what they admitted that waits to
// be counted at the home (keys and units) and what the settles after heals counted
// there or could not; and per key family, as client.Slicer.FamilyStats counts them,
// the slices asked of the home and the units they granted, used, gave back and let
// expire, and the slices and units held now.
func (r *Region) Info() [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	keys, units := r.debts.owed()
	reachable := "0"
	if r.link.reachable(time.Now()) {
		reachable = "1"
	}
	kv := [][2]string{
		{"region_home", r.Param("quota-upstream")},
		{"region_prefix", r.opts.Prefix},
		{"region_fallback", r.opts.Fallback},
		{"region_regions", strconv.Itoa(r.opts.Regions)},
		{"region_home_reachable", reachable},
		{"region_fallback_decisions", itoa(r.link.fallbacks.Load())},
		{"region_debt_keys", itoa(keys)},
		{"region_debt_units", itoa(units)},
		{"region_reconciled_units", fmt.Sprintf("counted=%d,not_counted=%d", r.debts.counted.Load(), r.debts.unmet.Load())},
	}
	fs := r.slicer.FamilyStats()
	for _, f := range slices.Sorted(maps.Keys(fs)) {
		s := fs[f]
		kv = append(kv, [2]string{"regionstat_" + f, fmt.Sprintf("asked=%d,taken=%d,used=%d,given_back=%d,expired=%d,slices=%d,held=%d",
			s.Asked, s.Taken, s.Used, s.GivenBack, s.Expired, s.Slices, s.Held)})
	}
	return kv
}

// The region's own metrics; its Slicer's are slicermetrics', labelled slicer="region".
var (
	descReachable = prometheus.NewDesc("rlserver_region_home_reachable",
		"1 when the region's home answers, 0 while calls fell back in the last 2 s or in the 2 s after a start it did not answer.", nil, nil)
	descFallbacks = prometheus.NewDesc("rlserver_region_fallback_decisions_total",
		"Calls the region's fallback decided, its home not answering.", nil, nil)
	descDebtKeys = prometheus.NewDesc("rlserver_region_debt_keys",
		"Keys with units the fallback admitted that wait to be counted at the home.", nil, nil)
	descDebtUnits = prometheus.NewDesc("rlserver_region_debt_units",
		"Units the fallback admitted that wait to be counted at the home.", nil, nil)
	descReconciled = prometheus.NewDesc("rlserver_region_reconciled_units_total",
		"Units the fallback admitted, settled after a heal: counted at the home, or not (its window ended, "+
			"or the home had no room left).", []string{"result"}, nil)
)

// Collector returns the Prometheus collector of the region's counts, Info's: its
// Slicer's by key family (rlserver_slicer_*{slicer="region"}, package
// slicermetrics) and its link's (rlserver_region_*).
func (r *Region) Collector() prometheus.Collector {
	return collector{r: r, slicer: slicermetrics.New(r.slicer, "region")}
}

type collector struct {
	r      *Region
	slicer *slicermetrics.Collector
}

// Describe sends the descriptions of the metrics Collect sends.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	c.slicer.Describe(ch)
	for _, d := range []*prometheus.Desc{descReachable, descFallbacks, descDebtKeys, descDebtUnits, descReconciled} {
		ch <- d
	}
}

// Collect sends the counts as they stand.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.slicer.Collect(ch)
	r := c.r
	reachable := 0.0
	if r.link.reachable(time.Now()) {
		reachable = 1
	}
	keys, units := r.debts.owed()
	ch <- prometheus.MustNewConstMetric(descReachable, prometheus.GaugeValue, reachable)
	ch <- prometheus.MustNewConstMetric(descFallbacks, prometheus.CounterValue, float64(r.link.fallbacks.Load()))
	ch <- prometheus.MustNewConstMetric(descDebtKeys, prometheus.GaugeValue, float64(keys))
	ch <- prometheus.MustNewConstMetric(descDebtUnits, prometheus.GaugeValue, float64(units))
	ch <- prometheus.MustNewConstMetric(descReconciled, prometheus.CounterValue, float64(r.debts.counted.Load()), "counted")
	ch <- prometheus.MustNewConstMetric(descReconciled, prometheus.CounterValue, float64(r.debts.unmet.Load()), "not_counted")
}
