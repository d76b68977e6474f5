package core

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/testpki"
)

// TestTLSSettings: the client-certificate settings, good and bad, each refused with
// the setting to fix.
func TestTLSSettings(t *testing.T) {
	ca := testpki.NewCA(t, "clients")
	srv := ca.Server(t)
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	withCert := func(cfg Config) Config {
		cfg.TLSCertFile, cfg.TLSKeyFile = srv.CertFile, srv.KeyFile
		return cfg
	}
	for _, tc := range []struct {
		name     string
		cfg      Config
		wantAuth tls.ClientAuthType
		wantErr  string
	}{
		{"no certificate", Config{}, 0, ""},
		{"server only", withCert(Config{}), tls.NoClientCert, ""},
		{"a CA: required", withCert(Config{TLSCACertFile: ca.CertFile}), tls.RequireAndVerifyClientCert, ""},
		{"optional", withCert(Config{TLSCACertFile: ca.CertFile, TLSAuthClients: "optional"}), tls.VerifyClientCertIfGiven, ""},
		{"no, with a CA", withCert(Config{TLSCACertFile: ca.CertFile, TLSAuthClients: "no"}), tls.NoClientCert, ""},
		{"SAN", withCert(Config{TLSCACertFile: ca.CertFile, TLSClientSAN: "envoy"}), tls.RequireAndVerifyClientCert, ""},
		{"yes without a CA", withCert(Config{TLSAuthClients: "yes"}), 0, "TLSAuthClients yes needs TLSCACertFile"},
		{"optional without a CA", withCert(Config{TLSAuthClients: "optional"}), 0, "TLSAuthClients optional needs TLSCACertFile"},
		{"bad word", withCert(Config{TLSCACertFile: ca.CertFile, TLSAuthClients: "maybe"}), 0, `TLSAuthClients must be yes, no or optional, got "maybe"`},
		{"a CA without a certificate", Config{TLSCACertFile: ca.CertFile}, 0, "TLSCACertFile needs TLSCertFile and TLSKeyFile"},
		{"SAN without client certificates", withCert(Config{TLSClientSAN: "envoy"}), 0, "TLSClientSAN needs client certificates"},
		{"CA file missing", withCert(Config{TLSCACertFile: notPEM + ".gone"}), 0, "no such file"},
		{"CA file not PEM", withCert(Config{TLSCACertFile: notPEM}), 0, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tc2 := c.TLSConfig()
			if tc.cfg.TLSCertFile == "" {
				if tc2 != nil {
					t.Fatalf("a TLS config without a certificate")
				}
				return
			}
			if tc2.ClientAuth != tc.wantAuth || (tc.cfg.TLSCACertFile != "") != (tc2.ClientCAs != nil) {
				t.Fatalf("ClientAuth %v (CAs %v), want %v", tc2.ClientAuth, tc2.ClientCAs != nil, tc.wantAuth)
			}
		})
	}
}
