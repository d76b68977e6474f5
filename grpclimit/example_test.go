package grpclimit_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/grpclimit"
)

// service is a gRPC service: the interop tests' TestService, answering EmptyCall.
type service struct {
	testpb.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// A gRPC server whose calls are limited per caller (the x-user metadata), 2 a
// minute: the third call is refused with RESOURCE_EXHAUSTED and the trailer
// grpc-retry-pushback-ms, which a gRPC client's retry policy obeys. An embedded
// client on a frozen clock, for the example to run; client.Open on rlserver.
func ExampleRateLimiter() {
	rl, err := client.NewEmbedded(client.EmbeddedOptions{Clock: func() time.Time { return time.Unix(1_750_000_020, 0) }})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := grpclimit.NewRateLimiter(grpclimit.RateLimit{
		Client: rl,
		Limit:  client.Fixed(2, time.Minute),
		Key: func(ctx context.Context, method string) string {
			md, _ := metadata.FromIncomingContext(ctx)
			if u := md.Get("x-user"); len(u) == 1 && !grpclimit.IsHealth(method) {
				return "grpc:" + u[0]
			}
			return "" // served unlimited: health checks, calls without a user
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()))
	testpb.RegisterTestServiceServer(srv, service{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "alice")
	for range 3 {
		var trailer metadata.MD
		_, err := testpb.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{}, grpc.Trailer(&trailer))
		if err == nil {
			fmt.Println("OK")
			continue
		}
		// The 60 s to the window's end, spread by up to a second so that callers
		// refused together do not come back together.
		ms, _ := strconv.Atoi(trailer.Get(grpclimit.PushbackKey)[0])
		fmt.Printf("%v, pushback 60 s to 61 s: %v\n", status.Code(err), ms >= 60_000 && ms <= 61_000)
	}
	// Output:
	// OK
	// OK
	// ResourceExhausted, pushback 60 s to 61 s: true
}
