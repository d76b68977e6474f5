package middleware

import (
	"net/http"
	"net/netip"

	"github.com/rlserver/rlserver/httpdesc"
)

// ClientIP is the address of the client that sent r, by the one rule /check follows
// too (httpdesc.ClientIP): the peer's address, unless the peer is one of
// Config.TrustedProxies; then the rightmost address of X-Forwarded-For that is not a
// trusted proxy (everything left of it could be forged by the client). When every hop
// is trusted, or a hop is not an address, X-Real-IP if it is one, else the last
// trusted hop (grouping its clients under one key rather than believing garbage). A
// trusted proxy must therefore set or clear X-Forwarded-For and X-Real-IP. An
// unreadable peer address gives the zero Addr, and the key "invalid IP".
func (l *Limiter) ClientIP(r *http.Request) netip.Addr { return httpdesc.ClientIP(r, l.trusted) }
