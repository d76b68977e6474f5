package resp

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rlserver/rlserver/algo"
)

// Prometheus metrics are read at scrape time from counters the server keeps anyway
// (the store's Stats, the connection counters, the snapshot bookkeeping), so they
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

var (
	descRequests = prometheus.NewDesc("rlserver_requests_total",
		"Limiter calls by command and result (allowed or limited), PEEK included.", []string{"command", "result"}, nil)
	descLatency = prometheus.NewDesc("rlserver_command_duration_seconds",
		"Time to run a command, from its parsed request to its reply in the buffer, for a random "+
			"1 in "+strconv.Itoa(latencySample)+" of the commands; command as in COMMAND INFO: rl.token, client|setname.",
		[]string{"command"}, nil)
	descCommands = prometheus.NewDesc("rlserver_commands_total", "Commands processed.", nil, nil)
	descErrors   = prometheus.NewDesc("rlserver_error_replies_total", "Error replies sent.", nil, nil)
	descKeys     = prometheus.NewDesc("rlserver_keys", "Keys holding a limiter state.", nil, nil)
	descBytes    = prometheus.NewDesc("rlserver_store_bytes",
		"Bytes the store holds for its keys (INFO used_memory_dataset).", nil, nil)
	descExpired = prometheus.NewDesc("rlserver_expired_keys_total",
		"Keys removed because their state became fresh.", nil, nil)
	descEvicted = prometheus.NewDesc("rlserver_evicted_keys_total",
		"Keys evicted to stay within -maxmemory.", nil, nil)
	descClients     = prometheus.NewDesc("rlserver_connected_clients", "Open client connections.", nil, nil)
	descConnections = prometheus.NewDesc("rlserver_connections_received_total", "Connections accepted.", nil, nil)
	descRejected    = prometheus.NewDesc("rlserver_rejected_connections_total",
		"Connections refused for -maxclients.", nil, nil)
	descSnapshotAge = prometheus.NewDesc("rlserver_snapshot_age_seconds",
		"Seconds since the last successful snapshot (since the start if none); only with -snapshot.", nil, nil)
	descSnapshotChanges = prometheus.NewDesc("rlserver_snapshot_changes",
		"Limiter calls and deletions since the last snapshot; only with -snapshot.", nil, nil)
	descSnapshotOK = prometheus.NewDesc("rlserver_snapshot_last_ok",
		"1 if the last snapshot succeeded, 0 if it failed; only with -snapshot.", nil, nil)
	descMaxMemory = prometheus.NewDesc("rlserver_maxmemory_bytes",
		"The bound on rlserver_store_bytes (maxmemory); 0: none.", nil, nil)
	descMaxClients = prometheus.NewDesc("rlserver_maxclients", "The bound on open connections (maxclients).", nil, nil)
	descReplicas   = prometheus.NewDesc("rlserver_connected_replicas", "Replicas connected to this primary.", nil, nil)
	descReplicaLag = prometheus.NewDesc("rlserver_replica_lag_bytes",
		"How far a replica's acknowledged offset is behind this primary's, by replica address.", []string{"replica"}, nil)
	descLinkUp = prometheus.NewDesc("rlserver_master_link_up",
		"1 if this replica's link to its primary is up, 0 if down; only on a replica.", nil, nil)
	descLastIO = prometheus.NewDesc("rlserver_master_last_io_seconds",
		"Seconds since this replica last heard from its primary; only on a replica that has.", nil, nil)
)

// collector exports a Server's counters to Prometheus when scraped.
type collector struct{ s *Server }

// Describe sends every metric's description.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descLatency, descCommands, descErrors, descKeys, descBytes,
		descExpired, descEvicted, descClients, descConnections, descRejected, descSnapshotAge,
		descSnapshotChanges, descSnapshotOK, descMaxMemory, descMaxClients, descReplicas, descReplicaLag,
		descLinkUp, descLastIO} {
		ch <- d
	}
}

// Collect reads the counters and sends the metrics.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	st := s.store.Stats()
	for k := algo.KindFixed; k <= algo.KindLease; k++ {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(st.Allowed[k]), k.Command(), "allowed")
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(st.Limited[k]), k.Command(), "limited")
	}
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
	gauge(descKeys, float64(st.Keys))
	gauge(descBytes, float64(st.Bytes))
	counter(descExpired, st.Expired)
	counter(descEvicted, st.Evicted)
	gauge(descClients, float64(s.connected.Load()))
	counter(descConnections, s.connections.Load())
	counter(descRejected, s.rejected.Load())
	if s.cfg.SnapshotPath != "" {
		gauge(descSnapshotAge, math.Max(0, float64(time.Now().Unix()-s.lastSaveTime())))
		gauge(descSnapshotChanges, float64(s.changesSinceSave()))
		ok := 1.0
		if s.persist.lastFailed.Load() {
			ok = 0
		}
		gauge(descSnapshotOK, ok)
	}
	t := s.tun.Load()
	gauge(descMaxMemory, float64(t.maxMemory))
	gauge(descMaxClients, float64(t.maxClients))
	s.collectReplication(ch)
}

// collectReplication sends the replication metrics: a primary's replicas and their
// lag, a replica's link.
func (s *Server) collectReplication(ch chan<- prometheus.Metric) {
	views := s.replicaViews()
	ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(len(views)))
	offset := s.masterOffset()
	for _, v := range views {
		ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, float64(max(offset-v.offset, 0)),
			net.JoinHostPort(v.ip, strconv.Itoa(v.port)))
	}
	s.repl.mu.Lock()
	l := s.repl.link
	replica := s.repl.masterHost != ""
	s.repl.mu.Unlock()
	if !replica {
		return
	}
	up := 0.0
	if l != nil && l.up.Load() {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descLinkUp, prometheus.GaugeValue, up)
	if l != nil && l.lastIO.Load() != 0 {
		ch <- prometheus.MustNewConstMetric(descLastIO, prometheus.GaugeValue,
			time.Since(time.Unix(0, l.lastIO.Load())).Seconds())
	}
}

// MetricsHandler serves the server's metrics, the Go runtime's and the process's, and
// extra's (the other fronts'), in Prometheus's text format: mount it on /metrics.
func (s *Server) MetricsHandler(extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
