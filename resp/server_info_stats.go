package resp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// INFO's per-command and per-error sections, as Redis 7's: commandstats (calls, run
// time, refusals, failures), errorstats (error replies by their first word) and
// latencystats (percentiles of the run time).

// cmdStats are one command's counters for INFO commandstats; CONFIG RESETSTAT zeroes them.
type cmdStats struct {
	calls    atomic.Uint64 // runs
	ns       atomic.Uint64 // their run time
	rejected atomic.Uint64 // refused before running: arity, authentication, MOVED, READONLY...
	failed   atomic.Uint64 // ran and answered an error
}

// maxErrorKinds bounds errorstats as Redis's ERROR_STATS_NUMBER: past it, new kinds
// are not counted (their replies still count in total_error_replies).
const maxErrorKinds = 128

// errorStats counts error replies by their first word ("ERR", "WRONGTYPE", "MOVED").
type errorStats struct {
	mu     sync.Mutex
	counts map[string]uint64
}

// count records one error reply.
func (e *errorStats) count(msg string) {
	kind, _, _ := strings.Cut(msg, " ")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]uint64{}
	}
	if _, ok := e.counts[kind]; ok || len(e.counts) < maxErrorKinds {
		e.counts[kind]++
	}
}

func (e *errorStats) reset() {
	e.mu.Lock()
	e.counts = nil
	e.mu.Unlock()
}

// errorstatsInfo is INFO errorstats: errorstat_KIND:count=n, by kind.
func (s *Server) errorstatsInfo() [][2]string {
	s.errStats.mu.Lock()
	defer s.errStats.mu.Unlock()
	kv := make([][2]string, 0, len(s.errStats.counts))
	for kind, n := range s.errStats.counts {
		kv = append(kv, [2]string{"errorstat_" + kind, "count=" + strconv.FormatUint(n, 10)})
	}
	slices.SortFunc(kv, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return kv
}

// commandstatsInfo is INFO commandstats: each command called, refused or failed.
func commandstatsInfo() [][2]string {
	var kv [][2]string
	for _, cm := range allCommands {
		st := &cm.stats
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls+rejected+failed == 0 {
			continue
		}
		usec := st.ns.Load() / uint64(time.Microsecond)
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		kv = append(kv, [2]string{"cmdstat_" + cm.full, fmt.Sprintf(
			"calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			calls, usec, perCall, rejected, failed)})
	}
	return kv
}

// latencystatsInfo is INFO latencystats: the p50, p99 and p99.9 run times of each
// command timed, in µs, read from the sampled latency histogram (server_metrics.go) and so
// rounded up to its power-of-two bucket.
func (s *Server) latencystatsInfo() [][2]string {
	var kv [][2]string
	for id, cm := range allCommands {
		h := &s.metrics.latency[id]
		var counts [latencyBuckets]uint64
		var total uint64
		for k := range h.counts {
			counts[k] = h.counts[k].Load()
			total += counts[k]
		}
		if total == 0 {
			continue
		}
		pct := func(p float64) string {
			var seen uint64
			for k, n := range counts {
				seen += n
				if float64(seen) >= p*float64(total) {
					return strconv.FormatFloat(upperBound(k)*1e6, 'f', 3, 64)
				}
			}
			return "inf"
		}
		kv = append(kv, [2]string{"latency_percentiles_usec_" + cm.full,
			"p50=" + pct(0.5) + ",p99=" + pct(0.99) + ",p99.9=" + pct(0.999)})
	}
	return kv
}

// resetCommandStats zeroes commandstats and errorstats, for CONFIG RESETSTAT.
func (s *Server) resetCommandStats() {
	for _, cm := range allCommands {
		cm.stats.calls.Store(0)
		cm.stats.ns.Store(0)
		cm.stats.rejected.Store(0)
		cm.stats.failed.Store(0)
	}
	s.errStats.reset()
}
