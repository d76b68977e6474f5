package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// httpHandler routes envoyproxy/ratelimit's HTTP endpoints and /check.
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", s.serveJSON)
	mux.HandleFunc("/healthcheck", s.serveHealth)
	mux.HandleFunc("GET /rlconfig", s.serveConfig)
	mux.HandleFunc("/check", s.serveCheck)
	return mux
}

// serveJSON is envoyproxy/ratelimit's /json: a RateLimitRequest as protojson, the
// RateLimitResponse back; 429 when over the limit, 500 when UNKNOWN, and theirs
// "Bad Request" for a body that does not decode or a request refused. A replica
// answers 503, so a client can tell it from its own mistake.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestSize))
	if err != nil {
		s.badRequest(w, fmt.Errorf("%w: %v", ErrMalformed, err))
		return
	}
	var in pb.RateLimitRequest
	if err := protojson.Unmarshal(body, &in); err != nil {
		s.badRequest(w, fmt.Errorf("%w: %v", ErrMalformed, err))
		return
	}
	out, err := s.decide(&in)
	switch {
	case errors.Is(err, ErrNotPrimary):
		s.count("http", err, 0)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil:
		s.badRequest(w, err)
		return
	}
	s.count("http", nil, out.OverallCode)
	annotate(r.Context(), in.GetDomain(), len(in.GetDescriptors()), out.OverallCode.String())
	js, err := protojson.Marshal(out)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch out.OverallCode {
	case pb.RateLimitResponse_UNKNOWN:
		w.WriteHeader(http.StatusInternalServerError)
	case pb.RateLimitResponse_OVER_LIMIT:
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(js)
}

// badRequest answers 400 with envoyproxy/ratelimit's body, and logs why.
func (s *Server) badRequest(w http.ResponseWriter, err error) {
	s.count("http", err, 0)
	s.cfg.Logger.Debug("rls: /json refused", "err", err)
	http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
}

// serveHealth is envoyproxy/ratelimit's /healthcheck: "OK" on a primary, an empty
// 500 on a replica.
func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	if !s.cfg.Serving() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	io.WriteString(w, "OK")
}

// serveConfig is /rlconfig: the policy in force, as Policy.MarshalText writes it.
func (s *Server) serveConfig(w http.ResponseWriter, _ *http.Request) {
	p := s.cfg.Decider.Policy()
	if p == nil {
		return
	}
	text, err := p.MarshalText()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(text)
}
