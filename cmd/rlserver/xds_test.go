package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testpki"
	"github.com/rlserver/rlserver/internal/xdstest"
)

// envoyGatewayEnv is the environment Envoy Gateway gives its rate limit container
// (internal/infrastructure/kubernetes/ratelimit in envoyproxy/gateway), with its
// /certs files under certs and its xDS server at xdsAddr; REDIS_* and RUNTIME_* are
// set as it sets them and mean nothing here.
func envoyGatewayEnv(certs, xdsAddr, prometheus string) map[string]string {
	return map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "envoy-ratelimit-redis:6379",
		"RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_IGNOREDOTFILES": "true", "RUNTIME_WATCH_ROOT": "false",
		"LOG_LEVEL": "info", "USE_STATSD": "false",
		"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": xdsAddr, "CONFIG_GRPC_XDS_NODE_ID": "envoy-ratelimit",
		"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": certs + "/xds-client.crt",
		"CONFIG_GRPC_XDS_CLIENT_TLS_KEY": certs + "/xds-client.key", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": certs + "/ca.crt",
		"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": certs + "/tls.crt", "GRPC_SERVER_TLS_KEY": certs + "/tls.key",
		"GRPC_SERVER_TLS_CA_CERT":            certs + "/ca.crt",
		"FORCE_START_WITHOUT_INITIAL_CONFIG": "false",
		"USE_PROMETHEUS":                     "true", "PROMETHEUS_ADDR": prometheus,
	}
}

// TestEnvoyGatewayEnv: rlserver started with exactly Envoy Gateway's variables takes
// its policy from the xDS server over mutual TLS, waits for it before serving, then
// serves mutual-TLS gRPC deciding by it, answers /healthcheck, and exports the load
// on Prometheus's address. A new snapshot is in force within a second.
func TestEnvoyGatewayEnv(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	ca := testpki.NewCA(t, "envoy-gateway")
	xdsSrv := xdstest.Start(t, ca.Server(t), ca, "127.0.0.1:0")
	xdsSrv.Set(t, "1", xdstest.Edge(3, rlsconf.RateLimitUnit_MINUTE))
	certs := t.TempDir()
	srvCert, xdsClient := ca.Server(t), ca.Client(t, "envoy-ratelimit")
	for _, l := range [][2]string{{srvCert.CertFile, "tls.crt"}, {srvCert.KeyFile, "tls.key"}, {xdsClient.CertFile, "xds-client.crt"},
		{xdsClient.KeyFile, "xds-client.key"}, {ca.CertFile, "ca.crt"}} {
		copyFile(t, l[0], certs+"/"+l[1])
	}
	addrs, err := launch.FreeAddrs(4)
	if err != nil {
		t.Fatal(err)
	}
	getenv = envOf(envoyGatewayEnv(certs, xdsSrv.Addr, addrs[3]))
	// 8081 and 8080 stand in for the test's ports, given as flags (which win).
	o, err := parseFlags([]string{"-addr", addrs[0], "-rls-addr", addrs[1], "-http-addr", addrs[2]}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.gw.limits != "" || o.gw.xds.server != xdsSrv.Addr || !o.gw.rlsTLS || o.cfg.TLSCACertFile != certs+"/ca.crt" {
		t.Fatalf("options: %+v, CA %q", o.gw, o.cfg.TLSCACertFile)
	}
	ctx := runUntilEnd(t, o)

	envoy := ca.Client(t, "envoy")
	clientTLS := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost", Certificates: []tls.Certificate{envoy.TLS}}
	web := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	poll.Until(t, 10*time.Second, "/healthcheck over TLS", func() bool {
		resp, err := web.Get("https://" + addrs[2] + "/healthcheck")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	conn, err := grpc.NewClient(addrs[1], grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rls := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}}}
	for i, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		r, err := rls.ShouldRateLimit(ctx, req)
		if err != nil || r.OverallCode != want {
			t.Fatalf("call %d: %v %v, want %v", i+1, r, err, want)
		}
	}
	resp, err := http.Get("http://" + addrs[3] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `rlserver_policy_loads_total{result="success"} 1`) {
		t.Errorf("Prometheus on PROMETHEUS_ADDR lacks the xDS load:\n%.2000s", body)
	}

	xdsSrv.Set(t, "2", xdstest.Edge(10, rlsconf.RateLimitUnit_MINUTE))
	poll.Until(t, time.Second, "version 2 in force within a second", func() bool {
		r, err := rls.ShouldRateLimit(ctx, req)
		return err == nil && r.OverallCode == pb.RateLimitResponse_OK
	})
	// A bad version 3 is NACKed: /rlconfig still shows version 2, the metrics count
	// both loads and the failure.
	xdsSrv.Set(t, "3", xdstest.Edge(7, rlsconf.RateLimitUnit_UNKNOWN))
	poll.Until(t, 5*time.Second, "version 3 NACKed", func() bool { return len(xdsSrv.NACKs()) > 0 })
	get := func(c *http.Client, url string) string {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if cfg := get(web, "https://"+addrs[2]+"/rlconfig"); !strings.Contains(cfg, "# policy xds version 2:") || !strings.Contains(cfg, "edge.user: 10 per minute") {
		t.Errorf("/rlconfig after the NACK, want version 2's policy:\n%s", cfg)
	}
	metrics := get(http.DefaultClient, "http://"+addrs[3]+"/metrics")
	for _, want := range []string{`rlserver_policy_loads_total{result="success"} 2`, `rlserver_policy_loads_total{result="error"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%.2000s", want, metrics)
		}
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestXDSForceStart: with FORCE_START_WITHOUT_INITIAL_CONFIG and the xDS server down,
// rlserver serves at once with no policy (every domain unknown, so OK); once the
// server comes up on its address, its policy is in force.
func TestXDSForceStart(t *testing.T) {
	ca := testpki.NewCA(t, "xds")
	addrs, err := launch.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	client := ca.Client(t, "rlserver")
	o, err := parseFlags([]string{"-addr", addrs[0], "-rls-addr", addrs[1], "-xds-server", addrs[2], "-xds-node-id", xdstest.NodeID,
		"-xds-tls", "-xds-tls-cert", client.CertFile, "-xds-tls-key", client.KeyFile, "-xds-tls-ca", ca.CertFile, "-xds-tls-san", "localhost",
		"-xds-force-start"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := runUntilEnd(t, o)
	conn, err := grpc.NewClient(addrs[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rls := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}}}
	limit := func() (uint32, error) {
		r, err := rls.ShouldRateLimit(ctx, req)
		if err != nil || r.Statuses[0].CurrentLimit == nil {
			return 0, err
		}
		return r.Statuses[0].CurrentLimit.RequestsPerUnit, nil
	}
	poll.Until(t, 10*time.Second, "serving without a policy", func() bool { n, err := limit(); return err == nil && n == 0 })

	m := xdstest.Start(t, ca.Server(t), ca, addrs[2])
	m.Set(t, "1", xdstest.Edge(3, rlsconf.RateLimitUnit_MINUTE))
	poll.Until(t, 15*time.Second, "the policy once the server is up", func() bool { n, _ := limit(); return n == 3 })
}

// TestEnvoyGatewayBadCertificates: Envoy Gateway's variables with a certificate and a
// key that do not match, or a CA file holding no certificate, stop the start with
// the setting named, before anything listens or dials.
func TestEnvoyGatewayBadCertificates(t *testing.T) {
	defer func(old func(string) string) { getenv = old }(getenv)
	ca := testpki.NewCA(t, "envoy-gateway")
	a, b := ca.Server(t), ca.Client(t, "other") // two pairs, two keys
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"gRPC server key of another certificate", map[string]string{"GRPC_SERVER_TLS_KEY": b.KeyFile}, "private key does not match public key"},
		{"gRPC server CA without a certificate", map[string]string{"GRPC_SERVER_TLS_CA_CERT": a.KeyFile}, "holds no PEM certificate"},
		{"xDS client key of another certificate", map[string]string{"CONFIG_GRPC_XDS_CLIENT_TLS_KEY": b.KeyFile}, "-xds-tls-cert: tls: private key does not match public key"},
		{"xDS server CA without a certificate", map[string]string{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": a.KeyFile}, "-xds-tls-ca: no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := envoyGatewayEnv(t.TempDir(), "127.0.0.1:1", "127.0.0.1:0")
			for _, k := range []string{"GRPC_SERVER_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT"} {
				env[k] = a.CertFile
			}
			for _, k := range []string{"GRPC_SERVER_TLS_KEY", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY"} {
				env[k] = a.KeyFile
			}
			for _, k := range []string{"GRPC_SERVER_TLS_CA_CERT", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT"} {
				env[k] = ca.CertFile
			}
			maps.Copy(env, tc.env)
			getenv = envOf(env)
			o, err := parseFlags([]string{"-addr", "127.0.0.1:0", "-rls-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"}, io.Discard)
			if err == nil {
				// Should it start, it would wait for the absent xDS server: the
				// deadline ends the wait, and the nil error fails the case.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err = run(ctx, o, slog.New(slog.DiscardHandler))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}
