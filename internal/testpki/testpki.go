// Package testpki makes throwaway certificate authorities and certificates for
// tests of TLS and mutual TLS, written as PEM files.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority whose certificate is CertFile.
type CA struct {
	CertFile string
	Pool     *x509.CertPool // trusts the CA
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	dir      string
}

// Pair is a certificate and its key, as files and as a tls.Certificate.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// NewCA makes a CA named name, its files in a test directory.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		// Not the name of a certificate it issues: OpenSSL takes a certificate whose
		// subject is its issuer's for self-signed.
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Pool: x509.NewCertPool(), cert: cert, key: key, dir: t.TempDir()}
	ca.Pool.AddCert(cert)
	ca.CertFile = filepath.Join(ca.dir, name+"-ca.pem")
	write(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Server issues a server certificate for localhost and 127.0.0.1.
func (ca *CA) Server(t testing.TB) Pair {
	return ca.issue(t, "server", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
}

// Client issues a client certificate whose subject alternative names are dnsNames.
func (ca *CA) Client(t testing.TB, name string, dnsNames ...string) Pair {
	return ca.issue(t, name, x509.ExtKeyUsageClientAuth, dnsNames, nil)
}

func (ca *CA) issue(t testing.TB, name string, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) Pair {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dnsNames, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{CertFile: filepath.Join(ca.dir, name+".pem"), KeyFile: filepath.Join(ca.dir, name+".key")}
	write(t, p.CertFile, "CERTIFICATE", der)
	write(t, p.KeyFile, "PRIVATE KEY", keyDER)
	if p.TLS, err = tls.LoadX509KeyPair(p.CertFile, p.KeyFile); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func write(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
