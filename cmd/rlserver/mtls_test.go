package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/internal/testpki"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// mtlsServer is rlserver started by run with TLS on RESP, gRPC and HTTP, client
// certificates asked for by extra flags.
type mtlsServer struct {
	resp, grpc, http string
	ca               *testpki.CA // signs the server's certificate
}

func startMTLS(t *testing.T, clients *testpki.CA, extra ...string) mtlsServer {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte("domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs, err := launch.FreeAddrs(4)
	if err != nil {
		t.Fatal(err)
	}
	srvCA := testpki.NewCA(t, "server")
	cert := srvCA.Server(t)
	args := append([]string{"-addr", addrs[0], "-tls-addr", addrs[1], "-rls-addr", addrs[2], "-http-addr", addrs[3], "-rls-tls",
		"-tls-cert", cert.CertFile, "-tls-key", cert.KeyFile, "-tls-ca-cert-file", clients.CertFile, "-limits", dir}, extra...)
	o, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := runUntilEnd(t, o)
	plain := redis.NewClient(&redis.Options{Addr: addrs[0]})
	defer plain.Close()
	deadline := time.Now().Add(10 * time.Second)
	for plain.Ping(ctx).Err() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the start; nothing to wait on but the port
	}
	return mtlsServer{resp: addrs[1], grpc: addrs[2], http: addrs[3], ca: srvCA}
}

// clientTLS trusts the server's CA and shows the first of certs (none: no
// certificate), even one the server's CAs did not sign, which a Go client would
// otherwise keep to itself.
func (s mtlsServer) clientTLS(certs ...tls.Certificate) *tls.Config {
	tc := &tls.Config{RootCAs: s.ca.Pool, ServerName: "localhost"}
	if len(certs) > 0 {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	return tc
}

// respErr is a RESP call's error over TLS with certs.
func (s mtlsServer) respErr(t *testing.T, certs ...tls.Certificate) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.resp, TLSConfig: s.clientTLS(certs...), MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rdb.Do(ctx, "RL.TOKEN", "mtls:ann", 10, 1000).Err()
}

// grpcErr is a ShouldRateLimit call's error over TLS with certs.
func (s mtlsServer) grpcErr(t *testing.T, certs ...tls.Certificate) error {
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(credentials.NewTLS(s.clientTLS(certs...))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "edge",
		Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}}})
	if err == nil && resp.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("ShouldRateLimit: %v", resp)
	}
	return err
}

// httpErr is a GET /healthcheck's error over TLS with certs.
func (s mtlsServer) httpErr(t *testing.T, certs ...tls.Certificate) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: s.clientTLS(certs...)}}
	resp, err := c.Get("https://" + s.http + "/healthcheck")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/healthcheck: %s", resp.Status)
		}
	}
	return err
}

// TestMutualTLS: with -tls-ca-cert-file, RESP (go-redis, redis-cli), gRPC and HTTPS
// answer a client whose certificate the CA signed, and refuse at the handshake one
// without a certificate or with one another CA signed; -tls-auth-clients optional
// lets one without in; -tls-client-san wants the name in the certificate.
func TestMutualTLS(t *testing.T) {
	clients := testpki.NewCA(t, "clients")
	good := clients.Client(t, "envoy", "envoy")
	other := clients.Client(t, "other", "other")
	stranger := testpki.NewCA(t, "stranger").Client(t, "stranger", "envoy")

	type caller func(*testing.T, ...tls.Certificate) error
	check := func(t *testing.T, name string, call caller, certs []tls.Certificate, admitted bool) {
		t.Helper()
		err := call(t, certs...)
		if admitted && err != nil {
			t.Errorf("%s: %v, want it answered", name, err)
		}
		if !admitted && err == nil {
			t.Errorf("%s: answered, want the handshake refused", name)
		}
	}
	none, withGood, withOther, withStranger := []tls.Certificate{}, []tls.Certificate{good.TLS}, []tls.Certificate{other.TLS}, []tls.Certificate{stranger.TLS}

	t.Run("required", func(t *testing.T) {
		s := startMTLS(t, clients)
		for _, front := range []struct {
			name string
			call caller
		}{{"RESP", s.respErr}, {"gRPC", s.grpcErr}, {"HTTP", s.httpErr}} {
			check(t, front.name+" with the CA's certificate", front.call, withGood, true)
			check(t, front.name+" without a certificate", front.call, none, false)
			check(t, front.name+" with another CA's certificate", front.call, withStranger, false)
		}
		cli := testenv.RedisTool(t, "redis-cli")
		host, port := s.resp[:strings.LastIndex(s.resp, ":")], s.resp[strings.LastIndex(s.resp, ":")+1:]
		base := []string{"-h", host, "-p", port, "--tls", "--cacert", s.ca.CertFile}
		if out, err := exec.Command(cli, append(base, "--cert", good.CertFile, "--key", good.KeyFile, "PING")...).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "PONG" {
			t.Errorf("redis-cli with a certificate: %q %v", out, err)
		}
		if out, _ := exec.Command(cli, append(base, "PING")...).CombinedOutput(); strings.Contains(string(out), "PONG") {
			t.Errorf("redis-cli without a certificate answered %q", out)
		}
	})
	t.Run("optional", func(t *testing.T) {
		s := startMTLS(t, clients, "-tls-auth-clients", "optional")
		check(t, "RESP without a certificate", s.respErr, none, true)
		check(t, "gRPC without a certificate", s.grpcErr, none, true)
		check(t, "RESP with the CA's certificate", s.respErr, withGood, true)
		check(t, "RESP with another CA's certificate", s.respErr, withStranger, false)
	})
	t.Run("gRPC and HTTP alone", func(t *testing.T) {
		// -rls-tls with its certificate needs no RESP TLS listener (Envoy Gateway's
		// GRPC_SERVER_USE_TLS sets no such thing): the later -tls-addr "" drops it.
		s := startMTLS(t, clients, "-tls-addr", "")
		check(t, "gRPC with the CA's certificate", s.grpcErr, withGood, true)
		check(t, "HTTP with the CA's certificate", s.httpErr, withGood, true)
		check(t, "gRPC without a certificate", s.grpcErr, none, false)
		check(t, "RESP over TLS, not listening", s.respErr, withGood, false)
	})
	t.Run("SAN", func(t *testing.T) {
		s := startMTLS(t, clients, "-tls-client-san", "envoy")
		check(t, "gRPC as envoy", s.grpcErr, withGood, true)
		check(t, "gRPC as other", s.grpcErr, withOther, false)
		check(t, "RESP as other", s.respErr, withOther, false)
	})
}

// TestTLSCertNeedsAListener: a certificate with neither -tls-addr nor -rls-tls
// would serve nothing; the start says which flags use it.
func TestTLSCertNeedsAListener(t *testing.T) {
	cert := testpki.NewCA(t, "server").Server(t)
	o, err := parseFlags([]string{"-addr", "127.0.0.1:0", "-tls-cert", cert.CertFile, "-tls-key", cert.KeyFile}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), o, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "-tls-addr (RESP) or -rls-tls (gRPC and HTTP)") {
		t.Fatalf("run: %v, want the flags that use the certificate named", err)
	}
}
