package resp

import (
	"errors"
	"strings"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/policy"
)

// RL.RESOLVE's own error replies.
var (
	errResolveNoDescriptor = &reply.Error{Text: reply.ResolveNoDescriptor}
	errResolveHits         = &reply.Error{Text: reply.ResolveHits}
)

// ParseResolve reads RL.RESOLVE's arguments after the command name: RL.POLICY's
// (ParsePolicy) without HITS or REFUND,
//
//	domain DESCRIPTOR [LIMIT requests_per_unit unit] key value [key value ...] [DESCRIPTOR ...]
func ParseResolve(args [][]byte) (policy.Request, error) {
	req, err := parsePolicy(args, "rl.resolve", errResolveNoDescriptor)
	if err != nil {
		return policy.Request{}, err
	}
	if req.Hits != 0 {
		return policy.Request{}, errResolveHits
	}
	for _, d := range req.Descriptors {
		if d.HitsSet {
			return policy.Request{}, errResolveHits
		}
	}
	return req, nil
}

// cmdResolve serves RL.RESOLVE: the rules and state keys RL.POLICY would charge for
// the request, spending nothing. The reply is the domain's mode, then per descriptor
// [mode, key, algorithm, limit, window_us, option, reserve, requests_per_unit, name].
func cmdResolve(s *Server, c *client, args [][]byte, _ int64) {
	if s.policy == nil {
		c.writeError(errNoPolicy.Text)
		return
	}
	req, err := ParseResolve(args[1:])
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	res, err := s.policy.Resolve(req)
	if err != nil {
		if errors.Is(err, policy.ErrInvalidRequest) {
			reason := strings.TrimPrefix(err.Error(), policy.ErrInvalidRequest.Error()+": ")
			err = &reply.Error{Text: reply.InvalidRequest(reason)}
		}
		c.writeError(ErrorReply(err))
		return
	}
	c.w.WriteArray(1 + len(res.Rules))
	switch {
	case !res.Known:
		c.w.WriteBulkString("unknown")
	case res.AllOrNothing:
		c.w.WriteBulkString("all_or_nothing")
	default:
		c.w.WriteBulkString("each")
	}
	for _, r := range res.Rules {
		c.w.WriteArray(9)
		c.w.WriteBulkString(r.Mode.String())
		if r.Rule == nil {
			c.writeNull()
			c.writeNull()
			for range 5 {
				c.w.WriteInt64(0)
			}
			c.writeNull()
			continue
		}
		q := r.Request
		c.w.WriteBulk(r.Key)
		c.w.WriteBulkString(q.Kind.String()[3:])
		c.w.WriteInt64(q.Limit)
		c.w.WriteInt64(q.Window)
		c.w.WriteInt64(resolvedOption(q))
		c.w.WriteInt64(q.Reserve)
		c.w.WriteInt64(int64(r.Rule.Requests))
		c.w.WriteBulkString(r.Rule.Name)
	}
}

// resolvedOption is the number RL.TOKEN takes as RATE, RL.GCRA as BURST and RL.LEAKY
// as QUEUE; 0 for the windows.
func resolvedOption(q algo.Request) int64 {
	switch q.Kind {
	case algo.KindToken:
		return q.Rate
	case algo.KindGCRA:
		return q.Burst
	case algo.KindLeaky:
		return q.Queue
	}
	return 0
}
