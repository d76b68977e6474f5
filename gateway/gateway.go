// Package gateway is rlserver's gateway front: Envoy's rate limit service (RLS v3)
// over gRPC, envoyproxy/ratelimit's HTTP endpoints (/json, /healthcheck, /rlconfig),
// the forward-auth endpoint /check of nginx, Caddy, Traefik and ext_authz, the gRPC
// health service following the server's role, and server reflection. It translates
// between the wire and package policy's Request and Response; the policy engine
// decides, the store keeps the state. It is named for the part it plays, the front
// that API gateways and proxies call, rather than for RLS, one of the protocols it
// serves.
package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// The front's bounds; the engine checks the rest (policy.MaxDescriptors, ...).
const (
	MaxRequestSize = 4 << 20 // bytes of a request body (/json) or message (gRPC), as grpc-go by default
	roleInterval   = 100 * time.Millisecond
	readTimeout    = 10 * time.Second
	shutdownWait   = 5 * time.Second
	healthService  = "envoy.service.ratelimit.v3.RateLimitService"
	theirHealthSvc = "ratelimit" // the name envoyproxy/ratelimit registers
)

// Errors of a request the front refuses before deciding; each is wrapped with the
// detail and answered INVALID_ARGUMENT (gRPC) or 400 (HTTP).
var (
	ErrMalformed  = errors.New("rls: malformed request")
	ErrNotPrimary = errors.New("rls: this server is a replica; ask the primary")
	errPanic      = errors.New("rls: internal error")
)

// Decider decides requests: *engine.Engine.
type Decider interface {
	Decide(req policy.Request, now int64) (policy.Response, error)
	Policy() *config.Policy
}

// Headers names the response headers added to a decision
// (envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED and LIMIT_*_HEADER); a zero
// Headers adds none.
type Headers struct {
	Limit, Remaining, Reset string
}

// DefaultHeaders are envoyproxy/ratelimit's default names (draft-ietf-httpapi-ratelimit-headers).
var DefaultHeaders = Headers{Limit: "RateLimit-Limit", Remaining: "RateLimit-Remaining", Reset: "RateLimit-Reset"}

// Config is what a front needs of the server it stands on.
type Config struct {
	Decider Decider
	// Now is the server's clock in µs since the epoch; nil: the wall clock.
	Now func() int64
	// Serving reports whether this server decides (a primary); a replica answers
	// NOT_SERVING and refuses ShouldRateLimit. nil: always serving.
	Serving func() bool
	// TLS, when set, is used by both listeners.
	TLS *tls.Config
	// Registerer receives the front's counters; nil: none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Headers adds RateLimit-* headers to each response; zero: none.
	Headers Headers
	// TrustedProxies are the proxies whose X-Forwarded-For and X-Real-IP /check
	// believes for remote_address; nil: loopback (httpdesc.Loopback).
	TrustedProxies []netip.Prefix
	// ShadowMode answers OK overall whatever the descriptors (envoyproxy/ratelimit's
	// SHADOW_MODE); statuses still say OVER_LIMIT.
	ShadowMode bool
	// TracerProvider, when set, traces ShouldRateLimit, /json and /check calls (health
	// checks aside): those whose caller's W3C trace context (gRPC metadata, HTTP
	// headers) is sampled, continuing it, and a TraceSampling share (0 to 1) of the
	// others, drawn before any of OpenTelemetry's work; nil: nothing traced, nothing
	// spent on it.
	TracerProvider trace.TracerProvider
	TraceSampling  float64
}

// Server is the gRPC and HTTP front. Serve its listeners with ServeGRPC and
// ServeHTTP; Close stops both.
type Server struct {
	cfg    Config
	grpc   *grpc.Server
	health *health.Server
	http   *http.Server
	calls  *prometheus.CounterVec
	// counters are calls' counters by front and outcome (count), each a
	// prometheus.Counter once counted.
	counters [len(frontLabels)][len(outcomeLabels)]atomic.Value
	// checkNames are /check's headers: Config.Headers', or DefaultHeaders, and X-RateLimit-*.
	checkNames httpdesc.Names
	// queries are /check's queries parsed (checkQuery), cachedQueries of them.
	queries       sync.Map
	cachedQueries atomic.Int64
	stop          chan struct{}
	once          sync.Once
	// serving is the role last written to the health service; known once written.
	// Only New, then watchRole's goroutine, touch them.
	serving, known bool
}

// New returns a front deciding with cfg.Decider.
func New(cfg Config) (*Server, error) {
	if cfg.Decider == nil {
		return nil, errors.New("rls: Config.Decider is nil")
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixMicro() }
	}
	if cfg.Serving == nil {
		cfg.Serving = func() bool { return true }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, stop: make(chan struct{})}
	names := cmp.Or(cfg.Headers, DefaultHeaders)
	s.checkNames = httpdesc.NewNames(names.Limit, names.Remaining, names.Reset)
	s.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rlserver_rls_requests_total",
		Help: "Decisions asked by front (grpc, http, check) and outcome (ok, over_limit, unknown, invalid, unavailable).",
	}, []string{"front", "outcome"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.calls); err != nil {
			return nil, fmt.Errorf("rls: register metrics: %w", err)
		}
	}
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxRequestSize), grpc.ForceServerCodecV2(newCodec())}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	if tp := cfg.TracerProvider; tp != nil {
		opts = append(opts, grpc.UnaryInterceptor(tracingUnary(tp, cfg.TraceSampling)))
	}
	s.grpc = grpc.NewServer(opts...)
	desc := pb.RateLimitService_ServiceDesc
	desc.Methods = []grpc.MethodDesc{{MethodName: "ShouldRateLimit", Handler: shouldRateLimitHandler}}
	s.grpc.RegisterService(&desc, (*grpcService)(s))
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.http = &http.Server{Handler: s.tracedHTTP(s.httpHandler()), ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout, TLSConfig: cfg.TLS}
	s.followRole()
	go s.watchRole()
	return s, nil
}

// ServeGRPC answers RLS v3, health and reflection on ln until Close.
func (s *Server) ServeGRPC(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// ServeHTTP answers /json, /healthcheck, /rlconfig and /check on ln until Close.
func (s *Server) ServeHTTP(ln net.Listener) error {
	var err error
	if s.cfg.TLS != nil {
		err = s.http.ServeTLS(ln, "", "")
	} else {
		err = s.http.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops both fronts, letting calls in flight finish for a few seconds.
func (s *Server) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.health.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
	}
	return s.http.Shutdown(ctx)
}

// watchRole polls the role, so that health follows a promotion or a REPLICAOF within
// roleInterval whoever made it.
func (s *Server) watchRole() {
	t := time.NewTicker(roleInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.followRole()
		}
	}
}

// followRole writes the role to the health service when it changed.
func (s *Server) followRole() {
	serving := s.cfg.Serving()
	if s.known && serving == s.serving {
		return
	}
	s.serving, s.known = serving, true
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range []string{"", healthService, theirHealthSvc} {
		s.health.SetServingStatus(name, st)
	}
}
