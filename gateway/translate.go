package gateway

import (
	"fmt"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/policy"
	"google.golang.org/protobuf/types/known/durationpb"
)

// invalid wraps policy.ErrInvalidRequest with the reason, so that the fronts answer
// every refused request the same way whether the front or the engine refused it.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", policy.ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// toRequest translates an RLS request for the engine, which checks it; the counts
// are bounded here first, before anything is allocated for them. Hits follow
// envoyproxy/ratelimit: a descriptor's own hits_addend wins, 0 included (a check that
// spends nothing), else the request's, where 0 means 1.
func toRequest(in *pb.RateLimitRequest) (policy.Request, error) {
	if len(in.GetDescriptors()) > policy.MaxDescriptors {
		return policy.Request{}, invalid("%d descriptors, more than %d", len(in.Descriptors), policy.MaxDescriptors)
	}
	req := policy.Request{
		Domain:      in.Domain,
		Descriptors: make([]policy.Descriptor, len(in.Descriptors)),
		Hits:        uint64(max(1, in.HitsAddend)),
	}
	// One backing array for every descriptor's entries: one allocation a request.
	n := 0
	for i, d := range in.Descriptors {
		if len(d.GetEntries()) > policy.MaxEntries {
			return policy.Request{}, invalid("descriptor %d has %d entries, more than %d", i, len(d.Entries), policy.MaxEntries)
		}
		n += len(d.GetEntries())
	}
	entries := make([]policy.Entry, 0, n)
	for i, d := range in.Descriptors {
		start := len(entries)
		for _, e := range d.GetEntries() {
			entries = append(entries, policy.Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		out := &req.Descriptors[i]
		out.Entries = entries[start:len(entries):len(entries)]
		if h := d.GetHitsAddend(); h != nil {
			out.Hits, out.HitsSet = h.Value, true
		}
		out.Negative = d.GetIsNegativeHits()
		if l := d.GetLimit(); l != nil {
			out.Limit = &policy.Override{RequestsPerUnit: l.RequestsPerUnit, Unit: policy.Unit(l.Unit)}
		}
	}
	return req, nil
}

// toResponse translates the engine's answer. As envoyproxy/ratelimit, a status
// without a rule (unmatched, replaced, unlimited) carries no current_limit and no
// duration_until_reset.
func toResponse(r policy.Response, h Headers, shadow bool) *pb.RateLimitResponse {
	out := &pb.RateLimitResponse{
		OverallCode: pb.RateLimitResponse_Code(r.Overall),
		Statuses:    make([]*pb.RateLimitResponse_DescriptorStatus, len(r.Statuses)),
	}
	// Allocated together: a response is one allocation of statuses, not three a status.
	statuses := make([]pb.RateLimitResponse_DescriptorStatus, len(r.Statuses))
	limits := make([]pb.RateLimitResponse_RateLimit, len(r.Statuses))
	for i, st := range r.Statuses {
		s := &statuses[i]
		s.Code = pb.RateLimitResponse_Code(st.Code)
		s.LimitRemaining = st.Remaining
		if st.Limit != nil {
			l := &limits[i]
			l.Name, l.RequestsPerUnit, l.Unit = st.Limit.Name, st.Limit.RequestsPerUnit, pb.RateLimitResponse_RateLimit_Unit(st.Limit.Unit)
			s.CurrentLimit = l
		}
		if st.Limit != nil && st.ResetAfter > 0 { // theirs has none in quota mode
			s.DurationUntilReset = durationpb.New(st.ResetAfter)
		}
		out.Statuses[i] = s
	}
	if h != (Headers{}) {
		out.ResponseHeadersToAdd = headers(r, h)
	}
	if shadow && out.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
		out.OverallCode = pb.RateLimitResponse_OK
	}
	return out
}

// headers are envoyproxy/ratelimit's: of the descriptor with a rule nearest its limit,
// or the last one refused, the limit, the remaining and the seconds until reset;
// none when no descriptor has a rule.
func headers(r policy.Response, h Headers) []*corev3.HeaderValue {
	pick := httpdesc.Shown(r.Statuses)
	if pick < 0 {
		return nil
	}
	st := r.Statuses[pick]
	reset := int64((st.ResetAfter + time.Second - 1) / time.Second)
	return []*corev3.HeaderValue{
		{Key: h.Limit, Value: strconv.FormatUint(uint64(st.Limit.RequestsPerUnit), 10)},
		{Key: h.Remaining, Value: strconv.FormatUint(uint64(st.Remaining), 10)},
		{Key: h.Reset, Value: strconv.FormatInt(reset, 10)},
	}
}
