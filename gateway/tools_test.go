package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/internal/testpki"
	"github.com/rlserver/rlserver/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// requireEnv fails instead of skipping when CI has installed the tools (.ci/run).
const requireEnv = "RLSERVER_REQUIRE_RATELIMIT"

// tool finds a Go-installed program on PATH or in $(go env GOPATH)/bin, skipping
// (failing under RLSERVER_REQUIRE_RATELIMIT=1) when it is not installed.
func tool(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(filepath.SplitList(strings.TrimSpace(string(out)))[0], "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := name + " not installed: go install " + pkg
	if os.Getenv(requireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestGrpcurl: grpcurl, given no proto file, finds the service by reflection, calls
// ShouldRateLimit with a JSON request and reads the answer; health answers too.
func TestGrpcurl(t *testing.T) {
	grpcurl := tool(t, "grpcurl", "github.com/fullstorydev/grpcurl/cmd/grpcurl@latest")
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOverLimit, Statuses: []policy.Status{
		{Code: policy.CodeOverLimit, Limit: &policy.Limit{Name: "n", RequestsPerUnit: 5, Unit: policy.UnitMinute}, ResetAfter: 30 * time.Second}}}}
	f := startFront(t, Config{Decider: fd})
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(grpcurl, append([]string{"-plaintext", "-max-time", "30"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run(f.grpcAddr, "list"); !strings.Contains(out, "envoy.service.ratelimit.v3.RateLimitService") || !strings.Contains(out, "grpc.health.v1.Health") {
		t.Errorf("grpcurl list:\n%s", out)
	}
	out := run("-d", `{"domain":"edge","hits_addend":2,"descriptors":[{"entries":[{"key":"user","value":"alice"}],"hits_addend":4}]}`,
		f.grpcAddr, "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
	var resp struct {
		OverallCode string `json:"overallCode"`
		Statuses    []struct {
			Code               string `json:"code"`
			CurrentLimit       struct{ Name, Unit string }
			DurationUntilReset string `json:"durationUntilReset"`
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("grpcurl's answer %q: %v", out, err)
	}
	if resp.OverallCode != "OVER_LIMIT" || len(resp.Statuses) != 1 || resp.Statuses[0].CurrentLimit.Unit != "MINUTE" || resp.Statuses[0].DurationUntilReset != "30s" {
		t.Errorf("grpcurl's answer:\n%s", out)
	}
	if r := fd.calls(); len(r) != 1 || r[0].Hits != 2 || r[0].Descriptors[0].Hits != 4 || r[0].Descriptors[0].Entries[0].Value != "alice" {
		t.Errorf("the engine was asked %+v", r)
	}
	if out := run("-d", `{"service":"envoy.service.ratelimit.v3.RateLimitService"}`, f.grpcAddr, "grpc.health.v1.Health/Check"); !strings.Contains(out, "SERVING") {
		t.Errorf("grpcurl health: %s", out)
	}
}

// TestJSON: /json answers 200, 429 over the limit and 500 on UNKNOWN, with the
// response as protojson; /rlconfig is served.
func TestJSON(t *testing.T) {
	fd := &fakeDecider{}
	f := startFront(t, Config{Decider: fd})
	body := []byte(`{"domain":"d","descriptors":[{"entries":[{"key":"a","value":"b"}]}]}`)
	for _, tc := range []struct {
		code policy.Code
		want int
		word string
	}{{policy.CodeOK, 200, `"OK"`}, {policy.CodeOverLimit, 429, `"OVER_LIMIT"`}, {policy.CodeUnknown, 500, `"statuses"`}} {
		fd.mu.Lock()
		fd.resp = policy.Response{Overall: tc.code, Statuses: []policy.Status{{Code: tc.code, Limit: &policy.Limit{RequestsPerUnit: 1, Unit: policy.UnitSecond}}}}
		fd.mu.Unlock()
		code, got := httpPost(t, "http://"+f.httpAddr+"/json", body)
		if code != tc.want || !strings.Contains(got, tc.word) {
			t.Errorf("code %v: %d %s, want %d with %s", tc.code, code, got, tc.want, tc.word)
		}
	}
	if code, _ := httpGet(t, "http://"+f.httpAddr+"/rlconfig"); code != 200 {
		t.Errorf("/rlconfig: %d", code)
	}
}

// TestTLS: with Config.TLS, gRPC and HTTP are served over TLS, and a client that
// trusts the certificate is answered.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, 1)}}
	f := startFront(t, Config{Decider: fd, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	conn, err := grpc.NewClient(f.grpcAddr, grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(pool, "localhost")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if err != nil || resp.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("over TLS: %v %v", resp, err)
	}
	if r, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health over TLS: %v %v", r, err)
	}
	c, err := tls.Dial("tcp", f.httpAddr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	c.Close()
}

// selfSigned makes a certificate for localhost and 127.0.0.1, and a pool trusting
// its CA.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	ca := testpki.NewCA(t, "rlserver test")
	return ca.Server(t).TLS, ca.Pool
}
