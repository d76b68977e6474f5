package resp

import (
	"crypto/tls"
	"fmt"
	"net"
)

// loadTLS reads the server's certificate and key. No client certificate is asked
// for: clients authenticate with the password, as with Redis's tls-auth-clients no.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("resp: TLS certificate %q and key %q: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ServeTLS is Serve over TLS: it accepts connections on ln, a plain TCP listener,
// and serves them with Config's certificate through the same command dispatch. It
// may run alongside Serve; Close stops both. It returns ErrNoTLS if Config has no
// certificate, ErrServerClosed as Serve does.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.tlsConfig == nil {
		ln.Close()
		return ErrNoTLS
	}
	return s.serve(tls.NewListener(ln, s.tlsConfig), &s.tlsLn, s.rcTLS)
}

// TLSAddr is the address ServeTLS listens on, or nil before ServeTLS.
func (s *Server) TLSAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}
