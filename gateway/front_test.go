package gateway

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fakeDecider records what the front asks and answers what the test set: it checks
// the translation on both sides of the engine, not the engine.
type fakeDecider struct {
	mu   sync.Mutex
	reqs []policy.Request
	resp policy.Response
	err  error
}

func (f *fakeDecider) Decide(req policy.Request, now int64) (policy.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.resp, f.err
}

func (f *fakeDecider) Policy() *config.Policy { return nil }

func (f *fakeDecider) calls() []policy.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]policy.Request(nil), f.reqs...)
}

// front is a Server listening on loopback for a test.
type front struct {
	srv      *Server
	grpcAddr string
	httpAddr string
	conn     *grpc.ClientConn
	client   pb.RateLimitServiceClient
}

// startFront serves cfg's front on two loopback ports until the test ends, and dials
// its gRPC side with the generated client.
func startFront(t testing.TB, cfg Config) *front {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { errs <- srv.ServeGRPC(gl) }()
	go func() { errs <- srv.ServeHTTP(hl) }()
	f := &front{srv: srv, grpcAddr: gl.Addr().String(), httpAddr: hl.Addr().String()}
	if cfg.TLS == nil {
		f.conn, err = grpc.NewClient(f.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		f.client = pb.NewRateLimitServiceClient(f.conn)
	}
	t.Cleanup(func() {
		if f.conn != nil {
			f.conn.Close()
		}
		srv.Close()
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	})
	return f
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// TestTranslateRequest: hits_addend of the request and of each descriptor (an
// explicit 0 included), the override, negative hits and the entries reach the engine
// in request order.
func TestTranslateRequest(t *testing.T) {
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, 3)}}
	f := startFront(t, Config{Decider: fd})
	d0 := desc("remote_address", "10.0.0.1")
	d1 := desc("user", "alice", "path", "/a")
	d1.HitsAddend = wrapperspb.UInt64(7)
	d1.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 42, Unit: typev3.RateLimitUnit_HOUR}
	d2 := desc("tokens", "")
	d2.HitsAddend = wrapperspb.UInt64(300)
	d2.IsNegativeHits = true
	_, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", HitsAddend: 3, Descriptors: []*rlv3.RateLimitDescriptor{d0, d1, d2}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{d0}})
	if err != nil {
		t.Fatal(err)
	}
	got := fd.calls()
	if len(got) != 2 {
		t.Fatalf("%d calls, want 2", len(got))
	}
	r := got[0]
	if r.Domain != "d" || r.Hits != 3 || len(r.Descriptors) != 3 {
		t.Fatalf("request %+v", r)
	}
	if e := r.Descriptors[0].Entries; len(e) != 1 || e[0] != (policy.Entry{Key: "remote_address", Value: "10.0.0.1"}) || r.Descriptors[0].Hits != 0 || r.Descriptors[0].Limit != nil {
		t.Errorf("descriptor 0: %+v", r.Descriptors[0])
	}
	d := r.Descriptors[1]
	if len(d.Entries) != 2 || d.Entries[1] != (policy.Entry{Key: "path", Value: "/a"}) || d.Hits != 7 || d.Negative ||
		d.Limit == nil || *d.Limit != (policy.Override{RequestsPerUnit: 42, Unit: policy.UnitHour}) {
		t.Errorf("descriptor 1: %+v", d)
	}
	if d := r.Descriptors[2]; d.Hits != 300 || !d.Negative || d.Entries[0] != (policy.Entry{Key: "tokens"}) {
		t.Errorf("descriptor 2: %+v", d)
	}
	if got[1].Hits != 1 {
		t.Errorf("no hits_addend: Hits %d, want 1 (envoyproxy/ratelimit's default)", got[1].Hits)
	}
}

// TestTranslateResponse: statuses in order with code, current_limit, remaining and
// reset; a status with no rule carries neither current_limit nor reset, as theirs.
func TestTranslateResponse(t *testing.T) {
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOverLimit, Statuses: []policy.Status{
		{Code: policy.CodeOK, Limit: &policy.Limit{Name: "per-ip", RequestsPerUnit: 10, Unit: policy.UnitMinute}, Remaining: 9, ResetAfter: 1500 * time.Millisecond},
		{Code: policy.CodeOverLimit, Limit: &policy.Limit{RequestsPerUnit: 5, Unit: policy.UnitSecond}, ResetAfter: 300 * time.Millisecond, RetryAfter: 300 * time.Millisecond},
		{Code: policy.CodeOK, Remaining: math.MaxUint32},
		{Code: policy.CodeOK},
	}}}
	f := startFront(t, Config{Decider: fd})
	resp, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d",
		Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "1"), desc("b", "2"), desc("c", "3"), desc("e", "4")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT || len(resp.Statuses) != 4 {
		t.Fatalf("response %v", resp)
	}
	s := resp.Statuses
	if s[0].Code != pb.RateLimitResponse_OK || s[0].CurrentLimit.GetName() != "per-ip" || s[0].CurrentLimit.GetRequestsPerUnit() != 10 ||
		s[0].CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_MINUTE || s[0].LimitRemaining != 9 ||
		s[0].DurationUntilReset.AsDuration() != 1500*time.Millisecond {
		t.Errorf("status 0: %v", s[0])
	}
	if s[1].Code != pb.RateLimitResponse_OVER_LIMIT || s[1].CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_SECOND || s[1].LimitRemaining != 0 {
		t.Errorf("status 1: %v", s[1])
	}
	if s[2].CurrentLimit != nil || s[2].DurationUntilReset != nil || s[2].LimitRemaining != math.MaxUint32 {
		t.Errorf("status 2 (unlimited): %v", s[2])
	}
	if s[3].CurrentLimit != nil || s[3].DurationUntilReset != nil || s[3].LimitRemaining != 0 {
		t.Errorf("status 3 (unmatched): %v", s[3])
	}
	if resp.ResponseHeadersToAdd != nil {
		t.Errorf("headers %v without Config.Headers", resp.ResponseHeadersToAdd)
	}
}

// TestHeaders: envoyproxy/ratelimit's pick, the descriptor with a rule nearest its
// limit or the last refused, with the configured names (their LIMIT_*_HEADER).
func TestHeaders(t *testing.T) {
	minute := &policy.Limit{RequestsPerUnit: 100, Unit: policy.UnitMinute}
	hour := &policy.Limit{RequestsPerUnit: 7, Unit: policy.UnitHour}
	for _, tc := range []struct {
		name     string
		statuses []policy.Status
		want     []string // limit, remaining, reset; nil: no headers
	}{
		{"nearest", []policy.Status{{Code: policy.CodeOK, Limit: minute, Remaining: 50, ResetAfter: 20 * time.Second},
			{Code: policy.CodeOK, Limit: hour, Remaining: 3, ResetAfter: 1800*time.Second + time.Millisecond}, {Code: policy.CodeOK, Remaining: math.MaxUint32}},
			[]string{"7", "3", "1801"}},
		{"refused", []policy.Status{{Code: policy.CodeOverLimit, Limit: minute, ResetAfter: 20 * time.Second},
			{Code: policy.CodeOK, Limit: hour, Remaining: 0, ResetAfter: time.Hour}},
			[]string{"100", "0", "20"}},
		{"no rule", []policy.Status{{Code: policy.CodeOK, Remaining: math.MaxUint32}, {Code: policy.CodeOK}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: tc.statuses}}
			h := Headers{Limit: "X-RateLimit-Limit", Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}
			f := startFront(t, Config{Decider: fd, Headers: h})
			var ds []*rlv3.RateLimitDescriptor
			for range tc.statuses {
				ds = append(ds, desc("k", "v"))
			}
			resp, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: ds})
			if err != nil {
				t.Fatal(err)
			}
			hs := resp.ResponseHeadersToAdd
			if tc.want == nil {
				if hs != nil {
					t.Errorf("headers %v, want none", hs)
				}
				return
			}
			if len(hs) != 3 || hs[0].Key != h.Limit || hs[1].Key != h.Remaining || hs[2].Key != h.Reset {
				t.Fatalf("headers %v", hs)
			}
			if got := []string{hs[0].Value, hs[1].Value, hs[2].Value}; strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("header values %v, want %v", got, tc.want)
			}
		})
	}
}

// TestShadowMode: SHADOW_MODE answers OK overall, the statuses unchanged.
func TestShadowMode(t *testing.T) {
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOverLimit, Statuses: []policy.Status{
		{Code: policy.CodeOverLimit, Limit: &policy.Limit{RequestsPerUnit: 1, Unit: policy.UnitSecond}}}}}
	f := startFront(t, Config{Decider: fd, ShadowMode: true})
	resp, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OverallCode != pb.RateLimitResponse_OK || resp.Statuses[0].Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Errorf("shadow mode: %v", resp)
	}
}

// TestEngineErrors: the engine's refusal is INVALID_ARGUMENT with its reason; its
// failure INTERNAL.
func TestEngineErrors(t *testing.T) {
	fd := &fakeDecider{err: errors.Join(policy.ErrInvalidRequest, errors.New("value too long"))}
	f := startFront(t, Config{Decider: fd})
	_, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "value too long") {
		t.Errorf("engine refusal: %v", err)
	}
	fd.mu.Lock()
	fd.err = errors.New("store: shard full")
	fd.mu.Unlock()
	_, err = f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "shard full") {
		t.Errorf("engine failure: %v", err)
	}
}

// TestHealthFollowsRole: SERVING on a primary, NOT_SERVING once a replica, and back,
// under every name Envoy or envoyproxy/ratelimit's manifests check; a replica refuses
// ShouldRateLimit with UNAVAILABLE and spends nothing.
func TestHealthFollowsRole(t *testing.T) {
	var primary atomic.Bool
	primary.Store(true)
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, 1)}}
	f := startFront(t, Config{Decider: fd, Serving: primary.Load})
	hc := healthpb.NewHealthClient(f.conn)
	ctx := ctxT(t)
	for _, name := range []string{"", healthService, theirHealthSvc} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) on a primary: %v %v", name, r, err)
		}
	}
	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: healthService})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := watch.Recv()
		if err != nil || r.Status != want {
			t.Fatalf("Watch: %v %v, want %v", r, err, want)
		}
	}
	next(healthpb.HealthCheckResponse_SERVING)
	primary.Store(false)
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Check on a replica: %v %v", r, err)
	}
	_, err = f.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if status.Code(err) != codes.Unavailable || len(fd.calls()) != 0 {
		t.Errorf("ShouldRateLimit on a replica: %v, %d decided", err, len(fd.calls()))
	}
	if code, body := httpGet(t, "http://"+f.httpAddr+"/healthcheck"); code != 500 || body != "" {
		t.Errorf("/healthcheck on a replica: %d %q, want 500 and no body", code, body)
	}
	primary.Store(true)
	next(healthpb.HealthCheckResponse_SERVING)
	if code, body := httpGet(t, "http://"+f.httpAddr+"/healthcheck"); code != 200 || body != "OK" {
		t.Errorf("/healthcheck on a primary: %d %q", code, body)
	}
}

// TestNegativeHits: is_negative_hits gives back what was spent, never above the
// limit, on the real engine (envoyproxy/ratelimit ignores the field).
func TestNegativeHits(t *testing.T) {
	e, _ := newEngine(t, "domain: llm\ndescriptors:\n  - key: tokens\n    rate_limit: {unit: minute, requests_per_unit: 10}\n")
	f := startFront(t, Config{Decider: e})
	ask := func(hits uint64, negative bool) *pb.RateLimitResponse_DescriptorStatus {
		t.Helper()
		d := hitsOf(desc("tokens", "team-a"), hits)
		d.IsNegativeHits = negative
		resp, err := f.client.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "llm", Descriptors: []*rlv3.RateLimitDescriptor{d}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Statuses[0]
	}
	if s := ask(8, false); s.Code != pb.RateLimitResponse_OK || s.LimitRemaining != 2 {
		t.Fatalf("spend 8 of 10: %v", s)
	}
	if s := ask(5, true); s.Code != pb.RateLimitResponse_OK || s.LimitRemaining != 7 {
		t.Errorf("give back 5: %v, want 7 remaining", s)
	}
	if s := ask(100, true); s.LimitRemaining != 10 {
		t.Errorf("give back 100: %v, want 10 remaining (never above the limit)", s)
	}
	if s := ask(10, false); s.Code != pb.RateLimitResponse_OK || s.LimitRemaining != 0 {
		t.Errorf("spend 10 after the refunds: %v", s)
	}
}
