package grpclimit

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/shed"
)

// testService answers UnaryCall and StreamingOutputCall once hold is closed (or at
// once if it is nil), counting the calls its handlers ran.
type testService struct {
	testpb.UnimplementedTestServiceServer
	hold chan struct{}
	ran  chan string
}

func (s *testService) wait(method string) {
	s.ran <- method
	if s.hold != nil {
		<-s.hold
	}
}

func (s *testService) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.wait("unary")
	return &testpb.SimpleResponse{}, nil
}

func (s *testService) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, ss testpb.TestService_StreamingOutputCallServer) error {
	s.wait("stream")
	return ss.Send(&testpb.StreamingOutputCallResponse{})
}

// serve starts a gRPC server on loopback with the interceptors, the test service
// and the health service, and returns a client connection to it.
func serve(t *testing.T, svc *testService, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, svc)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// refusal checks that err has code want and that the trailer says to come back
// within (0, most] ms.
func refusal(t *testing.T, what string, err error, tr metadata.MD, want codes.Code, most int) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
	v := tr.Get(PushbackKey)
	ms, perr := strconv.Atoi(first(v))
	if perr != nil || ms <= 0 || ms > most {
		t.Errorf("%s: trailer %s = %q, want 1 to %d ms", what, PushbackKey, v, most)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// userKey keys calls by their "user" metadata.
func userKey(ctx context.Context, method string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return first(md.Get("user"))
}

// most is the longest pushback newRateLimiter's refusal tells, in ms: its minute and
// the spread's most.
const most = int((time.Minute + spread.MaxJitter) / time.Millisecond)

// newRateLimiter limits by user to 2 calls a minute, on an embedded client whose
// clock stands still: a refusal's wait is always the same 60 s, but for its spread.
func newRateLimiter(t *testing.T) *RateLimiter {
	t.Helper()
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: func() time.Time { return time.Unix(1_750_000_020, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRateLimiter(RateLimit{Client: c, Limit: client.Fixed(2, time.Minute), Key: userKey})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRateLimitUnaryAndStream: past 2 calls a minute, unary calls and streams are
// refused before their handlers, told the window's end spread by up to a second.
func TestRateLimitUnaryAndStream(t *testing.T) {
	r := newRateLimiter(t)
	svc := &testService{ran: make(chan string, 100)}
	conn := serve(t, svc, grpc.ChainUnaryInterceptor(r.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(r.StreamServerInterceptor()))
	tc := testpb.NewTestServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "user", "alice")
	for i := range 2 {
		if _, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
			t.Fatalf("call %d within the limit: %v", i, err)
		}
	}
	var tr metadata.MD
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Trailer(&tr))
	refusal(t, "third unary call", err, tr, codes.ResourceExhausted, most)
	// Callers refused together are told waits spread over the jitter, not one.
	told := map[string]bool{}
	for range 50 {
		_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Trailer(&tr))
		refusal(t, "a refused call", err, tr, codes.ResourceExhausted, most)
		told[first(tr.Get(PushbackKey))] = true
	}
	if len(told) < 25 {
		t.Errorf("50 refused calls were told %d different pushbacks, want them spread", len(told))
	}

	st, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	refusal(t, "stream over the limit", err, st.Trailer(), codes.ResourceExhausted, most)

	bob := metadata.AppendToOutgoingContext(context.Background(), "user", "bob")
	if _, err := tc.UnaryCall(bob, &testpb.SimpleRequest{}); err != nil {
		t.Fatalf("another user: %v", err)
	}
	if len(svc.ran) != 3 {
		t.Errorf("handlers ran %d times, want 3: a refused call must not reach its handler", len(svc.ran))
	}
}

// TestGoGRPCMiddleware runs RateLimiter as the Limiter of go-grpc-middleware v2's
// own interceptors.
func TestGoGRPCMiddleware(t *testing.T) {
	r := newRateLimiter(t)
	svc := &testService{ran: make(chan string, 100)}
	conn := serve(t, svc, grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(r)))
	tc := testpb.NewTestServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "user", "carol")
	tc.UnaryCall(ctx, &testpb.SimpleRequest{})
	tc.UnaryCall(ctx, &testpb.SimpleRequest{})
	var tr metadata.MD
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Trailer(&tr))
	refusal(t, "through go-grpc-middleware", err, tr, codes.ResourceExhausted, most)
}

func TestNewRateLimiterBadConfig(t *testing.T) {
	c, _ := client.NewEmbedded()
	for name, cfg := range map[string]RateLimit{
		"no client":  {Limit: client.Fixed(1, time.Second), Key: userKey},
		"no key":     {Client: c, Limit: client.Fixed(1, time.Second)},
		"bad limit":  {Client: c, Key: userKey},
		"bad budget": {Client: c, Limit: client.Fixed(1, time.Second), Key: userKey, Timeout: -1},
	} {
		if _, err := NewRateLimiter(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
}

func TestShedUnaryAndStream(t *testing.T) {
	s, err := shed.New(shed.Config{MaxLimit: 1, InitialLimit: 1, MinLimit: 1, QueueTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o := Shed{Priority: func(ctx context.Context, _ string) shed.Priority {
		md, _ := metadata.FromIncomingContext(ctx)
		p, err := s.Lookup(first(md.Get("priority")))
		if err != nil {
			return s.Default()
		}
		return p
	}}
	svc := &testService{hold: make(chan struct{}), ran: make(chan string, 100)}
	conn := serve(t, svc, grpc.ChainUnaryInterceptor(UnaryShed(s, o)), grpc.ChainStreamInterceptor(StreamShed(s, o)))
	tc := testpb.NewTestServiceClient(conn)
	with := func(p string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "priority", p)
	}

	first := make(chan error, 1)
	go func() { _, err := tc.UnaryCall(with("critical"), &testpb.SimpleRequest{}); first <- err }()
	<-svc.ran // the only slot is held

	var tr metadata.MD
	_, err = tc.UnaryCall(with("sheddable"), &testpb.SimpleRequest{}, grpc.Trailer(&tr))
	refusal(t, "sheddable unary at the limit", err, tr, codes.Unavailable, 2000)
	st, err := tc.StreamingOutputCall(with("sheddable"), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	refusal(t, "sheddable stream at the limit", err, st.Trailer(), codes.Unavailable, 2000)

	hc := healthpb.NewHealthClient(conn)
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health check at the limit: %v, want served", err)
	}

	queued := make(chan error, 1)
	go func() { _, err := tc.UnaryCall(with("critical"), &testpb.SimpleRequest{}); queued <- err }()
	for s.Stats().Queued == 0 {
		time.Sleep(time.Millisecond) // waits for the client's call to arrive, not for time to pass
	}
	close(svc.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued critical call: %v, want served when the slot freed", err)
	}
	if stats := s.Stats(); stats.Shed[2] != 2 || stats.Admitted[0] != 2 || stats.InFlight != 0 {
		t.Errorf("Stats = %+v", stats)
	}
}
