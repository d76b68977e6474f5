package resp

import (
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy/engine"
)

// Upstream decides limiter calls from quota taken of another rlserver, the home of a
// region (-quota-upstream, package region), instead of the store. resp knows it only
// by this interface: the client it takes the quota through is not resp's concern.
type Upstream interface {
	// Decide's error is answered as ErrorReply answers it; only the calling
	// connection waits for the home.
	engine.Decider
	// Param is the value of one of its quota-upstream* parameters, for CONFIG GET.
	Param(name string) string
	// Info is INFO region's fields, each a name and its value.
	Info() [][2]string
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

// upstreamInfo is INFO region: Upstream's fields, none without one.
func (s *Server) upstreamInfo() [][2]string {
	if s.cfg.Upstream == nil {
		return nil
	}
	return s.cfg.Upstream.Info()
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
