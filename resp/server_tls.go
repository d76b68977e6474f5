package resp

import (
	"crypto/tls"
	"net"
)

// ServeTLS is Serve over TLS: it accepts connections on ln, a plain TCP listener,
// and serves them with the core's certificate (core.Core.TLSConfig) through the same command dispatch. It
// may run alongside Serve; Close stops both. It returns ErrNoTLS if Config has no
// certificate, ErrServerClosed as Serve does.
func (s *Server) ServeTLS(ln net.Listener) error {
	tc := s.core.TLSConfig()
	if tc == nil {
		ln.Close()
		return ErrNoTLS
	}
	return s.serve(tls.NewListener(ln, tc), &s.tlsLn, s.rcTLS)
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
