package resp

import "github.com/rlserver/rlserver/algo"

// limiter returns the handler of one RL.* command (or CL.THROTTLE): parse the
// arguments after the key, let the store decide atomically, answer five integers.
// This is the hot path: it allocates nothing of its own.
func limiter(kind algo.Kind) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, now int64) {
		req, err := algo.Parse(kind, args[2:], s.cfg.MaxLogLimit)
		if err != nil {
			c.writeError(err.Error())
			return
		}
		if !req.Peek && s.repl.readOnly.Load() {
			c.writeError(errReadOnly)
			return
		}
		d, err := s.store.Do(args[1], req, now)
		if err != nil {
			c.writeError(err.Error())
			return
		}
		var first int64
		if d.Allowed != (kind == algo.KindThrottle) { // CL.THROTTLE answers "limited" instead
			first = 1
		}
		c.w.WriteArray(5)
		c.w.WriteInt64(first)
		c.w.WriteInt64(d.Limit)
		c.w.WriteInt64(d.Remaining)
		c.w.WriteInt64(d.RetryAfter)
		c.w.WriteInt64(d.ResetAfter)
	}
}
