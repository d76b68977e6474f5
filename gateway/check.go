package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/policy"
)

// serveCheck is /check, the forward-auth endpoint of nginx's auth_request, Caddy's
// forward_auth, Traefik's ForwardAuth, ingress-nginx's auth-url and Envoy's ext_authz:
// it decides one request of domain= with one descriptor per descriptor= (package
// httpdesc's words) and answers 200 with an empty body, or status= (429 by default)
// with Retry-After; both with RateLimit-* and X-RateLimit-*. A request it refuses to
// decide is 400 with a one-line reason and spends nothing.
func (s *Server) serveCheck(w http.ResponseWriter, r *http.Request) {
	req, refusal, err := s.checkRequest(r)
	if err != nil {
		s.checkFailed(w, err)
		return
	}
	if len(req.Descriptors) == 0 { // every descriptor dropped, as Envoy: nothing to ask
		s.count("check", nil, pb.RateLimitResponse_OK)
		return
	}
	resp, err := s.decideCheck(req)
	if err != nil {
		s.checkFailed(w, err)
		return
	}
	s.count("check", nil, pb.RateLimitResponse_Code(resp.Overall))
	annotate(r.Context(), req.Domain, len(req.Descriptors), pb.RateLimitResponse_Code(resp.Overall).String())
	refused := resp.Overall == policy.CodeOverLimit && !s.cfg.ShadowMode
	s.checkNames.Answer(w.Header(), resp.Statuses, refused)
	switch {
	case refused:
		w.WriteHeader(refusal)
	case resp.Overall == policy.CodeUnknown:
		http.Error(w, "rlserver: the engine decided nothing", http.StatusInternalServerError)
	}
}

// checkRequest reads /check's query, and the request it describes.
func (s *Server) checkRequest(r *http.Request) (policy.Request, int, error) {
	raw, uri := splitURI(r.URL.RawQuery)
	q, err := s.checkQuery(raw)
	if err != nil {
		return policy.Request{Hits: 1}, 0, err
	}
	req := policy.Request{Domain: q.domain, Hits: q.hits, Descriptors: make([]policy.Descriptor, 0, len(q.descs))}
	opts := httpdesc.Options{Trusted: s.cfg.TrustedProxies, Subrequest: true, URI: uri}
	if opts.Trusted == nil {
		opts.Trusted = httpdesc.Loopback
	}
	entries := make([]policy.Entry, 0, q.entries)
	for _, d := range q.descs {
		start := len(entries)
		var ok bool
		if entries, ok = d.Build(entries, r, opts); !ok {
			entries = entries[:start]
			continue
		}
		// hits=0 checks without spending: RLS's hits_addend set to 0.
		req.Descriptors = append(req.Descriptors, policy.Descriptor{Entries: entries[start:len(entries):len(entries)], Hits: q.hits, HitsSet: q.hitsSet})
	}
	return req, q.refusal, nil
}

// checkQuery is a /check query parsed: what of the request does not depend on the
// request it describes.
type checkQuery struct {
	domain  string
	descs   []httpdesc.Descriptor
	entries int // the descriptors' actions, all told
	hits    uint64
	hitsSet bool
	refusal int
}

// The bounds of the queries kept parsed, about 1 MB all told: a gateway sends a few
// short ones, its configuration; a client making up new or long ones parses its own.
const (
	maxCachedQueries  = 1024
	maxCachedQueryLen = 512
)

// checkQuery is the raw query parsed, from the cache when it was seen before: a
// gateway sends the same few queries again and again.
func (s *Server) checkQuery(raw string) (*checkQuery, error) {
	if q, ok := s.queries.Load(raw); ok {
		return q.(*checkQuery), nil
	}
	q, err := parseCheckQuery(raw)
	if err != nil {
		return nil, err
	}
	if len(raw) <= maxCachedQueryLen && s.cachedQueries.Load() < maxCachedQueries {
		// A copy: raw shares the whole request line's memory.
		if _, loaded := s.queries.LoadOrStore(strings.Clone(raw), q); !loaded {
			s.cachedQueries.Add(1)
		}
	}
	return q, nil
}

// parseCheckQuery parses /check's query, uri= cut off.
func parseCheckQuery(raw string) (*checkQuery, error) {
	q := &checkQuery{hits: 1, refusal: http.StatusTooManyRequests}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("query: %v", err)
	}
	specs := vals["descriptor"]
	if len(specs) > policy.MaxDescriptors {
		return nil, invalid("%d descriptors, more than %d", len(specs), policy.MaxDescriptors)
	}
	for name, vs := range vals {
		if len(vs) != 1 && name != "descriptor" {
			return nil, invalid("%s= given %d times", shorten(name), len(vs))
		}
		switch v := vs[0]; name {
		case "descriptor":
		case "domain":
			q.domain = v
		case "hits":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > policy.MaxHits {
				return nil, invalid("hits=%q: want a whole number up to %d", shorten(v), uint64(policy.MaxHits))
			}
			q.hits, q.hitsSet = n, true
		case "status":
			switch v {
			case "429", "403", "401":
				q.refusal, _ = strconv.Atoi(v)
			default:
				return nil, invalid("status=%q: want 429, 403 or 401", shorten(v))
			}
		default:
			return nil, invalid("unknown parameter %q (domain, descriptor, hits, status)", shorten(name))
		}
	}
	if q.domain == "" {
		return nil, invalid("domain= is missing")
	}
	if len(specs) == 0 {
		return nil, invalid("no descriptor=")
	}
	for i, spec := range specs {
		d, err := httpdesc.Parse(spec)
		if err != nil {
			return nil, invalid("descriptor %d: %v", i, err)
		}
		q.descs = append(q.descs, d)
		q.entries += d.Len()
	}
	return q, nil
}

// splitURI cuts a last uri= off the query: the rest of it, raw, is the original
// request's URI, which Envoy's ext_authz appends to its path_prefix
// ("/check?domain=edge&descriptor=path&uri=" + "/a/b?x=1&y=2").
func splitURI(raw string) (query, uri string) {
	if rest, ok := strings.CutPrefix(raw, "uri="); ok {
		return "", rest
	}
	if i := strings.Index(raw, "&uri="); i >= 0 {
		return raw[:i], raw[i+len("&uri="):]
	}
	return raw, ""
}

// shorten keeps a reason one short line whatever the input's size.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// decideCheck decides req as a primary; an engine panic is an error, not a crash.
func (s *Server) decideCheck(req policy.Request) (resp policy.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("rls: the engine panicked", "panic", p, "domain", req.Domain, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	if !s.cfg.Serving() {
		return resp, ErrNotPrimary
	}
	return s.cfg.Decider.Decide(req, s.cfg.Now())
}

// checkFailed answers an error: the caller's 400, a replica's 503, else 500; each
// with its reason on one line.
func (s *Server) checkFailed(w http.ResponseWriter, err error) {
	s.count("check", err, 0)
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, policy.ErrInvalidRequest):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotPrimary):
		code = http.StatusServiceUnavailable
	default:
		s.cfg.Logger.Error("rls: /check failed", "err", err)
	}
	http.Error(w, err.Error(), code)
}
