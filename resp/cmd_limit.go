package resp

import "github.com/rlserver/rlserver/algo"

// parser reads a rate-limiting command's arguments after the key into a request.
type parser func(s *Server, args [][]byte) (algo.Request, error)

// parseKind is the parser of one RL.* command (or CL.THROTTLE), by its kind.
func parseKind(kind algo.Kind) parser {
	return func(s *Server, args [][]byte) (algo.Request, error) {
		return ParseRequest(kind, args, s.cfg.MaxLogLimit)
	}
}

// parseGCRA is the parser of Redis 8.8's GCRA command.
func parseGCRA(_ *Server, args [][]byte) (algo.Request, error) { return ParseGCRA(args) }

// limiter returns the handler of one rate-limiting command: parse the arguments after
// the key, let the store decide atomically, answer five integers. This is the hot
// path: it allocates nothing of its own.
func limiter(parse parser) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, now int64) {
		req, err := parse(s, args[2:])
		if err != nil {
			c.writeError(ErrorReply(err))
			return
		}
		if !req.Peek && s.repl.ReadOnly() {
			c.writeError(errReadOnly)
			return
		}
		d, err := s.store.Do(args[1], req, now)
		if err != nil {
			c.writeError(ErrorReply(err))
			return
		}
		if !d.Allowed && !req.Peek && req.Refund == 0 {
			s.noteRefused(req, args[1], now)
		}
		var first int64
		if d.Allowed != req.Cell { // redis-cell's reply (CL.THROTTLE, GCRA) answers "limited" instead
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
