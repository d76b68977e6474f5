package resp

import (
	"slices"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// cmdRLAll serves RL.ALL: parse every rule, let the store decide them all at once
// (all consume, or none does), answer allowed and each rule's five integers.
func cmdRLAll(s *Server, c *client, args [][]byte, now int64) {
	rules, err := rlcmd.ParseRLAll(args[1:], s.cfg.MaxLogLimit)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	if !slices.ContainsFunc(rules, func(r algo.Rule) bool { return r.Req.Peek }) {
		if msg := s.writeRefusal(); msg != "" {
			c.writeError(msg)
			return
		}
	}
	// Calls name a few rules: their decisions fit on the stack (an allocation less of
	// the ~6 an RL.ALL of two rules makes, BenchmarkServer/RL.ALL-2).
	var buf [8]algo.Decision
	ds := buf[:]
	if len(rules) > len(buf) {
		ds = make([]algo.Decision, len(rules))
	}
	ds = ds[:len(rules)]
	allowed, err := s.store.DoAll(rules, ds, now)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.decided(allowed)
	c.w.WriteArray(1 + len(ds))
	c.w.WriteInt64(boolInt(allowed))
	for i, d := range ds {
		retry, reset := replyTimes(d, rules[i].Req.Cell)
		c.w.WriteArray(5)
		c.w.WriteInt64(boolInt(d.Allowed))
		c.w.WriteInt64(d.Limit)
		c.w.WriteInt64(d.Remaining)
		c.w.WriteInt64(retry)
		c.w.WriteInt64(reset)
	}
}

// boolInt is the wire's 1 or 0.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
