package resp

import (
	"bytes"
	"math"
	"slices"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Transactions: MULTI queues the commands that follow, EXEC runs them one after the
// other, DISCARD drops them. Sentinel reconfigures a server in one transaction
// (REPLICAOF, CONFIG REWRITE, CLIENT KILL TYPE normal and pubsub, EXEC): as in Redis, a
// command refused when queued (unknown, wrong arity, MOVED, CROSSSLOT, READONLY) aborts the whole transaction at
// EXEC, while one that fails when run (CONFIG REWRITE without a config file) answers
// its error in EXEC's reply and the others run. rlserver has no WATCH: nothing else
// can be sure of a key between two commands anyway, each being its own atomic step.

// Replies of transactions, as Redis 7.0 words them.
const (
	errNestedMulti = "ERR MULTI calls can not be nested"
	errExecNoMulti = "ERR EXEC without MULTI"
	errDiscardNo   = "ERR DISCARD without MULTI"
	errExecAbort   = "EXECABORT Transaction discarded because of previous errors."
	errNoMulti     = "ERR Command not allowed inside a transaction"
	// errExecAbortBecause precedes the error of a command refused at EXEC.
	errExecAbortBecause = "EXECABORT Transaction discarded because of: "
)

// queued is one command waiting for EXEC.
type queued struct {
	cm   *command
	args [][]byte
}

// queue keeps a command for EXEC: its arguments are copied, the read buffer being reused.
func (c *client) queue(cm *command, args [][]byte) {
	q := queued{cm: cm, args: make([][]byte, len(args))}
	for i, a := range args {
		q.args[i] = bytes.Clone(a)
	}
	c.multi = append(c.multi, q)
	c.multiLen.Store(int32(len(c.multi)))
	c.w.WriteString("QUEUED")
}

// refuse answers an error for a command not run; inside MULTI it dooms the transaction.
func (c *client) refuse(msg string) {
	if c.inMulti {
		c.multiDirty = true
	}
	c.writeError(msg)
}

func cmdMulti(_ *Server, c *client, _ [][]byte, _ int64) {
	if c.inMulti {
		c.writeError(errNestedMulti)
		return
	}
	c.inMulti, c.multiDirty, c.multi = true, false, c.multi[:0]
	c.multiLen.Store(0)
	c.w.WriteString("OK")
}

func cmdDiscard(_ *Server, c *client, _ [][]byte, _ int64) {
	if !c.inMulti {
		c.writeError(errDiscardNo)
		return
	}
	c.inMulti, c.multi = false, nil
	c.multiLen.Store(-1)
	c.w.WriteString("OK")
}

// cmdExec runs the queued commands and answers their replies in one array.
func cmdExec(s *Server, c *client, _ [][]byte, _ int64) {
	if !c.inMulti {
		c.writeError(errExecNoMulti)
		return
	}
	list, dirty := c.multi, c.multiDirty
	c.inMulti = false
	// While EXEC runs, CLIENT INFO shows the transaction (flags=x, multi=n), as Redis.
	defer func() {
		c.multi = nil
		c.multiLen.Store(-1)
	}()
	if dirty {
		c.writeError(errExecAbort)
		return
	}
	// What changed since the commands were queued (the server became a replica, a
	// sync began loading) discards all of them, as Redis checks EXEC against every
	// queued command; in cluster mode all their keys must be in one slot of this
	// node's, answered with the redirect as Redis does.
	if s.cfg.Cluster != nil {
		if msg := s.execRedirect(c, list); msg != "" {
			c.writeError(msg)
			return
		}
	}
	for _, q := range list {
		if msg := s.refusal(c, q.cm, q.args, true); msg != "" {
			c.writeError(errExecAbortBecause + msg)
			return
		}
	}
	c.w.WriteArray(len(list))
	c.inExec = true
	for _, q := range list {
		// The user's rules may have changed since the command was queued: Redis
		// checks them again and answers a refusal in EXEC's reply.
		if p := c.user.Load().Perms(); !p.All() {
			if reason, object := aclCheck(p, q.cm, q.args); reason != "" {
				s.aclDenied(c, reason, object)
				c.writeError("NOPERM ACLs rules changed between the moment the transaction was accumulated " +
					"and the EXEC call. This command is no longer allowed for the following reason: " + execNoPerm[reason])
				continue
			}
		}
		s.execute(c, q.cm, q.args)
	}
	c.inExec = false // a SUBSCRIBE's connection is served once EXEC is done (execute)
}

// serveExecSub hands the connection a SUBSCRIBE in EXEC detached to its goroutine,
// once EXEC's reply is whole and its bookkeeping done, before any message.
func (s *Server) serveExecSub(c *client) {
	sub := c.execSub
	c.execSub = nil
	s.handOff(sub)
}

// peeks reports, before its run parses them, whether the arguments of a limiter that
// takes PEEK make it one, as its run will decide: RL.ALL by its rules (one PEEK rule
// suffices, as in cmdRLAll; rules that do not parse are left to its run to answer),
// the others by the word PEEK after the key, which no value of theirs can be.
func peeks(cm *command, args [][]byte) bool {
	if cm.keys != nil {
		rules, err := rlcmd.ParseRLAll(args[1:], math.MaxInt64)
		return err != nil || slices.ContainsFunc(rules, func(r algo.Rule) bool { return r.Req.Peek })
	}
	for _, a := range args[min(cm.firstKey+1, len(args)):] {
		if bytes.EqualFold(a, []byte("peek")) {
			return true
		}
	}
	return false
}
