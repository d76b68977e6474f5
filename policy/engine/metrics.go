package engine

import (
	"math"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
)

// The heavy-hitter sketches' sizes.
const (
	refusedCapacity = 256        // keys each bucket of the refused-most window tracks
	refusedSpan     = 60_000_000 // µs: the refused-most window is the last minute
	refusedBuckets  = 6          // of 10 s each
	detailedTop     = 10         // values a detailed_metric rule exports
	detailedSketch  = 64         // keys its sketch tracks to find those 10
)

// nearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO default.
const nearLimitRatio = float32(0.8)

// statsKey names one rule's counters: its domain and composite key.
type statsKey struct{ domain, path string }

// ruleStats are one rule's counters, as envoyproxy/ratelimit's per-key stats. They
// outlive reloads: a rule of the same domain and path keeps counting in them.
type ruleStats struct {
	total, over, near, within, shadow atomic.Uint64
	top                               *topk.Sketch // detailed_metric: values by refused hits; nil otherwise
}

// statsFor returns the counters of a rule, made on first use.
func (e *Engine) statsFor(r *config.Rule) *ruleStats {
	k := statsKey{r.Domain, r.Path}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stats[k]
	if st == nil {
		st = &ruleStats{}
		e.stats[k] = st
	}
	if r.Detailed && st.top == nil {
		st.top = topk.New(detailedSketch)
	}
	return st
}

// statsOf returns the counters of a rule of l: by its Index without the lock once
// found, by statsFor otherwise.
func (e *Engine) statsOf(l *loaded, r *config.Rule) *ruleStats {
	if r.Index < 0 {
		return e.statsFor(r)
	}
	p := &l.stats[r.Index]
	st := p.Load()
	if st == nil || r.Detailed && st.top == nil {
		st = e.statsFor(r)
		p.Store(st)
	}
	return st
}

// count adds one decision to its rule's counters with envoyproxy/ratelimit's
// arithmetic (base_limiter.go): of an over-limit call's hits, those past the limit
// are over limit and those between the near threshold and the limit near limit; of
// an admitted call's, those past the near threshold are near limit. A refused
// descriptor is also counted in the refused-most window, and under detailed_metric
// in its rule's top values.
func (e *Engine) count(l *loaded, r *config.Rule, entries []policy.Entry, over bool, before, after, hits uint64, now int64) {
	st := e.statsOf(l, r)
	limit := uint64(r.Requests)
	near := uint64(math.Floor(float64(float32(limit) * nearLimitRatio)))
	st.total.Add(hits)
	if !over {
		st.within.Add(hits)
		if after > near {
			st.near.Add(after - max(near, before))
		}
		return
	}
	overHits := hits
	if before < limit {
		overHits = after - limit
		st.near.Add(limit - max(near, before))
	}
	st.over.Add(overHits)
	if r.Shadow {
		st.shadow.Add(overHits)
	}
	var buf [256]byte
	text := appendEntries(append(append(buf[:0], r.Domain...), 0), entries)
	e.refused.Add(text, max(overHits, 1), now)
	if st.top != nil {
		st.top.Add(text[len(r.Domain)+1:], max(overHits, 1))
	}
}

// appendEntries appends a descriptor as "key=value,key2=value2".
func appendEntries(b []byte, entries []policy.Entry) []byte {
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, e.Key...), '='), e.Value...)
	}
	return b
}

// Refused is a descriptor refused often: its domain, the descriptor as
// "key=value,key2=value2", and its hits over the limit in the last minute (an
// estimate from a bounded sketch: at least Count-Err, at most Count).
type Refused struct {
	Domain     string
	Descriptor string
	Count      uint64
	Err        uint64
}

// TopRefused lists at most n descriptors refused most over the minute before now (µs),
// most first. Every refused descriptor is tracked, values included, in bounded memory.
func (e *Engine) TopRefused(n int, now int64) []Refused {
	items := e.refused.Top(n, now)
	out := make([]Refused, len(items))
	for i, it := range items {
		domain, desc, _ := strings.Cut(it.Key, "\x00")
		out[i] = Refused{Domain: domain, Descriptor: desc, Count: it.Count, Err: it.Err}
	}
	return out
}

// LoadResult counts a policy load in the load metrics; Watch calls it for every
// reload, and a caller that loads the first policy itself calls it for that one.
func (e *Engine) LoadResult(err error) {
	if err != nil {
		e.loadErr.Add(1)
	} else {
		e.loadsOK.Add(1)
	}
}

var (
	ruleLabels   = []string{"domain", "descriptor"}
	descTotal    = prometheus.NewDesc("rlserver_policy_total_hits_total", "Hits of descriptors a rule matched.", ruleLabels, nil)
	descOver     = prometheus.NewDesc("rlserver_policy_over_limit_total", "Hits over the limit (shadow mode included).", ruleLabels, nil)
	descNear     = prometheus.NewDesc("rlserver_policy_near_limit_total", "Hits past 80% of the limit, up to it.", ruleLabels, nil)
	descWithin   = prometheus.NewDesc("rlserver_policy_within_limit_total", "Hits of admitted calls.", ruleLabels, nil)
	descShadow   = prometheus.NewDesc("rlserver_policy_shadow_mode_total", "Hits over the limit admitted by shadow_mode.", ruleLabels, nil)
	descDetailed = prometheus.NewDesc("rlserver_policy_detailed_over_limit",
		"Estimated hits over the limit of the 10 values refused most, per detailed_metric rule.",
		[]string{"domain", "descriptor", "value"}, nil)
	descLoads   = prometheus.NewDesc("rlserver_policy_loads_total", "Policy loads, by result.", []string{"result"}, nil)
	descUnknown = prometheus.NewDesc("rlserver_policy_unknown_domain_total", "Requests of a domain the policy lacks.", nil, nil)
)

// collector exports an engine's counters.
type collector struct{ e *Engine }

// Collector exports the engine's counters: per domain and rule (its composite key,
// values as the policy gives them) total, over, near and within limit and shadow mode
// hits; for detailed_metric rules the top 10 values by refused hits; policy loads by
// result; requests of unknown domains.
func (e *Engine) Collector() prometheus.Collector { return collector{e} }

// Describe sends the descriptions of every metric.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTotal, descOver, descNear, descWithin, descShadow, descDetailed, descLoads, descUnknown} {
		ch <- d
	}
}

// Collect sends the current values.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.Lock()
	keys := make([]statsKey, 0, len(e.stats))
	sts := make([]*ruleStats, 0, len(e.stats))
	for k, st := range e.stats {
		keys, sts = append(keys, k), append(sts, st)
	}
	e.mu.Unlock()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for i, k := range keys {
		st := sts[i]
		counter(descTotal, st.total.Load(), k.domain, k.path)
		counter(descOver, st.over.Load(), k.domain, k.path)
		counter(descNear, st.near.Load(), k.domain, k.path)
		counter(descWithin, st.within.Load(), k.domain, k.path)
		counter(descShadow, st.shadow.Load(), k.domain, k.path)
		if st.top != nil {
			for _, it := range st.top.Top(detailedTop) {
				ch <- prometheus.MustNewConstMetric(descDetailed, prometheus.GaugeValue, float64(it.Count), k.domain, k.path, it.Key)
			}
		}
	}
	counter(descLoads, e.loadsOK.Load(), "success")
	counter(descLoads, e.loadErr.Load(), "error")
	counter(descUnknown, e.unknown.Load())
}
