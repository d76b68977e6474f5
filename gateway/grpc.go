package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// grpcService is the Server seen as RLS v3's RateLimitServiceServer.
type grpcService Server

// ShouldRateLimit decides one request.
func (g *grpcService) ShouldRateLimit(ctx context.Context, in *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	s := (*Server)(g)
	out, err := s.decide(in)
	if err != nil {
		s.count("grpc", err, 0)
		return nil, grpcError(err)
	}
	s.count("grpc", nil, out.OverallCode)
	annotate(ctx, in.GetDomain(), len(in.GetDescriptors()), out.OverallCode.String())
	return out, nil
}

// decide is ShouldRateLimit without its wire: the same for gRPC and /json. A panic
// in the engine fails the call, logged, not the server: grpc-go and net/http would
// let it end the process or drop the connection, and every gateway with it.
func (s *Server) decide(in *pb.RateLimitRequest) (out *pb.RateLimitResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("rls: the engine panicked", "panic", p, "domain", in.GetDomain(), "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	if !s.cfg.Serving() {
		return nil, ErrNotPrimary
	}
	req, err := toRequest(in)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Decider.Decide(req, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return toResponse(resp, s.cfg.Headers, s.cfg.ShadowMode), nil
}

// grpcError gives an error its gRPC code: the caller's mistakes INVALID_ARGUMENT, a
// replica UNAVAILABLE (so Envoy's failure_mode_deny decides, and its next try may
// reach the primary), anything else INTERNAL.
func grpcError(err error) error {
	switch {
	case errors.Is(err, policy.ErrInvalidRequest), errors.Is(err, ErrMalformed):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrNotPrimary):
		return status.Error(codes.Unavailable, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

// The labels of the front's counters, in the order of Server.counters.
var (
	frontLabels   = [...]string{"grpc", "http", "check"}
	outcomeLabels = [...]string{"ok", "over_limit", "unknown", "invalid", "unavailable"}
)

// count adds a call to the front's counters.
func (s *Server) count(front string, err error, code pb.RateLimitResponse_Code) {
	o := 0
	switch {
	case errors.Is(err, policy.ErrInvalidRequest), errors.Is(err, ErrMalformed):
		o = 3
	case err != nil:
		o = 4
	case code == pb.RateLimitResponse_OVER_LIMIT:
		o = 1
	case code == pb.RateLimitResponse_UNKNOWN:
		o = 2
	}
	f := 0
	for f < len(frontLabels)-1 && frontLabels[f] != front {
		f++
	}
	// Looked up once, at its first call: a series appears when first counted, as
	// with WithLabelValues each time, without hashing the labels every call.
	slot := &s.counters[f][o]
	c, _ := slot.Load().(prometheus.Counter)
	if c == nil {
		c = s.calls.WithLabelValues(frontLabels[f], outcomeLabels[o])
		slot.Store(c)
	}
	c.Inc()
}

// shouldRateLimitHandler is the generated handler but for a body that does not
// decode (see undecoded).
func shouldRateLimitHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	u := new(undecoded)
	if err := dec(u); err != nil {
		return nil, err
	}
	if u.err != nil {
		(*Server)(srv.(*grpcService)).count("grpc", ErrMalformed, 0)
		return nil, status.Error(codes.InvalidArgument, ErrMalformed.Error()+": "+u.err.Error())
	}
	in := &u.req
	if interceptor == nil {
		return srv.(*grpcService).ShouldRateLimit(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: pb.RateLimitService_ShouldRateLimit_FullMethodName}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return srv.(*grpcService).ShouldRateLimit(ctx, req.(*pb.RateLimitRequest))
	})
}
