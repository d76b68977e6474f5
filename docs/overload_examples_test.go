package docs_test

import (
	"context"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/grpclimit"
	"github.com/rlserver/rlserver/shed"
	"github.com/rlserver/rlserver/shed/shedmetrics"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// The Go snippets of overload.md, compiled here so that TestGoSnippets finds them.
// None of these runs (no Output comment).

// overload.md: the shedder in front of a service's handlers, its metrics registered.
func Example_shedder() {
	mux := http.NewServeMux()
	s, err := shed.New(shed.Config{
		Priorities:   []string{"critical", "default", "sheddable"}, // most important first (the default)
		MaxLimit:     200,                                          // never more in flight than this
		QueueTimeout: 100 * time.Millisecond,                       // no request waits longer
	})
	h := s.Handler(mux, shed.HandlerOptions{
		Priority: func(r *http.Request) shed.Priority {
			p, err := s.Lookup(r.Header.Get("X-Priority"))
			if err != nil {
				return s.Default()
			}
			return p
		},
		// HealthPaths nil: /healthz, /readyz, /livez and /health are never shed.
	})
	prometheus.MustRegister(shedmetrics.New(s, "api"))
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(":8080", h))
}

// userFromMetadata is a call's key: its x-user metadata.
func userFromMetadata(ctx context.Context, _ string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-user"); len(v) > 0 {
		return v[0]
	}
	return ""
}

// overload.md: a gRPC server with the shedder first, then the rate limit.
func Example_grpc() {
	c, err := client.Open("redis://localhost:6380")
	if err != nil {
		log.Fatal(err)
	}
	s, err := shed.New(shed.Config{MaxLimit: 200, QueueTimeout: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	rl, _ := grpclimit.NewRateLimiter(grpclimit.RateLimit{Client: c, Limit: client.Token(100, time.Second), Key: userFromMetadata})
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpclimit.UnaryShed(s, grpclimit.Shed{}), rl.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(grpclimit.StreamShed(s, grpclimit.Shed{}), rl.StreamServerInterceptor()),
	)
	lis, err := net.Listen("tcp", ":9090")
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(srv.Serve(lis))
}
