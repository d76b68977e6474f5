package resp

import "github.com/rlserver/rlserver/internal/rlcmd"

// cmdSlice serves RL.SLICE: take what fits of count units now, through the store as
// any spend (on a region, of its home's quota for the keys it takes), and answer granted, the limiter's limit, remaining, retry_after_ms and
// reset_after_ms, and valid_ms, the slice's life in whole ms rounded down, so that a
// client that keeps to it is never late.
func cmdSlice(s *Server, c *client, args [][]byte, now int64) {
	key, req, err := rlcmd.ParseSlice(args[1:])
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	d, ok := s.decideLimit(c, key, req, now)
	if !ok {
		return
	}
	c.decided(d.Granted > 0)
	if !req.Peek {
		s.slices.noteSlice(key, d.Granted)
		if d.Granted == 0 {
			s.noteRefused(req, key, now)
		}
	}
	retry, reset := replyTimes(d, false)
	c.w.WriteArray(6)
	c.w.WriteInt64(d.Granted)
	c.w.WriteInt64(d.Limit)
	c.w.WriteInt64(d.Remaining)
	c.w.WriteInt64(retry)
	c.w.WriteInt64(reset)
	c.w.WriteInt64(d.ValidFor / 1000)
}
