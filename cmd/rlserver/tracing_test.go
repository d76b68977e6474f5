package main

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
)

// otlpReceiver is an OTLP/gRPC trace receiver, as a collector's: it keeps the spans
// it is sent.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// child is the span sent whose parent is the caller's span parent, or nil.
func (r *otlpReceiver) child(parent []byte) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if string(s.GetParentSpanId()) == string(parent) {
			return s
		}
	}
	return nil
}

// TestTracing: with envoyproxy/ratelimit's TRACING_* variables, a ShouldRateLimit
// call and a /check carrying a W3C traceparent each reach an OTLP receiver as a span
// of the caller's trace, parented to the caller's span, with the domain, the number
// of descriptors and the overall code, and without the descriptors' values.
func TestTracing(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	recv := startReceiver(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte("domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs, err := launch.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	getenv = envOf(map[string]string{"TRACING_ENABLED": "true", "TRACING_EXPORTER_PROTOCOL": "grpc", "TRACING_SERVICE_NAME": "rl-test",
		"TRACING_SAMPLING_RATE": "0"}) // 0: only traces the caller sampled
	o, err := parseFlags([]string{"-addr", addrs[0], "-rls-addr", addrs[1], "-http-addr", addrs[2], "-limits", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := runUntilEnd(t, o)
	poll.Until(t, 10*time.Second, "/healthcheck", func() bool {
		resp, err := http.Get("http://" + addrs[2] + "/healthcheck")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	caller := func(span string) (string, []byte) {
		id, _ := hex.DecodeString(span)
		return "00-" + traceID + "-" + span + "-01", id
	}
	grpcParent, grpcSpan := caller("00f067aa0ba902b7")
	conn, err := grpc.NewClient(addrs[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}}}
	if _, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(metadata.AppendToOutgoingContext(ctx, "traceparent", grpcParent), req); err != nil {
		t.Fatal(err)
	}
	checkParent, checkSpan := caller("b7ad6b7169203331")
	hreq, _ := http.NewRequest("GET", "http://"+addrs[2]+"/check?domain=edge&descriptor=request_headers:X-User:user", nil)
	hreq.Header.Set("traceparent", checkParent)
	hreq.Header.Set("X-User", "ann")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Untraced calls: sampling rate 0 keeps none of them.
	if _, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, req); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		front  string
		parent []byte
		code   string
	}{{"ShouldRateLimit", grpcSpan, "OK"}, {"/check", checkSpan, "OVER_LIMIT"}} {
		var s *tracepb.Span
		poll.Until(t, 10*time.Second, c.front+"'s span at the receiver", func() bool { s = recv.child(c.parent); return s != nil })
		if hex.EncodeToString(s.GetTraceId()) != traceID || !strings.Contains(s.GetName(), strings.TrimPrefix(c.front, "/")) {
			t.Errorf("%s: span %q of trace %x, want the caller's trace", c.front, s.GetName(), s.GetTraceId())
		}
		attrs := map[string]string{}
		for _, kv := range s.GetAttributes() {
			v := kv.GetValue()
			attrs[kv.GetKey()] = v.GetStringValue()
			if _, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
				attrs[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
			}
			if v.GetStringValue() == "ann" {
				t.Errorf("%s: attribute %s carries a descriptor's value", c.front, kv.GetKey())
			}
		}
		if attrs["ratelimit.domain"] != "edge" || attrs["ratelimit.overall_code"] != c.code || attrs["ratelimit.descriptors"] != "1" {
			t.Errorf("%s: attributes %v, want domain edge, 1 descriptor, code %s", c.front, attrs, c.code)
		}
	}
	recv.mu.Lock()
	n := len(recv.spans)
	recv.mu.Unlock()
	if n != 2 {
		t.Errorf("%d spans exported, want the 2 the callers sampled", n)
	}
}

// TestTracingBadConfig: a tracing variable that does not parse, a rate outside 0..1
// and an unknown protocol stop the start with the setting named.
func TestTracingBadConfig(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRACING_ENABLED": "true", "TRACING_SAMPLING_RATE": "often"}, "-tracing-sampling-rate"},
		{map[string]string{"TRACING_ENABLED": "true", "TRACING_SAMPLING_RATE": "2"}, "sampling rate 2 is not between 0 and 1"},
		{map[string]string{"TRACING_ENABLED": "true", "TRACING_EXPORTER_PROTOCOL": "udp"}, `exporter protocol "udp"`},
	} {
		getenv = envOf(tc.env)
		o, err := parseFlags([]string{"-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"}, io.Discard)
		if err == nil {
			err = run(context.Background(), o, slog.New(slog.DiscardHandler))
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

// startReceiver serves an otlpReceiver on loopback, the SDK's endpoint for the test
// (the SDK reads its OTEL_* variables from the process). It stops after the cleanups
// registered later, runUntilEnd's among them: a server flushes its spans as it stops.
func startReceiver(t *testing.T) *otlpReceiver {
	recv := &otlpReceiver{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, recv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	return recv
}

// TestTracingRESP: RESP commands from go-redis reach an OTLP receiver as spans
// named by the command, with its number of arguments and keys and its reply's
// kind, and without a key's or an argument's value; at TRACING_SAMPLING_RATE 1 every
// command has one, at 0 none does.
func TestTracingRESP(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	type want struct{ name, args, keys, reply string }
	calls := []struct {
		args []any
		want want
	}{
		{[]any{"RL.TOKEN", "secret-user", 1, 60000}, want{"RL.TOKEN", "3", "1", "allowed"}},
		{[]any{"RL.TOKEN", "secret-user", 1, 60000}, want{"RL.TOKEN", "3", "1", "refused"}},
		{[]any{"RL.ALL", "TOKEN", "secret-a", 5, 1000, "GCRA", "secret-b", 5, 1000}, want{"RL.ALL", "8", "2", "allowed"}},
		{[]any{"RL.TOKEN", "secret-user", "lots", 1000}, want{"RL.TOKEN", "3", "1", "error"}},
		{[]any{"RL.TOKEN", "secret-user"}, want{"RL.TOKEN", "1", "0", "error"}},
		{[]any{"CLIENT", "SETNAME", "secret-name"}, want{"CLIENT SETNAME", "2", "0", "ok"}},
	}
	for _, rate := range []string{"1", "0"} {
		t.Run("rate "+rate, func(t *testing.T) {
			recv := startReceiver(t)
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
			getenv = envOf(map[string]string{"TRACING_ENABLED": "true", "TRACING_EXPORTER_PROTOCOL": "grpc", "TRACING_SAMPLING_RATE": rate})
			addr, err := launch.FreeAddrs(1)
			if err != nil {
				t.Fatal(err)
			}
			o, err := parseFlags([]string{"-addr", addr[0]}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, o, slog.New(slog.DiscardHandler)) }()
			rdb := redis.NewClient(&redis.Options{Addr: addr[0], Protocol: 2, DisableIdentity: true})
			poll.Until(t, 10*time.Second, "PING", func() bool { return rdb.Ping(ctx).Err() == nil })
			for _, c := range calls {
				rdb.Do(ctx, c.args...) // errors are among the cases
			}
			rdb.Close()
			cancel()
			if err := <-done; err != nil { // its end flushes the spans to the receiver
				t.Fatal(err)
			}
			recv.mu.Lock()
			defer recv.mu.Unlock()
			var got []want
			for _, s := range recv.spans {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					v := kv.GetValue()
					attrs[kv.GetKey()] = v.GetStringValue()
					if _, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
						attrs[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
					}
					if strings.Contains(attrs[kv.GetKey()], "secret") {
						t.Errorf("span %s: attribute %s carries a value: %q", s.GetName(), kv.GetKey(), attrs[kv.GetKey()])
					}
				}
				if s.GetName() == "PING" || s.GetName() == "HELLO" { // the wait's, exported late
					continue
				}
				if s.GetName() != attrs["rlserver.command"] {
					t.Errorf("span %s: command %q", s.GetName(), attrs["rlserver.command"])
				}
				got = append(got, want{s.GetName(), attrs["rlserver.args"], attrs["rlserver.keys"], attrs["rlserver.reply"]})
			}
			var expect []want
			if rate == "1" {
				for _, c := range calls {
					expect = append(expect, c.want)
				}
			}
			if !slices.Equal(got, expect) {
				t.Errorf("spans %v, want %v", got, expect)
			}
		})
	}
}
