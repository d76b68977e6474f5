package resp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/testpki"
)

// serverCert makes a server certificate for 127.0.0.1 and localhost, and returns its
// files and its CA.
func serverCert(t *testing.T) (certFile, keyFile string, ca *testpki.CA) {
	ca = testpki.NewCA(t, "rlserver test")
	p := ca.Server(t)
	return p.CertFile, p.KeyFile, ca
}

// startTLSServer serves cfg on a plaintext and a TLS loopback listener at once,
// with the clock frozen at t0.
func startTLSServer(t *testing.T, cfg Config) (plainAddr, tlsAddr string) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.core.SetClock(t0)
	var addrs [2]string
	done := make(chan error, 2)
	for i, serve := range []func(net.Listener) error{s.Serve, s.ServeTLS} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = ln.Addr().String()
		go func() { done <- serve(ln) }()
	}
	t.Cleanup(func() {
		s.Close()
		for range 2 {
			if err := <-done; err != nil && !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	return addrs[0], addrs[1]
}

// TestTLS: go-redis over TLS, with a certificate made here, shares the store and
// the password with the plaintext listener.
func TestTLS(t *testing.T) {
	certFile, keyFile, ca := serverCert(t)
	pool := ca.Pool
	plainAddr, tlsAddr := startTLSServer(t, Config{Config: core.Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, RequirePass: "pw"})
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		secure := redis.NewClient(&redis.Options{Addr: tlsAddr, Protocol: proto, Password: "pw",
			TLSConfig: &tls.Config{RootCAs: pool}})
		plain := redis.NewClient(&redis.Options{Addr: plainAddr, Protocol: proto, Password: "pw"})
		key := "tls:" + string(rune('0'+proto))
		run(t, secure, []call{{"RL.TOKEN " + key + " 2 1000", "[1 2 1 0 500]"}})
		run(t, plain, []call{{"RL.TOKEN " + key + " 2 1000", "[1 2 0 0 1000]"}})
		run(t, secure, []call{{"RL.TOKEN " + key + " 2 1000 PEEK", "[0 2 0 500 1000]"}})
		if got, err := secure.ConfigGet(ctx, "tls-port").Result(); err != nil || got["tls-port"] != tlsAddr[strings.LastIndex(tlsAddr, ":")+1:] {
			t.Errorf("CONFIG GET tls-port = %v, %v", got, err)
		}
		secure.Close()
		plain.Close()
	}
	// A client that does not trust the certificate fails the handshake.
	untrusting := redis.NewClient(&redis.Options{Addr: tlsAddr, Password: "pw", MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: x509.NewCertPool()}})
	defer untrusting.Close()
	if err := untrusting.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("PING with an untrusted certificate: %v", err)
	}
	// Plaintext on the TLS port gets no reply: the handshake fails and it closes.
	conn, err := net.Dial("tcp", tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("PING\r\n"))
	if b, _ := io.ReadAll(conn); strings.Contains(string(b), "PONG") {
		t.Errorf("plaintext PING on the TLS port answered %q", b)
	}
}

// TestTLSRedisCLI: redis-cli --tls talks to the TLS listener.
func TestTLSRedisCLI(t *testing.T) {
	cli := needTool(t, "redis-cli", "apt-get install redis-tools")
	if out, _ := exec.Command(cli, "--help").CombinedOutput(); !strings.Contains(string(out), "--tls") {
		t.Skip("redis-cli is built without TLS")
	}
	certFile, keyFile, ca := serverCert(t)
	_, tlsAddr := startTLSServer(t, Config{Config: core.Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, RequirePass: "pw"})
	host, port, _ := net.SplitHostPort(tlsAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cacert", ca.CertFile, "-a", "pw", "--no-auth-warning", "RL.TOKEN", "cli", "10", "1000"}, "1\n10\n9\n0\n100\n"},
		{[]string{"--cacert", ca.CertFile, "PING"}, "NOAUTH Authentication required.\n\n"},
	} {
		args := append([]string{"--tls", "-h", host, "-p", port}, tc.args...)
		out, _ := exec.CommandContext(ctx, cli, args...).CombinedOutput()
		if string(out) != tc.want {
			t.Errorf("redis-cli %q: %q, want %q", args, out, tc.want)
		}
	}
}

// TestTLSConfig: certificate settings are checked at construction.
func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := serverCert(t)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Config: core.Config{TLSCertFile: certFile}}, "TLSCertFile and TLSKeyFile go together"},
		{Config{Config: core.Config{TLSKeyFile: keyFile}}, "TLSCertFile and TLSKeyFile go together"},
		{Config{Config: core.Config{TLSCertFile: filepath.Join(dir, "nosuch.pem"), TLSKeyFile: keyFile}}, "nosuch.pem"},
		{Config{Config: core.Config{TLSCertFile: keyFile, TLSKeyFile: certFile}}, "TLS certificate"},
	} {
		if _, err := NewServer(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewServer(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ServeTLS(ln); !errors.Is(err, ErrNoTLS) {
		t.Errorf("ServeTLS without a certificate = %v, want ErrNoTLS", err)
	}
}
