package resp

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/tidwall/redcon"
)

// A command's way from redcon to its handler: the checks Redis makes before it runs
// one (existence, arity, authentication, MULTI, ACL, cluster slot, replica, loading), in
// Redis's order, then its run and bookkeeping (SLOWLOG, metrics, INFO commandstats,
// MONITOR, CLIENT TRACKING).

// serveCommand runs one command. redcon calls it for each command of a batch and
// flushes the replies of the whole batch afterwards.
func (s *Server) serveCommand(rc redcon.Conn, cmd redcon.Command) {
	c := rc.Context().(*client)
	defer func() {
		// The last guard, not the plan: a handler bug must not take down every
		// client. The reply may be half-written, so the connection is closed, and
		// the commands pipelined after this one are dropped: redcon would otherwise
		// run them, changing limits, with their replies going nowhere.
		if r := recover(); r != nil {
			s.log.Error("command panicked", "client", c.id, "command", string(cmd.Args[0]),
				"panic", r, "stack", string(debug.Stack()))
			c.w.WriteError("ERR internal error")
			rc.ReadPipeline()
			rc.Close()
		}
	}()
	c.commands.Add(1)
	c.qbuf = len(cmd.Raw)
	// The commands of one pipeline share one reading of the clock, wall and monotonic:
	// a reading is slow under a virtualised clock (BenchmarkClockNow), a visible share
	// of the CPU of a deep RL.TOKEN pipeline in pprof. Each command's run time, for
	// SLOWLOG and the latency metric, is then read from the monotonic clock alone
	// (time.Since, BenchmarkClockSince) since the end of the command before.
	if !c.batchOpen {
		c.batchStart = time.Now()
		c.active.Store(c.batchStart.UnixNano())
		c.batchNow = s.clock.At(c.batchStart)
		c.batchMark = 0
	}
	c.batchOpen = len(rc.PeekPipeline()) > 0
	if !c.replyOff && !c.replySkip {
		s.dispatch(c, cmd.Args)
		return
	}
	s.dispatchSilent(c, cmd.Args)
}

// dispatchSilent runs a command whose reply CLIENT REPLY OFF or SKIP drops: what it
// writes is cut from the buffer but its pushes and CLIENT REPLY ON's OK. A command
// that hands the connection to a goroutine of its own (SUBSCRIBE), which owns c
// then, ends the silence itself before it does.
func (s *Server) dispatchSilent(c *client, args [][]byte) {
	sub := c.sub
	c.skipping, c.replySkip = c.replySkip, false
	c.silent, c.silentFrom = true, len(c.w.Buffer())
	s.dispatch(c, args)
	if c.sub == sub {
		c.unsilence()
	}
}

// dispatch finds a command and admits it, traced if the tracer samples it.
func (s *Server) dispatch(c *client, args [][]byte) {
	if c.caching {
		cachingStep(c, args)
	}
	cm := lookup(commandIndex, args[0])
	if cm == nil {
		c.refuse(unknownCommand(args))
		return
	}
	if cm.subs != nil && len(args) > 1 {
		sub := lookup(cm.subIndex, args[1])
		if sub == nil {
			c.refuse(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.",
				args[1], upper(cm.name)))
			return
		}
		cm = sub
	}
	if s.trace.sample() {
		s.admitTraced(c, cm, args)
		return
	}
	s.admit(c, cm, args)
}

// admit checks cm's arguments and the connection's right to run it; inside MULTI it
// queues it, else runs it.
func (s *Server) admit(c *client, cm *command, args [][]byte) {
	if !cm.arityOK(len(args)) {
		cm.stats.rejected.Add(1)
		msg := "wrong number of arguments for '" + cm.full + "' command"
		if c.inMulti && cm.name == "exec" {
			// Redis aborts the transaction at once, saying why.
			c.inMulti, c.multi = false, nil
			c.multiLen.Store(-1)
			c.writeError(errExecAbortBecause + msg)
			return
		}
		c.refuse("ERR " + msg)
		return
	}
	if !cm.noAuth && s.authRequired(c) {
		cm.stats.rejected.Add(1)
		c.refuse(errNoAuth)
		return
	}
	if c.inMulti && !cm.tx && cm.noMulti {
		cm.stats.rejected.Add(1)
		c.refuse(errNoMulti)
		return
	}
	// One atomic load and a flag for a user who may run anything: the default
	// user's hot path pays nothing more.
	if p := c.user.Load().Perms(); !p.All() {
		if msg := s.aclRefusal(c, p, cm, args); msg != "" {
			cm.stats.rejected.Add(1)
			c.refuse(msg)
			return
		}
	}
	if msg := s.subscribedRefusal(c, cm); msg != "" {
		cm.stats.rejected.Add(1)
		c.refuse(msg)
		return
	}
	if s.pause.state.Load() != nil {
		s.waitPause(c, cm) // after the checks, before it is queued or run, as Redis
	}
	if c.inMulti && !cm.tx {
		// Refused now, as Redis refuses it when queued, it dooms the transaction:
		// EXEC then applies none of it.
		if msg := s.refusal(c, cm, args, true); msg != "" {
			cm.stats.rejected.Add(1)
			c.refuse(msg)
			return
		}
		c.queue(cm, args)
		return
	}
	s.execute(c, cm, args)
}

// refusal is the error that keeps a checked command from running here, or "": the
// key's slot is another node's (MOVED, CROSSSLOT), the server is a replica and the
// command writes (READONLY), or a full sync is loading (LOADING). Queued (inside
// MULTI), a limiter that may be a PEEK is judged by its arguments; run, it checks
// after parsing them (limiter, cmdRLAll).
func (s *Server) refusal(c *client, cm *command, args [][]byte, queued bool) string {
	// Only cluster mode pays for the slot check, mostly the key's CRC16
	// (BenchmarkClusterRedirect), within the noise of a pipelined RL.TOKEN over
	// loopback (BenchmarkClusterCheck). Standalone, one comparison.
	if s.cfg.Cluster != nil && (cm.firstKey != 0 || cm.keys != nil) {
		if msg := s.clusterRedirect(c, cm, args); msg != "" {
			return msg
		}
	}
	if cm.write && (!cm.peekable || queued && !peeks(cm, args)) {
		if msg := s.writeRefusal(); msg != "" {
			return msg
		}
	}
	if !cm.loadingOK && s.repl.Loading() {
		return errLoading
	}
	return ""
}

// execute runs a checked command, unless refusal says no. In cluster mode the
// command's slot is locked from the routing to the end of its run (lockSlot), and a
// command but ASKING ends the connection's ASKING, as Redis's resetClient.
func (s *Server) execute(c *client, cm *command, args [][]byte) {
	if lk := s.lockSlot(cm, args); lk != nil {
		defer lk.RUnlock()
	}
	if c.asking && cm.name != "asking" {
		defer func() { c.asking = false }()
	}
	if msg := s.refusal(c, cm, args, false); msg != "" {
		cm.stats.rejected.Add(1)
		c.writeError(msg)
		return
	}
	if !c.inExec {
		c.last.Store(cm) // CLIENT LIST's cmd: EXEC for those it runs, as Redis
	}
	cm.stats.calls.Add(1)
	errs, inExec := c.errors.Load(), c.inExec
	var l *aof.Log
	var before int64
	if cm.write {
		if l = s.core.AOF(); l != nil {
			before = l.Mark()
		}
	}
	cm.run(s, c, args, c.batchNow)
	if l != nil {
		if after := l.Mark(); after > before {
			c.aofMark.Store(after) // it wrote (or others did meanwhile): its reply waits for the disk
		}
	}
	if cm.detaches && !inExec {
		return // it may have handed the connection to a goroutine of its own, which owns c now
	}
	if c.errors.Load() != errs {
		cm.stats.failed.Add(1)
	} else if s.tracksAny(c) {
		s.trackCommand(c, cm, args)
	}
	end := time.Since(c.batchStart)
	took := end - c.batchMark
	c.batchMark = end
	cm.stats.ns.Add(uint64(took))
	if s.metrics.timeThisOne() {
		s.metrics.latency[cm.id].observe(took)
	}
	if t := s.tun.Load(); t.slowerThan >= 0 && took.Microseconds() >= t.slowerThan && !cm.tx {
		s.slow.add(c, cm, args, took, t.slowlogLen)
	}
	if s.mon.n.Load() > 0 {
		s.feedMonitors(c, cm, args)
	}
	if len(c.deferred) > 0 && !c.inExec {
		c.writeDeferred()
	}
	if c.execSub != nil && !c.inExec {
		s.serveExecSub(c)
	}
}

// unknownCommand formats the error exactly as Redis does: the name as typed and the
// first arguments, quoted, until 128 bytes of them are shown.
func unknownCommand(args [][]byte) string {
	b := make([]byte, 0, 64)
	for i := 1; i < len(args) && len(b) < 128; i++ {
		a := args[i]
		if len(a) > 128-len(b) {
			a = a[:128-len(b)]
		}
		b = append(b, '\'')
		b = append(b, a...)
		b = append(b, "' "...)
	}
	return fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b)
}
