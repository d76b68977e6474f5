package resp

import (
	"crypto/tls"

	"github.com/rlserver/rlserver/store"
)

// What the fronts beside RESP (package rls) stand on, until the shared core has a
// package of its own: the store, the clock, the role and the TLS files.

// Store is the server's store: the state every front decides on.
func (s *Server) Store() *store.Store { return s.store }

// Now is the server's clock in µs since the epoch (DEBUG CLOCK included).
func (s *Server) Now() int64 { return s.clock.now() }

// Primary reports whether the server takes writes: false on a replica.
func (s *Server) Primary() bool { return !s.repl.readOnly.Load() }

// TLSConfig is the configuration from Config.TLSCertFile and TLSKeyFile; nil without.
func (s *Server) TLSConfig() *tls.Config { return s.tlsConfig }
