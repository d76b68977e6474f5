package grpclimit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestFailFast: with the limiter stalled (it accepts connections and never answers),
// the first client.DefaultFailures calls each pay the 50 ms Timeout, then the breaker
// answers every call in under 1 ms, measured: served, or refused with FailClosed.
func TestFailFast(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(map[bool]string{false: "open", true: "closed"}[closed], func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: testenv.StalledAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { rdb.Close() })
			c, err := client.New(rdb)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRateLimiter(RateLimit{Client: c, Limit: client.Fixed(2, time.Minute), Key: userKey, FailClosed: closed})
			if err != nil {
				t.Fatal(err)
			}
			intercept := r.UnaryServerInterceptor()
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("user", "alice"))
			info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
			call := func() (codes.Code, time.Duration) {
				start := time.Now()
				_, err := intercept(ctx, nil, info, func(context.Context, any) (any, error) { return "served", nil })
				return status.Code(err), time.Since(start)
			}
			var slowest time.Duration
			for range client.DefaultFailures {
				_, took := call()
				slowest = max(slowest, took)
			}
			if slowest < DefaultTimeout {
				t.Fatalf("the calls that opened the breaker took up to %v: the limiter did not stall them", slowest)
			}
			want := map[bool]codes.Code{false: codes.OK, true: codes.ResourceExhausted}[closed]
			var took []time.Duration
			for range 20 {
				code, d := call()
				if code != want {
					t.Errorf("with the breaker open: %v, want %v", code, want)
				}
				took = append(took, d)
			}
			slices.Sort(took)
			t.Logf("the %d calls that opened the breaker took up to %v; then 20 calls: median %v, max %v",
				client.DefaultFailures, slowest, took[len(took)/2], took[len(took)-1])
			// The median: on a shared machine under -race a preemption costs a few ms now
			// and then; the Timeout costs 50 ms each time.
			if took[len(took)/2] >= time.Millisecond {
				t.Errorf("with the breaker open, calls took %v (sorted): want under 1 ms", took)
			}
		})
	}
}
