package resp

import "github.com/rlserver/rlserver/algo"

// Upstream decides limiter calls from quota taken of another rlserver, the home of a
// region (-quota-upstream, package region), instead of the store. resp knows it only
// by this interface: the client it takes the quota through is not resp's concern.
type Upstream interface {
	// Decide decides req on key and answers taken true, or answers taken false to
	// leave the call to the store (a key or a kind it does not take). An error is
	// answered as ErrorReply answers it. It may wait for the home, within its own
	// budget: only the calling connection waits.
	Decide(key []byte, req algo.Request) (d algo.Decision, taken bool, err error)
	// Param is the value of one of its quota-upstream* parameters, for CONFIG GET.
	Param(name string) string
}

// decideLimit decides a limiter call: by Config.Upstream when it takes the call, else
// by the store (spend). ok is false when an error was answered instead.
func (s *Server) decideLimit(c *client, key []byte, req algo.Request, now int64) (algo.Decision, bool) {
	if s.cfg.Upstream == nil {
		return s.spend(c, key, req, now)
	}
	d, taken, err := s.cfg.Upstream.Decide(key, req)
	switch {
	case !taken:
		return s.spend(c, key, req, now)
	case err != nil:
		c.writeError(ErrorReply(err))
		return d, false
	}
	return d, true
}

// upstreamParam is CONFIG GET's getter of Upstream's parameter name: empty without
// an Upstream.
func upstreamParam(name string) func(*Server, *tunables) string {
	return func(s *Server, _ *tunables) string {
		if s.cfg.Upstream == nil {
			return ""
		}
		return s.cfg.Upstream.Param(name)
	}
}
