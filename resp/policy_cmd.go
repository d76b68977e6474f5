package resp

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/policy"
)

// The policy commands' own error replies.
var (
	errNoPolicy      = &reply.Error{Text: "ERR no policy in force: start rlserver with -limits"}
	errNoDescriptor  = &reply.Error{Text: reply.NoDescriptor}
	errEntryPairs    = &reply.Error{Text: reply.EntryPairs}
	errNoEntries     = &reply.Error{Text: reply.NoEntries}
	errPolicyLimit   = &reply.Error{Text: reply.PolicyLimit}
	errPolicyUnit    = &reply.Error{Text: reply.PolicyUnit}
	errHitsRequest   = &reply.Error{Text: reply.HitsBetween("1", strconv.FormatInt(policy.MaxHits, 10))}
	errHitsDesc      = &reply.Error{Text: reply.HitsBetween("0", strconv.FormatInt(policy.MaxHits, 10))}
	errTopCount      = &reply.Error{Text: "ERR count must be an integer between 1 and " + strconv.Itoa(maxTopCount)}
	errPolicyRefund  = &reply.Error{Text: reply.RefundUpTo(strconv.FormatInt(policy.MaxHits, 10))}
	errHitsAndRefund = &reply.Error{Text: reply.HitsAndRefund}
)

// Refusals of the RL.* commands the server counts for RL.TOP: the last minute, in
// buckets of 10 s, each a sketch of topCapacity keys.
const (
	topCapacity = 256
	topSpan     = 60_000_000 // µs
	topBuckets  = 6
	defaultTop  = 10
	maxTopCount = 1000
	maxTopKey   = 256 // bytes of a key RL.TOP keeps
)

// newRefused is the window of the keys RL.* commands refused.
func newRefused() *topk.Window { return topk.NewWindow(topCapacity, topSpan, topBuckets) }

// units are the units RL.POLICY's LIMIT takes, RLS's.
var units = map[string]policy.Unit{
	"second": policy.UnitSecond, "minute": policy.UnitMinute, "hour": policy.UnitHour,
	"day": policy.UnitDay, "week": policy.UnitWeek, "month": policy.UnitMonth, "year": policy.UnitYear,
}

// word reports whether arg is the keyword w, in any case.
func word(arg []byte, w string) bool { return bytes.EqualFold(arg, []byte(w)) }

// ParsePolicy reads RL.POLICY's arguments after the command name:
//
//	domain [HITS n] DESCRIPTOR [HITS n | REFUND n] [LIMIT requests_per_unit unit] key value [key value ...] [DESCRIPTOR ...]
//
// The request's HITS (1 to policy.MaxHits, default 1) is every descriptor's hits; a
// descriptor's own HITS (0 to policy.MaxHits: 0 checks without spending) or REFUND n
// (give back n, RLS's is_negative_hits) replaces it, and LIMIT overrides the rule's
// limit (RLS's descriptor limit). A descriptor's options come right after its
// DESCRIPTOR, before its entries, and its entries run to the next DESCRIPTOR at a pair
// boundary: an entry key spelled DESCRIPTOR there, or like an option first thing,
// is read as the keyword. Errors are whole Redis error replies; the engine checks the
// rest (empty domain or key, lengths, counts) before anything is spent.
func ParsePolicy(args [][]byte) (policy.Request, error) {
	return parsePolicy(args, "rl.policy", errNoDescriptor)
}

// parsePolicy is ParsePolicy for command (lower case, for the arity error), which
// answers noDescriptor to a request without a descriptor.
func parsePolicy(args [][]byte, command string, noDescriptor *reply.Error) (policy.Request, error) {
	if len(args) < 1 {
		return policy.Request{}, &reply.Error{Text: reply.Arity(command)}
	}
	req := policy.Request{Domain: string(args[0])}
	i := 1
	for ; i < len(args) && !word(args[i], "DESCRIPTOR"); i += 2 {
		if !word(args[i], "HITS") || i+1 == len(args) {
			return policy.Request{}, rlcmd.ErrSyntax
		}
		n, ok := rlcmd.ParseIntIn(args[i+1], 1, policy.MaxHits)
		if !ok {
			return policy.Request{}, errHitsRequest
		}
		req.Hits = uint64(n)
	}
	if i == len(args) {
		return policy.Request{}, noDescriptor
	}
	for i < len(args) { // args[i] is DESCRIPTOR
		i++
		var d policy.Descriptor
		for i+1 < len(args) {
			switch {
			case word(args[i], "HITS"), word(args[i], "REFUND"):
				if d.HitsSet {
					return policy.Request{}, errHitsAndRefund
				}
				refund := word(args[i], "REFUND")
				lo, bad := int64(0), error(errHitsDesc)
				if refund {
					lo, bad = 1, errPolicyRefund
				}
				n, ok := rlcmd.ParseIntIn(args[i+1], lo, policy.MaxHits)
				if !ok {
					return policy.Request{}, bad
				}
				d.Hits, d.HitsSet, d.Negative = uint64(n), true, refund
				i += 2
				continue
			case word(args[i], "LIMIT"):
				if i+2 >= len(args) {
					return policy.Request{}, rlcmd.ErrSyntax
				}
				n, ok := rlcmd.ParseIntIn(args[i+1], 1, 1<<32-1)
				if !ok {
					return policy.Request{}, errPolicyLimit
				}
				u, ok := units[strings.ToLower(string(args[i+2]))]
				if !ok {
					return policy.Request{}, errPolicyUnit
				}
				d.Limit = &policy.Override{RequestsPerUnit: uint32(n), Unit: u}
				i += 3
				continue
			}
			break
		}
		for i < len(args) && !word(args[i], "DESCRIPTOR") {
			if i+1 == len(args) {
				return policy.Request{}, errEntryPairs
			}
			d.Entries = append(d.Entries, policy.Entry{Key: string(args[i]), Value: string(args[i+1])})
			i += 2
		}
		if len(d.Entries) == 0 {
			return policy.Request{}, errNoEntries
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req, nil
}

// cmdPolicy serves RL.POLICY: the engine decides the request of a domain on the
// server's store, and the reply is the overall code, then each descriptor's code,
// limit, remaining, reset_after_ms, retry_after_ms, window_ms and rule name.
func cmdPolicy(s *Server, c *client, args [][]byte, now int64) {
	if s.policy == nil {
		c.writeError(errNoPolicy.Text)
		return
	}
	req, err := ParsePolicy(args[1:])
	if err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	resp, err := s.policy.Decide(req, now)
	if err != nil {
		if errors.Is(err, policy.ErrInvalidRequest) {
			reason := strings.TrimPrefix(err.Error(), policy.ErrInvalidRequest.Error()+": ")
			err = &reply.Error{Text: reply.InvalidRequest(reason)}
		}
		c.writeError(ErrorReply(err))
		return
	}
	c.decided(resp.Overall != policy.CodeOverLimit)
	c.w.WriteArray(1 + len(resp.Statuses))
	c.w.WriteInt64(int64(resp.Overall))
	for _, st := range resp.Statuses {
		c.w.WriteArray(7)
		c.w.WriteInt64(int64(st.Code))
		if st.Limit == nil {
			c.w.WriteInt64(0)
		} else {
			c.w.WriteInt64(int64(st.Limit.RequestsPerUnit))
		}
		c.w.WriteInt64(int64(st.Remaining))
		c.w.WriteInt64(durationMs(st.ResetAfter))
		c.w.WriteInt64(durationMs(st.RetryAfter))
		if st.Limit == nil {
			c.w.WriteInt64(0)
			c.writeNull()
		} else {
			c.w.WriteInt64(durationMs(st.Limit.Window))
			c.w.WriteBulkString(st.Limit.Name)
		}
	}
}

// durationMs is d in whole ms, rounded up as every duration rlserver answers.
func durationMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// cmdLimits serves RL.LIMITS: the policy in force, as text.
func cmdLimits(s *Server, c *client, _ [][]byte, _ int64) {
	if s.policy == nil {
		c.writeError(errNoPolicy.Text)
		return
	}
	p := s.policy.Policy()
	if p == nil {
		c.w.WriteBulkString("")
		return
	}
	text, err := p.MarshalText()
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	c.w.WriteBulk(text)
}

// refusal is one line of RL.TOP.
type refusal struct {
	typ, scope, name string
	count            uint64
}

// cmdTop serves RL.TOP [COUNT n]: the keys of the RL.* commands and the policy
// descriptors refused most over the last minute, most first.
func cmdTop(s *Server, c *client, args [][]byte, now int64) {
	n := defaultTop
	switch {
	case len(args) == 1:
	case len(args) != 3 || !word(args[1], "COUNT"):
		c.writeError(rlcmd.ErrSyntax.Text)
		return
	default:
		v, ok := rlcmd.ParseIntIn(args[2], 1, maxTopCount)
		if !ok {
			c.writeError(errTopCount.Text)
			return
		}
		n = int(v)
	}
	var list []refusal
	for _, it := range s.refused.Top(n, now) {
		scope, key, _ := strings.Cut(it.Key, "\x00")
		list = append(list, refusal{"key", scope, key, it.Count})
	}
	if s.policy != nil {
		for _, r := range s.policy.TopRefused(n, now) {
			list = append(list, refusal{"descriptor", r.Domain, r.Descriptor, r.Count})
		}
	}
	slices.SortFunc(list, func(a, b refusal) int {
		return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.typ, b.typ), cmp.Compare(a.scope, b.scope), cmp.Compare(a.name, b.name))
	})
	list = list[:min(n, len(list))]
	c.w.WriteArray(len(list))
	for _, r := range list {
		c.w.WriteArray(4)
		c.w.WriteBulkString(r.typ)
		c.w.WriteBulkString(r.scope)
		c.w.WriteBulkString(r.name)
		c.w.WriteUint64(r.count)
	}
}

// noteRefused counts a refused RL.* call on key for RL.TOP: only on refusals, so the
// admitted calls of the hot path pay nothing.
func (s *Server) noteRefused(req algo.Request, key []byte, now int64) {
	scope := req.Kind.Command()
	if req.Cell && req.Kind == algo.KindGCRA {
		scope = "gcra"
	}
	if len(key) > maxTopKey {
		key = key[:maxTopKey] // the sketch holds its keys: a 256 MB key must not be one
	}
	var buf [32 + maxTopKey]byte
	s.refused.Add(append(append(append(buf[:0], scope...), 0), key...), 1, now)
}
