package middleware

import (
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP is the address of the client that sent r. It is the peer's address, unless
// the peer is a trusted proxy: then X-Forwarded-For is read from the right (the hop
// the proxy itself added) leftwards, skipping trusted proxies, and the first address
// not trusted is the client. Everything left of it could be forged by the client.
// If every hop is trusted, the leftmost is the client; if a hop is not an address,
// the last trusted one is (grouping its clients under one key rather than believing
// garbage). An unreadable peer address gives the zero Addr, and the key "invalid IP".
func (l *Limiter) ClientIP(r *http.Request) netip.Addr {
	addr := parseHost(r.RemoteAddr)
	if !l.isTrusted(addr) {
		return addr
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		line := hops[i]
		for line != "" {
			var hop string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				line, hop = line[:j], line[j+1:]
			} else {
				line, hop = "", line
			}
			a := parseHost(strings.TrimSpace(hop))
			if !a.IsValid() {
				return addr
			}
			addr = a
			if !l.isTrusted(a) {
				return a
			}
		}
	}
	return addr
}

// parseHost reads an address with or without a port ("192.0.2.1", "192.0.2.1:80",
// "[2001:db8::1]:80"), IPv4-mapped IPv6 read as IPv4; the zero Addr if it is none.
func parseHost(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// isTrusted reports whether a is within Config.TrustedProxies.
func (l *Limiter) isTrusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parsePrefix reads a Config.TrustedProxies entry: a CIDR, or one address as a
// prefix of its full length.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
