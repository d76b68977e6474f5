package core

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// loadTLS checks cfg's TLS settings, sets TLSAuthClients' default, and reads the
// files: nil without a certificate.
func loadTLS(cfg *Config) (*tls.Config, error) {
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("core: TLSCertFile and TLSKeyFile go together: set both or neither")
	}
	if cfg.TLSAuthClients == "" {
		cfg.TLSAuthClients = "no"
		if cfg.TLSCACertFile != "" {
			cfg.TLSAuthClients = "yes"
		}
	}
	var auth tls.ClientAuthType
	switch cfg.TLSAuthClients {
	case "no":
		auth = tls.NoClientCert
	case "optional":
		auth = tls.VerifyClientCertIfGiven
	case "yes":
		auth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("core: TLSAuthClients must be yes, no or optional, got %q", cfg.TLSAuthClients)
	}
	switch {
	case auth != tls.NoClientCert && cfg.TLSCACertFile == "":
		return nil, fmt.Errorf("core: TLSAuthClients %s needs TLSCACertFile, the CAs that sign the clients' certificates", cfg.TLSAuthClients)
	case cfg.TLSCACertFile != "" && cfg.TLSCertFile == "":
		return nil, errors.New("core: TLSCACertFile needs TLSCertFile and TLSKeyFile")
	case cfg.TLSClientSAN != "" && auth == tls.NoClientCert:
		return nil, errors.New("core: TLSClientSAN needs client certificates: TLSAuthClients yes or optional")
	}
	if cfg.TLSCertFile == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("core: TLS certificate %q and key %q: %w", cfg.TLSCertFile, cfg.TLSKeyFile, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, ClientAuth: auth}
	if cfg.TLSCACertFile != "" {
		pem, err := os.ReadFile(cfg.TLSCACertFile)
		if err != nil {
			return nil, fmt.Errorf("core: TLSCACertFile: %w", err)
		}
		tc.ClientCAs = x509.NewCertPool()
		if !tc.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("core: TLSCACertFile %q holds no PEM certificate", cfg.TLSCACertFile)
		}
	}
	if san := cfg.TLSClientSAN; san != "" {
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil // optional and none given: the password decides
			}
			if !hasSAN(cs.PeerCertificates[0], san) {
				return fmt.Errorf("client certificate has no subject alternative name %q", san)
			}
			return nil
		}
	}
	return tc, nil
}

// hasSAN reports whether cert names san among its DNS names, IP addresses, URIs or
// e-mail addresses.
func hasSAN(cert *x509.Certificate, san string) bool {
	if slices.Contains(cert.DNSNames, san) || slices.Contains(cert.EmailAddresses, san) {
		return true
	}
	for _, ip := range cert.IPAddresses {
		if ip.String() == san {
			return true
		}
	}
	for _, u := range cert.URIs {
		if u.String() == san {
			return true
		}
	}
	return false
}
