package resp

import (
	"github.com/rlserver/rlserver/algo"

	"github.com/rlserver/rlserver/internal/rlcmd"
)

// cmdAcquire serves RL.ACQUIRE key limit lease_ms [ID id]: four integers and the
// lease's id, a null when no lease was taken (RESP3 "_", RESP2 a null bulk string).
func cmdAcquire(s *Server, c *client, args [][]byte, now int64) {
	r, err := rlcmd.ParseAcquire(args[2:], s.cfg.MaxLogLimit)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	d, err := s.store.Acquire(args[1], r, now)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.decided(d.Acquired)
	c.w.WriteArray(5)
	c.w.WriteInt64(boolInt(d.Acquired))
	c.w.WriteInt64(d.Limit)
	c.w.WriteInt64(d.Remaining)
	c.w.WriteInt64(algo.Millis(d.RetryAfter))
	if !d.Acquired {
		c.writeNull()
		return
	}
	c.w.WriteBulk(d.ID)
}

// cmdRelease serves RL.RELEASE key lease_id: 1 if a live lease was removed, else 0.
func cmdRelease(s *Server, c *client, args [][]byte, now int64) {
	ok, err := s.store.Release(args[1], args[2], now)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.w.WriteInt64(boolInt(ok))
}

// cmdRenew serves RL.RENEW key lease_id lease_ms: 1 if the live lease now ends
// lease_ms from now, 0 if there was none (an ended lease is not revived).
func cmdRenew(s *Server, c *client, args [][]byte, now int64) {
	id, duration, err := rlcmd.ParseRenew(args[2:])
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	ok, err := s.store.Renew(args[1], id, duration, now)
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.w.WriteInt64(boolInt(ok))
}
