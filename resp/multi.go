package resp

import "bytes"

// Transactions: MULTI queues the commands that follow, EXEC runs them one after the
// other, DISCARD drops them. Sentinel reconfigures a server in one transaction
// (REPLICAOF, CONFIG REWRITE, CLIENT KILL TYPE normal and pubsub, EXEC): as in Redis, a
// command refused when queued (unknown, wrong arity) aborts the whole transaction at
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
)

// queued is one command waiting for EXEC.
type queued struct {
	cm   *command
	args [][]byte
}

// queue keeps a command for EXEC: its arguments are copied, the read buffer being reused.
func (c *client) queue(cm *command, args [][]byte) {
	if cm.noMulti {
		c.refuse(errNoMulti)
		return
	}
	q := queued{cm: cm, args: make([][]byte, len(args))}
	for i, a := range args {
		q.args[i] = bytes.Clone(a)
	}
	c.multi = append(c.multi, q)
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
	c.w.WriteString("OK")
}

func cmdDiscard(_ *Server, c *client, _ [][]byte, _ int64) {
	if !c.inMulti {
		c.writeError(errDiscardNo)
		return
	}
	c.inMulti, c.multi = false, nil
	c.w.WriteString("OK")
}

// cmdExec runs the queued commands and answers their replies in one array.
func cmdExec(s *Server, c *client, _ [][]byte, _ int64) {
	if !c.inMulti {
		c.writeError(errExecNoMulti)
		return
	}
	list, dirty := c.multi, c.multiDirty
	c.inMulti, c.multi = false, nil
	if dirty {
		c.writeError(errExecAbort)
		return
	}
	c.w.WriteArray(len(list))
	for _, q := range list {
		s.execute(c, q.cm, q.args)
	}
}
