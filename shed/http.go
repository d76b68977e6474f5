package shed

import (
	"net/http"
	"strconv"
	"time"
)

// DefaultHealthPaths returns the paths Handler never sheds when
// HandlerOptions.HealthPaths is nil, as package middleware's: "/healthz", "/readyz",
// "/livez" and "/health". A new slice each call.
func DefaultHealthPaths() []string { return []string{"/healthz", "/readyz", "/livez", "/health"} }

// HandlerOptions configures Handler. Every zero field takes its default.
type HandlerOptions struct {
	// Priority is a request's priority; nil means Shedder.Default() for every request.
	// It runs before the handler on every request, so keep it to reading what the
	// request carries (a header, the route).
	Priority func(*http.Request) Priority
	// HealthPaths are never shed, never queued and never counted, matched exactly
	// against the URL path; nil means DefaultHealthPaths(), an empty slice none.
	HealthPaths []string
	// Bypass, if not nil, says of other requests whether they are health checks, as
	// HealthPaths does.
	Bypass func(*http.Request) bool
}

// Handler serves next through s: a request admitted (at once or after queueing) runs
// next and gives its slot back when next returns or panics; a request shed gets,
// before next runs and with no call to anything else:
//
//	HTTP/1.1 503 Service Unavailable
//	Retry-After: 2                    seconds, Shedder.RetryAfter rounded up
//	Content-Type: application/json
//
//	{"error":"overloaded","retryAfterMs":1234}
//
// 503, not 429: the client did nothing wrong (429 says "you went over your limit");
// the service is over capacity. retryAfterMs is the same jittered time to the ms,
// which whole seconds cannot say. A request whose client went away while it queued
// gets the same answer, which nobody reads.
func (s *Shedder) Handler(next http.Handler, o HandlerOptions) http.Handler {
	paths := o.HealthPaths
	if paths == nil {
		paths = DefaultHealthPaths()
	}
	health := make(map[string]bool, len(paths))
	for _, p := range paths {
		health[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if health[r.URL.Path] || o.Bypass != nil && o.Bypass(r) {
			next.ServeHTTP(w, r)
			return
		}
		p := s.def
		if o.Priority != nil {
			p = o.Priority(r)
		}
		t, err := s.Acquire(r.Context(), p)
		if err != nil {
			WriteShed(w, s.RetryAfter())
			return
		}
		defer func() { t.Done(s.clock()) }()
		next.ServeHTTP(w, r)
	})
}

// WriteShed writes the 503 Handler answers a shed request with, retry being the time
// to come back (Shedder.RetryAfter).
func WriteShed(w http.ResponseWriter, retry time.Duration) {
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(ceilDiv(retry, time.Second), 10))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	body := append([]byte(`{"error":"overloaded","retryAfterMs":`), strconv.FormatInt(ceilDiv(retry, time.Millisecond), 10)...)
	w.Write(append(body, '}'))
}

// ceilDiv is d in units, rounded up, for d ≥ 0.
func ceilDiv(d, unit time.Duration) int64 {
	n := d / unit
	if d%unit > 0 {
		n++
	}
	return int64(n)
}
