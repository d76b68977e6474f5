package resp

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
	"github.com/rlserver/rlserver/store"
)

const errDebugDisabled = "ERR DEBUG command not allowed. " +
	"Start rlserver with -enable-debug-command to use it (tests only)."

// cmdHelp serves HELP of every container command, listed from the table.
func cmdHelp(_ *Server, c *client, args [][]byte, _ int64) {
	cm := lookup(commandIndex, args[0])
	c.w.WriteArray(1 + 2*len(cm.subs))
	c.w.WriteString(upper(cm.name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, sub := range cm.subs {
		c.w.WriteString(strings.TrimPrefix(sub.syntax(), upper(cm.name)+" "))
		c.w.WriteString("    " + sub.summary)
	}
}

// cmdCommand serves COMMAND: every command's info.
func cmdCommand(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteArray(len(commands))
	for _, cm := range commands {
		writeCommandInfo(c, cm)
	}
}

func cmdCommandCount(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteInt64(int64(len(commands)))
}

// cmdCommandInfo serves COMMAND INFO [name ...]: null for unknown names.
func cmdCommandInfo(_ *Server, c *client, args [][]byte, _ int64) {
	if len(args) == 2 {
		cmdCommand(nil, c, nil, 0)
		return
	}
	c.w.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		if cm := lookupFull(string(name)); cm != nil {
			writeCommandInfo(c, cm)
		} else {
			c.writeNull()
		}
	}
}

// cmdCommandDocs serves COMMAND DOCS [name ...]: a map from name to docs, unknown
// names left out. redis-cli reads it at start for its help and argument hints.
func cmdCommandDocs(_ *Server, c *client, args [][]byte, _ int64) {
	list := commands
	if len(args) > 2 {
		list = nil
		for _, name := range args[2:] {
			if cm := lookupFull(string(name)); cm != nil {
				list = append(list, cm)
			}
		}
	}
	c.writeMap(len(list))
	for _, cm := range list {
		c.w.WriteBulkString(cm.full)
		writeCommandDocs(c, cm)
	}
}

// cmdCommandList serves COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN
// pattern]: command and subcommand names.
func cmdCommandList(_ *Server, c *client, args [][]byte, _ int64) {
	keep := func(*command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && bytes.EqualFold(args[2], []byte("filterby")):
		val := string(args[4])
		switch strings.ToLower(string(args[3])) {
		case "module":
			keep = func(*command) bool { return false } // no modules
		case "aclcat":
			keep = func(cm *command) bool { return slices.Contains(aclCategories(cm), "@"+strings.ToLower(val)) }
		case "pattern":
			keep = func(cm *command) bool { return store.Match([]byte(val), []byte(cm.full), true) }
		default:
			c.writeError(errSyntax)
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	var names []string
	for _, cm := range commands {
		if keep(cm) {
			names = append(names, cm.full)
		}
		for _, sub := range cm.subs {
			if keep(sub) {
				names = append(names, sub.full)
			}
		}
	}
	c.w.WriteArray(len(names))
	for _, n := range names {
		c.w.WriteBulkString(n)
	}
}

// aclCategories derives Redis's ACL categories from the flags and the group.
func aclCategories(cm *command) []string {
	var cats []string
	if slices.Contains(cm.flags, "write") {
		cats = append(cats, "@write")
	}
	if slices.Contains(cm.flags, "readonly") {
		cats = append(cats, "@read")
	}
	if slices.Contains(cm.flags, "fast") {
		cats = append(cats, "@fast")
	} else {
		cats = append(cats, "@slow")
	}
	if slices.Contains(cm.flags, "admin") {
		cats = append(cats, "@admin", "@dangerous")
	}
	switch cm.group {
	case groupRateLimit:
		cats = append(cats, "@ratelimit")
	case groupGeneric:
		cats = append(cats, "@keyspace")
	case groupConnection:
		cats = append(cats, "@connection")
	}
	return cats
}

// writeCommandInfo writes the 10-element reply of COMMAND INFO for one command, as
// Redis 7 does: name, arity, flags, first key, last key, step, ACL categories,
// tips, key specs, subcommands.
func writeCommandInfo(c *client, cm *command) {
	c.w.WriteArray(10)
	c.w.WriteBulkString(cm.full)
	c.w.WriteInt64(int64(cm.arity))
	c.writeStatuses(cm.flags)
	c.w.WriteInt64(int64(cm.firstKey))
	c.w.WriteInt64(int64(cm.lastKey))
	c.w.WriteInt64(int64(cm.keyStep))
	c.writeStatuses(aclCategories(cm))
	c.writeSet(0) // tips
	if cm.firstKey == 0 {
		c.w.WriteArray(0)
	} else {
		c.w.WriteArray(1)
		writeKeySpec(c, cm)
	}
	c.w.WriteArray(len(cm.subs))
	for _, sub := range cm.subs {
		writeCommandInfo(c, sub)
	}
}

// writeKeySpec writes the one key spec of a command from its key positions.
func writeKeySpec(c *client, cm *command) {
	flags := []string{"RO", "access"}
	if slices.Contains(cm.flags, "write") {
		flags = []string{"RW", "update"}
	}
	lastKey := cm.lastKey // relative to the first key, or -1 for "to the end"
	if lastKey > 0 {
		lastKey -= cm.firstKey
	}
	c.writeMap(3)
	c.w.WriteBulkString("flags")
	c.writeStatuses(flags)
	c.w.WriteBulkString("begin_search")
	c.writeMap(2)
	c.w.WriteBulkString("type")
	c.w.WriteBulkString("index")
	c.w.WriteBulkString("spec")
	c.writeMap(1)
	c.w.WriteBulkString("index")
	c.w.WriteInt64(int64(cm.firstKey))
	c.w.WriteBulkString("find_keys")
	c.writeMap(2)
	c.w.WriteBulkString("type")
	c.w.WriteBulkString("range")
	c.w.WriteBulkString("spec")
	c.writeMap(3)
	c.w.WriteBulkString("lastkey")
	c.w.WriteInt64(int64(lastKey))
	c.w.WriteBulkString("keystep")
	c.w.WriteInt64(int64(cm.keyStep))
	c.w.WriteBulkString("limit")
	c.w.WriteInt64(0)
}

// writeCommandDocs writes one command's COMMAND DOCS map. redis-cli asserts on the
// types: strings for summary, since and group, an array of argument maps.
func writeCommandDocs(c *client, cm *command) {
	n := 3
	if cm.complexity != "" {
		n++
	}
	if cm.args != nil {
		n++
	}
	if cm.subs != nil {
		n++
	}
	c.writeMap(n)
	c.w.WriteBulkString("summary")
	c.w.WriteBulkString(cm.summary)
	c.w.WriteBulkString("since")
	c.w.WriteBulkString(since)
	c.w.WriteBulkString("group")
	c.w.WriteBulkString(cm.group)
	if cm.complexity != "" {
		c.w.WriteBulkString("complexity")
		c.w.WriteBulkString(cm.complexity)
	}
	if cm.args != nil {
		c.w.WriteBulkString("arguments")
		writeArgDocs(c, cm.args)
	}
	if cm.subs != nil {
		c.w.WriteBulkString("subcommands")
		c.writeMap(len(cm.subs))
		for _, sub := range cm.subs {
			c.w.WriteBulkString(sub.full)
			writeCommandDocs(c, sub)
		}
	}
}

func writeArgDocs(c *client, args []arg) {
	c.w.WriteArray(len(args))
	for _, a := range args {
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.typ == "key" {
			n++
		}
		if a.token != "" {
			n++
		}
		if flags != nil {
			n++
		}
		if a.args != nil {
			n++
		}
		c.writeMap(n)
		c.w.WriteBulkString("name")
		c.w.WriteBulkString(a.name)
		c.w.WriteBulkString("type")
		c.w.WriteBulkString(a.typ)
		if a.typ == "key" {
			c.w.WriteBulkString("key_spec_index")
			c.w.WriteInt64(0) // every command has at most one key spec
		}
		if a.token != "" {
			c.w.WriteBulkString("token")
			c.w.WriteBulkString(a.token)
		}
		if flags != nil {
			c.w.WriteBulkString("flags")
			c.writeStatuses(flags)
		}
		if a.args != nil {
			c.w.WriteBulkString("arguments")
			writeArgDocs(c, a.args)
		}
	}
}

// configParams are the parameters CONFIG GET knows: what redis-benchmark, redis-cli
// and client libraries ask, answered as a Redis without RDB or AOF would (rlserver's
// snapshot is its own format, set by -snapshot), plus rlserver's own.
func (s *Server) configParams() [][2]string {
	host, port := "", ""
	if a := s.Addr(); a != nil {
		host, port, _ = net.SplitHostPort(a.String())
	}
	tlsPort := "0"
	if a := s.TLSAddr(); a != nil {
		_, tlsPort, _ = net.SplitHostPort(a.String())
	}
	yesNo := map[bool]string{true: "yes", false: "no"}
	return [][2]string{
		{"save", ""},
		{"appendonly", "no"},
		{"maxmemory", strconv.FormatInt(s.cfg.MaxMemory, 10)},
		{"maxmemory-policy", s.memoryPolicy()},
		{"databases", "1"},
		{"bind", host},
		{"port", port},
		{"timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout/time.Second), 10)},
		{"requirepass", s.cfg.RequirePass}, // in clear, as Redis answers it
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"proto-max-bulk-len", strconv.FormatInt(s.cfg.ProtoMaxBulkLen, 10)},
		{"tls-port", tlsPort},
		{"tls-cert-file", s.cfg.TLSCertFile},
		{"tls-key-file", s.cfg.TLSKeyFile},
		{"protected-mode", "no"},
		{"cluster-enabled", yesNo[s.cfg.Cluster != nil]},
		{"enable-debug-command", yesNo[s.cfg.EnableDebugCommand]},
		{"shards", strconv.Itoa(s.cfg.Shards)},
		{"max-log-limit", strconv.FormatInt(s.cfg.MaxLogLimit, 10)},
	}
}

// cmdConfigGet serves CONFIG GET pattern [pattern ...]: a map (RESP3) or flat
// array (RESP2) of the matching parameters, each once.
func cmdConfigGet(s *Server, c *client, args [][]byte, _ int64) {
	var found [][2]string
	for _, p := range s.configParams() {
		for _, pat := range args[2:] {
			if store.Match(pat, []byte(p[0]), true) {
				found = append(found, p)
				break
			}
		}
	}
	c.writeMap(len(found))
	for _, p := range found {
		c.w.WriteBulkString(p[0])
		c.w.WriteBulkString(p[1])
	}
}

// cmdConfigRewrite serves CONFIG REWRITE: there is no config file to rewrite (flags
// only), which is an error when it runs, as Redis's without one: inside Sentinel's
// MULTI the other commands still run.
func cmdConfigRewrite(_ *Server, c *client, _ [][]byte, _ int64) {
	c.writeError("ERR The server is running without a config file")
}

// infoSections are INFO's sections, in order.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cluster", "keyspace"}

// cmdInfo serves INFO [section ...]: the named sections ("all", "everything" and
// "default" name all of them), as one bulk string in Redis's "key:value" format.
func cmdInfo(s *Server, c *client, args [][]byte, now int64) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		switch sec := strings.ToLower(string(a)); sec {
		case "all", "everything", "default":
			for _, name := range infoSections {
				want[name] = true
			}
		default:
			want[sec] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if len(args) > 1 && !want[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec[:1]) + sec[1:] + "\r\n")
		for _, kv := range s.infoSection(sec, now) {
			b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
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
		if s.clock.isFrozen() {
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
			{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
			{"blocked_clients", "0"},
		}
	case "memory":
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		st := s.store.Stats()
		used := m.HeapAlloc + uint64(offheap.Bytes()) // the store lives off the Go heap
		rss := processRSS(m.Sys - m.HeapReleased + uint64(offheap.Bytes()))
		return [][2]string{
			{"used_memory", utoa(used)},
			{"used_memory_human", human(used)},
			{"used_memory_rss", utoa(rss)},
			{"used_memory_rss_human", human(rss)},
			{"used_memory_dataset", itoa(st.Bytes)},
			{"used_memory_dataset_human", human(uint64(st.Bytes))},
			{"maxmemory", itoa(s.cfg.MaxMemory)},
			{"maxmemory_human", human(uint64(s.cfg.MaxMemory))},
			{"maxmemory_policy", s.memoryPolicy()},
			{"mem_allocator", "go"},
		}
	case "persistence":
		return s.persistenceInfo()
	case "stats":
		st := s.store.Stats()
		cmds, errs := s.stats()
		kv := [][2]string{
			{"total_connections_received", utoa(s.connections.Load())},
			{"rejected_connections", utoa(s.rejected.Load())},
			{"total_commands_processed", utoa(cmds)},
			{"total_error_replies", utoa(errs)},
			{"expired_keys", utoa(st.Expired)},
			{"evicted_keys", utoa(st.Evicted)},
			{"sync_full", utoa(s.repl.syncFull.Load())},
			{"sync_partial_ok", utoa(s.repl.syncPartialOK.Load())},
			{"sync_partial_err", utoa(s.repl.syncPartialErr.Load())},
		}
		for k := algo.KindFixed; k <= algo.KindLease; k++ {
			name := strings.ReplaceAll(k.Command(), ".", "_")
			kv = append(kv,
				[2]string{name + "_allowed", utoa(st.Allowed[k])},
				[2]string{name + "_limited", utoa(st.Limited[k])})
		}
		return kv
	case "replication":
		return s.replicationInfo()
	case "cluster":
		return [][2]string{{"cluster_enabled", boolDigit(s.cfg.Cluster != nil)}}
	case "keyspace":
		// Every key expires on its own when its state is fresh again, so keys = expires.
		if n := s.store.Len(now); n > 0 {
			return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", n, n)}}
		}
	}
	return nil
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

// cmdTime serves TIME from the server clock: seconds and microseconds, as strings.
func cmdTime(_ *Server, c *client, _ [][]byte, now int64) {
	c.w.WriteArray(2)
	c.w.WriteBulkString(strconv.FormatInt(now/1_000_000, 10))
	c.w.WriteBulkString(strconv.FormatInt(now%1_000_000, 10))
}

// cmdShutdown serves SHUTDOWN [NOSAVE|SAVE]. As in Redis, SAVE (and no argument when
// there is a snapshot file) saves first and refuses to stop if that fails; NOSAVE
// stops without saving. A successful SHUTDOWN answers nothing: the connection closes.
// The server saves once more after the last command has run (finalSave).
func cmdShutdown(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 2 || len(args) == 2 &&
		!bytes.EqualFold(args[1], []byte("nosave")) && !bytes.EqualFold(args[1], []byte("save")) {
		c.writeError(errSyntax)
		return
	}
	save := s.cfg.SnapshotPath != ""
	if len(args) == 2 {
		save = bytes.EqualFold(args[1], []byte("save"))
	}
	switch {
	case save && s.cfg.SnapshotPath == "":
		c.writeError(errNoSnapshot)
		return
	case save:
		if s.save() != nil {
			c.writeError("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	default:
		s.persist.noSave.Store(true)
	}
	s.log.Info("SHUTDOWN requested", "client", c.id, "addr", c.addr, "save", save)
	c.conn.ReadPipeline()
	c.conn.Close()
	s.Close()
}

// cmdDebug serves DEBUG CLOCK SET unix_us | ADVANCE us | REAL, and DEBUG HELP, when
// the server was started with -enable-debug-command.
func cmdDebug(s *Server, c *client, args [][]byte, _ int64) {
	if !s.cfg.EnableDebugCommand {
		c.writeError(errDebugDisabled)
		return
	}
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "help" && len(args) == 2:
		lines := []string{
			"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CLOCK SET unix_us",
			"    Freeze the server clock at unix_us microseconds since the Unix epoch.",
			"CLOCK ADVANCE us",
			"    Move the clock us microseconds forward and keep it frozen there.",
			"CLOCK REAL",
			"    Follow the real time again.",
		}
		c.w.WriteArray(len(lines))
		for _, l := range lines {
			c.w.WriteString(l)
		}
		return
	case sub != "clock":
		c.writeError(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try DEBUG HELP.", args[1]))
		return
	}
	action := ""
	if len(args) > 2 {
		action = strings.ToLower(string(args[2]))
	}
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	switch {
	case action == "real" && len(args) == 3:
		s.clock.real()
	case action == "set" && len(args) == 4:
		// The engine's float64 formulas hold µs exactly below 2^53 (year 2255).
		t, ok := parseInt(args[3])
		if !ok || t < 1 || t > maxClock {
			c.writeError(fmt.Sprintf("ERR unix_us must be an integer between 1 and %d", maxClock))
			return
		}
		s.clock.set(t)
	case action == "advance" && len(args) == 4:
		d, ok := parseInt(args[3])
		if !ok || d < 0 || d > maxClock {
			c.writeError(fmt.Sprintf("ERR us must be an integer between 0 and %d", maxClock))
			return
		}
		if !s.clock.advance(d) {
			c.writeError(fmt.Sprintf("ERR the clock would pass %d", maxClock))
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	s.store.ResetTime() // a test may set the clock back on purpose
	c.batchOpen = false // the next command of this pipeline reads the new time
	c.w.WriteString("OK")
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
