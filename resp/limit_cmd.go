package resp

import (
	"math"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// parser reads a rate-limiting command's arguments after the key into a request.
type parser func(s *Server, args [][]byte) (algo.Request, error)

// parseKind is the parser of one RL.* command (or CL.THROTTLE), by its kind.
func parseKind(kind algo.Kind) parser {
	return func(s *Server, args [][]byte) (algo.Request, error) {
		return rlcmd.ParseRequest(kind, args, s.cfg.MaxLogLimit)
	}
}

// parseGCRA is the parser of Redis 8.8's GCRA command.
func parseGCRA(_ *Server, args [][]byte) (algo.Request, error) { return rlcmd.ParseGCRA(args) }

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
		d, ok := s.decideLimit(c, args[1], req, now)
		if !ok {
			return
		}
		c.decided(d.Allowed)
		if !d.Allowed && !req.Peek && req.Refund == 0 {
			s.noteRefused(req, args[1], now)
		}
		if req.Refund > 0 {
			s.slices.noteRefund(args[1], req.Refund)
		}
		var first int64
		if d.Allowed != req.Cell { // redis-cell's reply (CL.THROTTLE, GCRA) answers "limited" instead
			first = 1
		}
		retry, reset := replyTimes(d, req.Cell)
		c.w.WriteArray(5)
		c.w.WriteInt64(first)
		c.w.WriteInt64(d.Limit)
		c.w.WriteInt64(d.Remaining)
		c.w.WriteInt64(retry)
		c.w.WriteInt64(reset)
	}
}

// spend decides req on key through the store, as every limiter command does: a spend
// refused where writes are (a replica, a failing log), a PEEK never. ok is false when
// an error was answered instead.
func (s *Server) spend(c *client, key []byte, req algo.Request, now int64) (d algo.Decision, ok bool) {
	if !req.Peek {
		if msg := s.writeRefusal(); msg != "" {
			c.writeError(msg)
			return d, false
		}
	}
	d, err := s.store.Do(key, req, now)
	if err != nil {
		c.writeError(ErrorReply(err))
		return d, false
	}
	return d, true
}

// replyTimes is a reply's retry_after and reset_after, d's µs in the wire's units:
// whole ms rounded up (algo.Millis), or in redis-cell's reply (cell: CL.THROTTLE and
// GCRA) whole seconds rounded up as Redis's gcra.c does, ceil of a float64 quotient,
// which for CL.THROTTLE's times (0 to 2^53 µs) is redis-cell's exact ceil. retry_after
// -1 stays -1. Every reply with a Decision's times converts them here (RL.ACQUIRE's
// retry_after is algo.Millis too).
func replyTimes(d algo.Decision, cell bool) (retry, reset int64) {
	if !cell {
		return algo.Millis(d.RetryAfter), algo.Millis(d.ResetAfter)
	}
	seconds := func(x int64) int64 { return int64(math.Ceil(float64(x) / 1e6)) }
	retry = -1
	if d.RetryAfter >= 0 {
		retry = seconds(d.RetryAfter)
	}
	return retry, seconds(d.ResetAfter)
}
