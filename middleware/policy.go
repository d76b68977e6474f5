package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/policy"
)

// Policy takes a Limiter's limits from the policy rlserver runs with (-limits,
// envoyproxy/ratelimit's format), naming each request's descriptors with the words
// of /check's query (package httpdesc), so that a Go service and its gateway run one
// policy file on one rlserver and share its counts:
//
//	middleware.Config{Client: c, TrustedProxies: []string{"10.0.0.0/8"}, Policy: &middleware.Policy{
//		Domain:      "edge",
//		Descriptors: []string{"remote_address", "request_headers:X-Api-Key:api_key"},
//	}}
type Policy struct {
	// Domain is the policy's domain.
	Domain string
	// Descriptors are the request's descriptors, each as one descriptor= of /check:
	// its actions comma-separated, among remote_address (Limiter.ClientIP),
	// request_headers:HEADER:KEY, generic_key:VALUE[:KEY], method, path and host, read
	// from the request itself (a client cannot choose them by sending a gateway's
	// forwarding headers). A descriptor whose header is missing is dropped, as Envoy
	// drops it.
	Descriptors []string
}

// policyRules is Config.Policy parsed once.
type policyRules struct {
	domain   string
	descs    []httpdesc.Descriptor
	resolved *resolutions // the descriptor sets' rules, with Config.Slicer; else nil
}

// newPolicyRules checks cfg's Policy and what must go with it, and parses it.
func newPolicyRules(cfg Config) (*policyRules, error) {
	p := cfg.Policy
	switch {
	case len(cfg.Dimensions) > 0 || cfg.Concurrency != nil || cfg.User != nil || cfg.Route != nil || cfg.Prefix != "":
		return nil, errors.New("middleware: Config.Policy takes the limits and their keys from rlserver's policy: " +
			"leave Dimensions, Concurrency, User, Route and Prefix unset")
	case p.Domain == "":
		return nil, errors.New("middleware: Config.Policy.Domain is empty")
	case len(p.Descriptors) == 0:
		return nil, errors.New("middleware: Config.Policy.Descriptors is empty: nothing to limit")
	case len(p.Descriptors) > policy.MaxDescriptors:
		return nil, fmt.Errorf("middleware: Config.Policy has %d descriptors, at most %d", len(p.Descriptors), policy.MaxDescriptors)
	case !cfg.Client.HasPolicy():
		return nil, errors.New("middleware: Config.Policy needs a Client on rlserver (client.New): Redis and the embedded limiter have no policies")
	case cfg.Fallback == FallbackLocal:
		return nil, errors.New("middleware: Config.Policy cannot fall back locally (a local fallback has no policy): use FallbackOpen or FallbackClosed")
	}
	rules := &policyRules{domain: p.Domain}
	if cfg.Slicer != nil {
		rules.resolved = &resolutions{m: map[string]resolution{}}
	}
	for i, spec := range p.Descriptors {
		d, err := httpdesc.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("middleware: Config.Policy.Descriptors[%d]: %w", i, err)
		}
		rules.descs = append(rules.descs, d)
	}
	return rules, nil
}

// servePolicy decides r by the policy and answers as /check does (httpdesc's
// headers, Retry-After), with the middleware's 429 body.
func (l *Limiter) servePolicy(w http.ResponseWriter, r *http.Request, next http.Handler) {
	p := l.policy
	opts := httpdesc.Options{Trusted: l.trusted}
	var entries []policy.Entry
	var ends []int // where each applying descriptor's entries end
	for _, d := range p.descs {
		start := len(entries)
		var ok bool
		if entries, ok = d.Build(entries, r, opts); !ok {
			entries = entries[:start]
			continue
		}
		ends = append(ends, len(entries))
	}
	if len(ends) == 0 { // every descriptor dropped, as Envoy: nothing to ask
		l.allowed.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	all := make([]client.Entry, len(entries))
	for i, e := range entries {
		all[i] = client.Entry(e)
	}
	descs := make([]client.Descriptor, len(ends))
	start := 0
	for i, end := range ends {
		descs[i] = client.Descriptor{Entries: all[start:end:end]}
		start = end
	}

	began := l.now()
	ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
	var res client.PolicyResult
	err := l.call(ctx, func(ctx context.Context) (err error) {
		if l.slicer != nil {
			res, err = l.policySliced(ctx, descs)
		} else {
			res, err = l.client.Policy(ctx, p.domain, descs...)
		}
		return err
	})
	cancel()
	if err == nil {
		l.answered(r, false)
	}
	h := w.Header()
	switch {
	case errors.Is(err, client.ErrBadLimit):
		// The request's own descriptors refused (a header value over 4 KB): passing it
		// on would let a client opt out of its limit.
		l.limited.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		l.fail(r, began, fmt.Errorf("policy domain %q: %w", p.domain, err))
		if l.fallback == FallbackClosed {
			refuseClosed(w)
			return
		}
		next.ServeHTTP(w, r)
		return
	}
	retry := httpdesc.DefaultNames.Answer(h, toStatuses(res), !res.Allowed)
	if !res.Allowed {
		l.limited.Add(1)
		writeDenied(w, "rate_limited", retry)
		return
	}
	l.allowed.Add(1)
	next.ServeHTTP(w, r)
}

// toStatuses is the client's answer as the engine's statuses, which httpdesc's
// headers read.
func toStatuses(res client.PolicyResult) []policy.Status {
	sts := make([]policy.Status, len(res.Statuses))
	limits := make([]policy.Limit, len(res.Statuses))
	for i, st := range res.Statuses {
		out := &sts[i]
		out.Code = policy.CodeOK
		if !st.Allowed {
			out.Code = policy.CodeOverLimit
		}
		if st.Limit > 0 { // 0: no rule matched, or the rule is unlimited
			limits[i].RequestsPerUnit = uint32(st.Limit)
			out.Limit = &limits[i]
		}
		out.Remaining, out.ResetAfter, out.RetryAfter = uint32(st.Remaining), st.ResetAfter, st.RetryAfter
	}
	return sts
}
