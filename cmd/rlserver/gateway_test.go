package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/gateway"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/tracing"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The tests read no environment but the one they give: a variable of the machine's
// (PORT, HOST) would otherwise change what parseFlags returns.
func init() { getenv = func(string) string { return "" } }

// tracingDefaults are the -tracing flags' defaults, envoyproxy/ratelimit's.
var tracingDefaults = tracingOptions{cfg: tracing.Config{ServiceName: "RateLimit", SamplingRate: 1, Protocol: "http"}}

// envOf is getenv over m.
func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestRatelimitEnv: the environment of envoyproxy/ratelimit's Deployment (Istio's
// sample) sets the flags it means, with their defaults; flags and the config file win.
func TestRatelimitEnv(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	istio := map[string]string{"LOG_LEVEL": "debug", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379", "USE_STATSD": "false",
		"RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_WATCH_ROOT": "false", "RUNTIME_IGNOREDOTFILES": "true"}
	getenv = envOf(istio)
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := gatewayOptions{limits: "/data/ratelimit/config", rlsAddr: "0.0.0.0:8081", httpAddr: "0.0.0.0:8080", tracing: tracingDefaults}
	if o.gw != want || o.level != slog.LevelDebug {
		t.Errorf("Istio's env: %+v level %v, want %+v debug", o.gw, o.level, want)
	}

	getenv = envOf(map[string]string{"RUNTIME_ROOT": "/srv", "RUNTIME_APPDIRECTORY": "rl", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "9001",
		"PORT": "9000", "LIMIT_RESPONSE_HEADERS_ENABLED": "true", "LIMIT_REMAINING_HEADER": "X-RateLimit-Remaining", "SHADOW_MODE": "true",
		"USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": "127.0.0.1:9102", "LOG_LEVEL": "trace"})
	o, err = parseFlags([]string{"-http-addr", "127.0.0.1:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = gatewayOptions{limits: "/srv/rl", rlsAddr: "127.0.0.1:9001", httpAddr: "127.0.0.1:1", headers: true, shadowMode: true,
		names: gateway.Headers{Remaining: "X-RateLimit-Remaining"}, tracing: tracingDefaults}
	if o.gw != want || o.metricsAddr != "127.0.0.1:9102" || o.level != slog.LevelDebug {
		t.Errorf("env under a flag: %+v metrics %q level %v, want %+v", o.gw, o.metricsAddr, o.level, want)
	}

	// Without a policy directory, only what is named is set.
	getenv = envOf(map[string]string{"PORT": "9000"})
	if o, err = parseFlags(nil, io.Discard); err != nil || o.gw.httpAddr != "0.0.0.0:9000" || o.gw.rlsAddr != "" || o.gw.limits != "" {
		t.Errorf("PORT alone: %+v %v", o.gw, err)
	}
	// A boolean that does not parse stops the start, naming the variable, as
	// envoyproxy/ratelimit's envconfig does; read as false it would turn TLS off.
	for _, v := range boolVars {
		getenv = envOf(map[string]string{v: "yes"})
		if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), v+` "yes" is not a boolean`) {
			t.Errorf("%s=yes: %v, want an error naming it", v, err)
		}
	}
	getenv = envOf(map[string]string{"LOG_LEVEL": "loud"})
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "loglevel") {
		t.Errorf("LOG_LEVEL=loud: %v, want an error naming -loglevel", err)
	}
	getenv = envOf(map[string]string{"GRPC_CLIENT_TLS_CACERT": "/tls/ca.pem", "GRPC_CLIENT_TLS_SAN": "envoy"})
	if o, err = parseFlags(nil, io.Discard); err != nil || o.cfg.TLSCACertFile != "/tls/ca.pem" || o.cfg.TLSClientSAN != "envoy" {
		t.Errorf("GRPC_CLIENT_TLS_*: CA %q SAN %q, %v", o.cfg.TLSCACertFile, o.cfg.TLSClientSAN, err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "rl.conf")
	if err := os.WriteFile(conf, []byte("rls-addr 127.0.0.1:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv = envOf(map[string]string{"GRPC_PORT": "9001"})
	if o, err = parseFlags([]string{conf}, io.Discard); err != nil || o.gw.rlsAddr != "127.0.0.1:2" {
		t.Errorf("the config file under GRPC_PORT: %+v %v", o.gw, err)
	}
}

// TestGateway runs the server with a policy directory and both fronts: /json and
// ShouldRateLimit decide on the store RESP sees (SCAN finds the key), and health
// follows REPLICAOF and REPLICAOF NO ONE.
func TestGateway(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte("domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs, err := launch.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-addr", addrs[0], "-rls-addr", addrs[1], "-http-addr", addrs[2], "-limits", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := runUntilEnd(t, o)
	rdb := redis.NewClient(&redis.Options{Addr: addrs[0]})
	defer rdb.Close()
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	defer tcancel()
	for rdb.Ping(tctx).Err() != nil && tctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // the start; nothing to wait on but the port
	}
	resp, err := http.Post("http://"+addrs[2]+"/json", "application/json",
		strings.NewReader(`{"domain":"edge","descriptors":[{"entries":[{"key":"user","value":"ann"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/json: %s", resp.Status)
	}
	conn, err := grpc.NewClient(addrs[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}}}
	for _, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		r, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(tctx, req)
		if err != nil || r.OverallCode != want {
			t.Fatalf("ShouldRateLimit: %v %v, want %v", r, err, want)
		}
	}
	if keys, _, err := rdb.Scan(tctx, 0, "rl:edge:*", 10).Result(); err != nil || len(keys) != 1 || !strings.Contains(keys[0], "user=ann") {
		t.Errorf("SCAN rl:edge:*: %v %v", keys, err)
	}
	watch, err := healthpb.NewHealthClient(conn).Watch(tctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		if r, err := watch.Recv(); err != nil || r.Status != want {
			t.Fatalf("health: %v %v, want %v", r, err, want)
		}
	}
	next(healthpb.HealthCheckResponse_SERVING)
	dead, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(dead, ":")
	if err := rdb.Do(tctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	if err := rdb.Do(tctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	next(healthpb.HealthCheckResponse_SERVING)
}
