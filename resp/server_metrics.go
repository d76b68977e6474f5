package resp

import (
	"math/bits"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Prometheus metrics are read at scrape time from counters the server keeps anyway
// (the connection counters here, the core's), so they
// add nothing to a request. The exception is the command latency histogram, and it
// is sampled: timing a command takes two clock readings (slow under a virtualised
// clock) and a record from several cores into one histogram (latencyHistogram, cheaper
// than a prometheus.Histogram; BenchmarkLatencyObserve). Against what a pipelined
// RL.TOKEN costs the server that is a visible share, so one command in latencySample,
// picked at random, is timed.
//
// The random pick is per command, not per connection, so that connections that send a
// few commands each are sampled as often as long-lived ones.
const latencySample = 16

// timeThisOne picks the commands whose run time is recorded.
func (m *metrics) timeThisOne() bool {
	every := m.sampleEvery.Load()
	if every == 0 {
		every = latencySample
	}
	return rand.Uint32()%every == 0
}

// latencyBuckets is the number of buckets of a latencyHistogram: powers of two from
// 256 ns to 2^28 ns (268 ms), then +Inf. Powers of two make the bucket one bit-length,
// with no search; Prometheus only needs the bounds to be fixed.
const latencyBuckets = 22

// latencyHistogram counts one command's run times.
type latencyHistogram struct {
	counts [latencyBuckets]atomic.Uint64
	sumNs  atomic.Uint64
}

// observe counts one run of d.
func (h *latencyHistogram) observe(d time.Duration) {
	ns := uint64(max(d, 1))
	h.counts[min(bits.Len64((ns-1)>>8), latencyBuckets-1)].Add(1)
	h.sumNs.Add(ns)
}

// upperBound is bucket k's upper bound in seconds.
func upperBound(k int) float64 {
	return float64(uint64(1)<<(k+8)) / 1e9
}

// metrics is what the server measures for Prometheus beyond its other counters.
type metrics struct {
	latency     []latencyHistogram // by command id
	sampleEvery atomic.Uint32      // 0 means latencySample; tests time every command with 1
}

// The RESP front's metrics, registered into the core's registry (core.Core.Registry)
// by NewFront; the store's, the snapshots' and replication's are the core's.
var (
	descLatency = prometheus.NewDesc("rlserver_command_duration_seconds",
		"Time to run a command, from its parsed request to its reply in the buffer, for a random "+
			"1 in "+strconv.Itoa(latencySample)+" of the commands; command as in COMMAND INFO: rl.token, client|setname.",
		[]string{"command"}, nil)
	descCommands    = prometheus.NewDesc("rlserver_commands_total", "Commands processed.", nil, nil)
	descErrors      = prometheus.NewDesc("rlserver_error_replies_total", "Error replies sent.", nil, nil)
	descClients     = prometheus.NewDesc("rlserver_connected_clients", "Open client connections.", nil, nil)
	descConnections = prometheus.NewDesc("rlserver_connections_received_total", "Connections accepted.", nil, nil)
	descRejected    = prometheus.NewDesc("rlserver_rejected_connections_total",
		"Connections refused for -maxclients.", nil, nil)
	descMaxClients = prometheus.NewDesc("rlserver_maxclients", "The bound on open connections (maxclients).", nil, nil)
)

// collector exports a Server's counters to Prometheus when scraped.
type collector struct{ s *Server }

// Describe sends every metric's description.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLatency, descCommands, descErrors, descClients, descConnections,
		descRejected, descMaxClients, descSlices, descSliceUnits, descSliceGivenBack} {
		ch <- d
	}
}

// Collect reads the counters and sends the metrics.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	for id := range s.metrics.latency {
		h := &s.metrics.latency[id]
		buckets := make(map[float64]uint64, latencyBuckets-1)
		var count uint64
		for k := range h.counts {
			count += h.counts[k].Load()
			if k < latencyBuckets-1 {
				buckets[upperBound(k)] = count
			}
		}
		if count == 0 {
			continue // a series for each of ~60 commands never called is noise
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, count, float64(h.sumNs.Load())/1e9, buckets,
			allCommands[id].full)
	}
	cmds, errs := s.stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(descCommands, cmds)
	counter(descErrors, errs)
	gauge(descClients, float64(s.connected.Load()))
	counter(descConnections, s.connections.Load())
	counter(descRejected, s.rejected.Load())
	gauge(descMaxClients, float64(s.tun.Load().maxClients))
	s.slices.collect(ch)
}

// MetricsHandler serves the core's registry (core.Core.MetricsHandler): this
// server's metrics, the core's, the other fronts', the Go runtime's and the
// process's, in Prometheus's text format: mount it on /metrics.
func (s *Server) MetricsHandler() http.Handler {
	return s.core.MetricsHandler()
}
