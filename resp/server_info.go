package resp

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
	"github.com/rlserver/rlserver/store"
)

// infoSections are INFO's sections, in Redis's order, then rlserver's own (slices,
// region);
// the default ones are those INFO without arguments shows (all but commandstats and
// latencystats, as in Redis).
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication",
	"cpu", "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace", "slices", "region"}

// notDefault are the sections only "all", "everything" or their name show.
var notDefault = map[string]bool{"commandstats": true, "latencystats": true}

// onlyFilled are the sections shown, unless named, only when they have lines: as a
// Redis module's section appears only once the module is loaded, so that INFO
// matches Redis's where nothing of ours was used.
var onlyFilled = map[string]bool{"slices": true, "region": true}

// cmdInfo serves INFO [section ...]: the named sections ("default" the default ones,
// "all" and "everything" all of them), as one bulk string in Redis's "key:value" format.
func cmdInfo(s *Server, c *client, args [][]byte, now int64) {
	want, named := map[string]bool{}, map[string]bool{}
	names := args[1:]
	if len(names) == 0 {
		names = [][]byte{[]byte("default")}
	}
	for _, a := range names {
		switch sec := strings.ToLower(string(a)); sec {
		case "all", "everything", "default":
			for _, name := range infoSections {
				want[name] = want[name] || sec != "default" || !notDefault[name]
			}
		default:
			want[sec], named[sec] = true, true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !want[sec] {
			continue
		}
		kv := s.infoSection(sec, now)
		if len(kv) == 0 && onlyFilled[sec] && !named[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		if sec == "cpu" {
			b.WriteString("# CPU\r\n")
		} else {
			b.WriteString("# " + strings.ToUpper(sec[:1]) + sec[1:] + "\r\n")
		}
		for _, line := range kv {
			b.WriteString(line[0] + ":" + line[1] + "\r\n")
		}
	}
	c.w.WriteBulkString(b.String())
}

func (s *Server) infoSection(name string, now int64) [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	utoa := func(n uint64) string { return strconv.FormatUint(n, 10) }
	switch name {
	case "server":
		port := ""
		if a := s.Addr(); a != nil {
			_, port, _ = net.SplitHostPort(a.String())
		}
		clockMode := "real"
		if s.clock.IsFrozen() {
			clockMode = "frozen"
		}
		up := int64(time.Since(s.start) / time.Second)
		return [][2]string{
			{"redis_version", redisVersion},
			{"rlserver_version", Version},
			{"redis_mode", s.redisMode()},
			{"os", runtime.GOOS + " " + runtime.GOARCH},
			{"arch_bits", strconv.Itoa(strconv.IntSize)},
			{"go_version", runtime.Version()},
			{"process_id", strconv.Itoa(os.Getpid())},
			{"run_id", s.runID},
			{"tcp_port", port},
			{"server_time_usec", itoa(now)},
			{"clock", clockMode},
			{"uptime_in_seconds", itoa(up)},
			{"uptime_in_days", itoa(up / 86400)},
		}
	case "clients":
		return [][2]string{
			{"connected_clients", itoa(s.connected.Load())},
			{"maxclients", strconv.FormatInt(s.tun.Load().maxClients, 10)},
			{"blocked_clients", "0"},
		}
	case "memory":
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		st := s.store.Stats()
		t := s.core.Tunables()
		used := m.HeapAlloc + uint64(offheap.Bytes()) // the store lives off the Go heap
		rss := processRSS(m.Sys - m.HeapReleased + uint64(offheap.Bytes()))
		return [][2]string{
			{"used_memory", utoa(used)},
			{"used_memory_human", human(used)},
			{"used_memory_rss", utoa(rss)},
			{"used_memory_rss_human", human(rss)},
			{"used_memory_dataset", itoa(st.Bytes)},
			{"used_memory_dataset_human", human(uint64(st.Bytes))},
			{"maxmemory", itoa(t.MaxMemory)},
			{"maxmemory_human", human(uint64(t.MaxMemory))},
			{"maxmemory_policy", t.EffectivePolicy().String()},
			{"mem_allocator", "go"},
		}
	case "persistence":
		return s.persistenceInfo()
	case "stats":
		c := s.statsSinceReset()
		st := c.store
		kv := [][2]string{
			{"total_connections_received", utoa(c.connections)},
			{"rejected_connections", utoa(c.rejected)},
			{"total_commands_processed", utoa(c.commands)},
			{"total_error_replies", utoa(c.errors)},
			{"expired_keys", utoa(st.Expired)},
			{"evicted_keys", utoa(st.Evicted)},
			{"sync_full", utoa(c.syncFull)},
			{"sync_partial_ok", utoa(c.syncPartialOK)},
			{"sync_partial_err", utoa(c.syncPartialErr)},
		}
		for k := algo.KindFixed; k <= algo.LastKind; k++ {
			name := strings.ReplaceAll(k.Command(), ".", "_")
			kv = append(kv,
				[2]string{name + "_allowed", utoa(st.Allowed[k])},
				[2]string{name + "_limited", utoa(st.Limited[k])})
		}
		return kv
	case "replication":
		return s.replicationInfo()
	case "cpu":
		return cpuInfo()
	case "commandstats":
		return commandstatsInfo()
	case "errorstats":
		return s.errorstatsInfo()
	case "latencystats":
		return s.latencystatsInfo()
	case "cluster":
		return [][2]string{{"cluster_enabled", boolDigit(s.cfg.Cluster != nil)}}
	case "slices":
		return s.slices.info()
	case "region":
		return s.upstreamInfo()
	case "keyspace":
		// Every key expires on its own when its state is fresh again, so keys = expires.
		if n := s.store.Len(now); n > 0 {
			return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", n, n)}}
		}
	}
	return nil
}

// statCounters are INFO stats' counters.
type statCounters struct {
	connections, rejected, commands, errors uint64
	syncFull, syncPartialOK, syncPartialErr uint64
	store                                   store.Stats // its counters: Expired, Evicted, Allowed, Limited
}

// readStats reads the counters since the start.
func (s *Server) readStats() statCounters {
	c := statCounters{connections: s.connections.Load(), rejected: s.rejected.Load(),
		store: s.store.Stats()}
	r := s.repl.Status()
	c.syncFull, c.syncPartialOK, c.syncPartialErr = r.SyncFull, r.SyncPartialOK, r.SyncPartialErr
	c.commands, c.errors = s.stats()
	return c
}

// statsSinceReset reads the counters since the last CONFIG RESETSTAT. The counters
// themselves never go back: /metrics exports them, and Prometheus reads a counter
// that falls as a restart.
func (s *Server) statsSinceReset() statCounters {
	c, base := s.readStats(), s.statBase.Load()
	c.connections -= base.connections
	c.rejected -= base.rejected
	c.commands -= base.commands
	c.errors -= base.errors
	c.syncFull -= base.syncFull
	c.syncPartialOK -= base.syncPartialOK
	c.syncPartialErr -= base.syncPartialErr
	c.store.Expired -= base.store.Expired
	c.store.Evicted -= base.store.Evicted
	for k := range c.store.Allowed {
		c.store.Allowed[k] -= base.store.Allowed[k]
		c.store.Limited[k] -= base.store.Limited[k]
	}
	return c
}

// resetStats is CONFIG RESETSTAT: INFO's counters start again from zero.
func (s *Server) resetStats() {
	c := s.readStats()
	s.statBase.Store(&c)
	s.resetCommandStats()
	s.slices.reset()
}

// human formats a byte count as Redis's *_human fields do: "1.50M".
func human(n uint64) string {
	const units = "BKMGTPE"
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatUint(n, 10) + "B"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + units[i:i+1]
}

// processRSS returns the process's resident set size, as Redis's used_memory_rss
// does, from /proc/self/statm; guess where there is no /proc.
func processRSS(guess uint64) uint64 {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return guess
	}
	f := strings.Fields(string(statm))
	if len(f) < 2 {
		return guess
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return guess
	}
	return pages * uint64(os.Getpagesize())
}
