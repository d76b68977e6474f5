package core

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rlserver/rlserver/algo"
)

// The core's Prometheus metrics are read at scrape time from counters it keeps
// anyway (the store's Stats, the snapshot bookkeeping, replication's state), so they
// add nothing to a request.

var (
	descRequests = prometheus.NewDesc("rlserver_requests_total",
		"Limiter calls by command and result (allowed or limited), PEEK included.", []string{"command", "result"}, nil)
	descKeys  = prometheus.NewDesc("rlserver_keys", "Keys holding a limiter state.", nil, nil)
	descBytes = prometheus.NewDesc("rlserver_store_bytes",
		"Bytes the store holds for its keys (INFO used_memory_dataset).", nil, nil)
	descExpired = prometheus.NewDesc("rlserver_expired_keys_total",
		"Keys removed because their state became fresh.", nil, nil)
	descEvicted = prometheus.NewDesc("rlserver_evicted_keys_total",
		"Keys evicted to stay within -maxmemory.", nil, nil)
	descSnapshotAge = prometheus.NewDesc("rlserver_snapshot_age_seconds",
		"Seconds since the last successful snapshot (since the start if none); only with -snapshot.", nil, nil)
	descSnapshotChanges = prometheus.NewDesc("rlserver_snapshot_changes",
		"Limiter calls and deletions since the last snapshot; only with -snapshot.", nil, nil)
	descSnapshotOK = prometheus.NewDesc("rlserver_snapshot_last_ok",
		"1 if the last snapshot succeeded, 0 if it failed; only with -snapshot.", nil, nil)
	descAOFWriteOK = prometheus.NewDesc("rlserver_aof_last_write_ok",
		"1 if the append-only log's last write and sync succeeded, 0 if they failed (writes are refused: MISCONF); only with appendonly yes.", nil, nil)
	descAOFSize = prometheus.NewDesc("rlserver_aof_size_bytes",
		"Bytes of the append-only log's files; only with appendonly yes.", nil, nil)
	descMaxMemory = prometheus.NewDesc("rlserver_maxmemory_bytes",
		"The bound on rlserver_store_bytes (maxmemory); 0: none.", nil, nil)
	descReplicas   = prometheus.NewDesc("rlserver_connected_replicas", "Replicas connected to this primary.", nil, nil)
	descReplicaLag = prometheus.NewDesc("rlserver_replica_lag_bytes",
		"How far a replica's acknowledged offset is behind this primary's, by replica address.", []string{"replica"}, nil)
	descLinkUp = prometheus.NewDesc("rlserver_master_link_up",
		"1 if this replica's link to its primary is up, 0 if down; only on a replica.", nil, nil)
	descLastIO = prometheus.NewDesc("rlserver_master_last_io_seconds",
		"Seconds since this replica last heard from its primary; only on a replica that has.", nil, nil)
)

// newRegistry is a registry with c's metrics, the Go runtime's and the process's.
func newRegistry(c *Core) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{c}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// MetricsHandler serves Registry in Prometheus's text format: mount it on /metrics.
func (c *Core) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{})
}

// collector exports a Core's counters to Prometheus when scraped.
type collector struct{ c *Core }

// Describe sends every metric's description.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descKeys, descBytes, descExpired, descEvicted,
		descSnapshotAge, descSnapshotChanges, descSnapshotOK, descAOFWriteOK, descAOFSize, descMaxMemory, descReplicas, descReplicaLag,
		descLinkUp, descLastIO} {
		ch <- d
	}
}

// Collect reads the counters and sends the metrics.
func (col collector) Collect(ch chan<- prometheus.Metric) {
	c := col.c
	st := c.store.Stats()
	for k := algo.KindFixed; k <= algo.LastKind; k++ {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(st.Allowed[k]), k.Command(), "allowed")
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(st.Limited[k]), k.Command(), "limited")
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(descKeys, float64(st.Keys))
	gauge(descBytes, float64(st.Bytes))
	counter(descExpired, st.Expired)
	counter(descEvicted, st.Evicted)
	if c.cfg.SnapshotPath != "" {
		gauge(descSnapshotAge, math.Max(0, float64(time.Now().Unix()-c.lastSaveTime())))
		gauge(descSnapshotChanges, float64(c.changesSinceSave()))
		ok := 1.0
		if c.persist.lastFailed.Load() {
			ok = 0
		}
		gauge(descSnapshotOK, ok)
	}
	if l := c.AOF(); l != nil {
		st := l.Status()
		ok := 1.0
		if st.WriteErr != nil {
			ok = 0
		}
		gauge(descAOFWriteOK, ok)
		gauge(descAOFSize, float64(st.CurrentSize))
	}
	gauge(descMaxMemory, float64(c.tun.Load().MaxMemory))
	c.collectReplication(ch)
}

// collectReplication sends the replication metrics: a primary's replicas and their
// lag, a replica's link.
func (c *Core) collectReplication(ch chan<- prometheus.Metric) {
	views := c.repl.Replicas()
	ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(len(views)))
	offset := c.repl.Offset()
	for _, v := range views {
		ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, float64(max(offset-v.Offset, 0)),
			net.JoinHostPort(v.IP, strconv.Itoa(v.Port)))
	}
	st := c.repl.Status()
	if st.MasterHost == "" {
		return
	}
	up := 0.0
	if st.LinkUp {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descLinkUp, prometheus.GaugeValue, up)
	if !st.LastIO.IsZero() {
		ch <- prometheus.MustNewConstMetric(descLastIO, prometheus.GaugeValue, time.Since(st.LastIO).Seconds())
	}
}
