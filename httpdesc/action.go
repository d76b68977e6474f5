// Package httpdesc turns an HTTP request into rate limit descriptors, with the words
// of Envoy's rate limit actions, and answers the decision in headers (Names.Answer), so
// that a gateway's /check and a Go service's middleware name descriptors, find the
// client's address (ClientIP) and answer the same way, and share one policy file.
//
// A descriptor is a comma-separated list of actions, each one entry:
//
//	remote_address            remote_address = the client's address (see ClientIP)
//	request_headers:H:KEY     KEY = header H's value; a missing header drops the descriptor
//	request_headers:H:KEY:skip_if_absent  the same, but a missing header skips only this
//	                          entry (Envoy's skip_if_absent): a priority class's header
//	generic_key:VALUE[:KEY]   KEY (default generic_key) = VALUE
//	method[:KEY]              KEY (default method) = the original request's method
//	path[:KEY]                KEY (default path) = the original path, query stripped
//	host[:KEY]                KEY (default host) = the original host
//
// Of a gateway's auth subrequest (Options.Subrequest), the original request is told by
// the headers gateways send: X-Forwarded-Method / X-Original-Method, X-Original-URI /
// X-Forwarded-Uri / X-Forwarded-Prefix (or Options.URI), X-Forwarded-Host / X-Original-Host (without
// them: the subrequest's method and host, and no path: the descriptor is dropped). Of
// a service's own request (the middleware), the request itself: a client cannot
// choose its key by sending those headers.
//
// The name says what goes in and out, an HTTP request and its descriptors; "action"
// is only Envoy's word for one entry's rule.
package httpdesc

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/rlserver/rlserver/policy"
)

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("action: bad descriptor")

// The entry keys Envoy's actions give by default (remote_address, generic_key), and ours.
const (
	KeyRemoteAddress = "remote_address"
	KeyGenericKey    = "generic_key"
	KeyMethod        = "method"
	KeyPath          = "path"
	KeyHost          = "host"
)

type kind uint8

const (
	remoteAddress kind = iota
	requestHeader
	genericKey
	method
	path
	host
)

// act is one parsed action: the entry's key and how its value is found.
type act struct {
	kind   kind
	key    string
	header string // requestHeader: canonical header name
	value  string // genericKey
	skip   bool   // requestHeader: a missing header skips the entry, not the descriptor
}

// Descriptor is one parsed descriptor: its actions in order.
type Descriptor struct{ acts []act }

// Len is how many entries d builds when it applies.
func (d Descriptor) Len() int { return len(d.acts) }

// Parse parses one descriptor spec, e.g. "remote_address,path" or
// "request_headers:X-Api-Key:api_key".
func Parse(spec string) (Descriptor, error) {
	if spec == "" {
		return Descriptor{}, fmt.Errorf("%w: empty descriptor", ErrSyntax)
	}
	parts := strings.Split(spec, ",")
	if len(parts) > policy.MaxEntries {
		return Descriptor{}, fmt.Errorf("%w: %d actions, more than %d", ErrSyntax, len(parts), policy.MaxEntries)
	}
	d := Descriptor{acts: make([]act, 0, len(parts))}
	for _, p := range parts {
		a, err := parseAct(p)
		if err != nil {
			return Descriptor{}, err
		}
		d.acts = append(d.acts, a)
	}
	return d, nil
}

// parseAct parses one action.
func parseAct(p string) (act, error) {
	word, rest, found := strings.Cut(p, ":")
	var fields []string
	if found {
		fields = strings.Split(rest, ":")
	}
	bad := func(why string) (act, error) {
		return act{}, fmt.Errorf("%w: %q: %s", ErrSyntax, shorten(p), why)
	}
	optKey := func(k kind, def string) (act, error) {
		switch len(fields) {
		case 0:
			return act{kind: k, key: def}, nil
		case 1:
			if fields[0] == "" {
				return bad("empty key")
			}
			return act{kind: k, key: fields[0]}, nil
		}
		return bad("takes at most a key")
	}
	switch word {
	case "remote_address":
		return optKey(remoteAddress, KeyRemoteAddress)
	case "method":
		return optKey(method, KeyMethod)
	case "path":
		return optKey(path, KeyPath)
	case "host":
		return optKey(host, KeyHost)
	case "request_headers":
		skip := len(fields) == 3 && fields[2] == "skip_if_absent"
		if len(fields) != 2 && !skip || fields[0] == "" || fields[1] == "" {
			return bad("want request_headers:HEADER:KEY or request_headers:HEADER:KEY:skip_if_absent")
		}
		return act{kind: requestHeader, header: http.CanonicalHeaderKey(fields[0]), key: fields[1], skip: skip}, nil
	case "generic_key":
		switch {
		case len(fields) == 1 && fields[0] != "":
			return act{kind: genericKey, key: KeyGenericKey, value: fields[0]}, nil
		case len(fields) == 2 && fields[0] != "" && fields[1] != "":
			return act{kind: genericKey, key: fields[1], value: fields[0]}, nil
		}
		return bad("want generic_key:VALUE or generic_key:VALUE:KEY")
	}
	return bad("unknown action (remote_address, request_headers, generic_key, method, path, host)")
}

// shorten keeps an error message one short line whatever the input's size.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Options say where Build finds what the actions read.
type Options struct {
	// Trusted are the proxies whose forwarded client address is believed.
	Trusted []netip.Prefix
	// Subrequest: r is a gateway's auth subrequest, telling the original request in
	// forwarding headers.
	Subrequest bool
	// URI, when not empty, is the original request's URI as the subrequest's own URL
	// carries it (Envoy's ext_authz appends it to path_prefix): it wins over the headers.
	URI string
}

// Build appends d's entries for r to dst and reports whether the descriptor applies:
// false when a header it reads is missing (unless skip_if_absent: then that entry
// alone is left out), or a subrequest tells no path (Envoy drops the descriptor then).
func (d Descriptor) Build(dst []policy.Entry, r *http.Request, o Options) ([]policy.Entry, bool) {
	for _, a := range d.acts {
		var v string
		switch a.kind {
		case remoteAddress:
			v = ClientIP(r, o.Trusted).String()
		case requestHeader:
			vs := r.Header[a.header] // canonical since Parse
			if len(vs) == 0 && a.skip {
				continue
			}
			if len(vs) == 0 {
				return dst, false
			}
			v = strings.Join(vs, ",")
		case genericKey:
			v = a.value
		case method:
			if v = r.Method; o.Subrequest {
				v = cmp.Or(first(r.Header, "X-Forwarded-Method", "X-Original-Method"), r.Method)
			}
		case path:
			if v = r.URL.Path; o.Subrequest {
				v, _, _ = strings.Cut(cmp.Or(o.URI, first(r.Header, "X-Original-Uri", "X-Forwarded-Uri", "X-Forwarded-Prefix")), "?")
			}
			if v == "" {
				return dst, false
			}
		case host:
			if v = r.Host; o.Subrequest {
				v = cmp.Or(first(r.Header, "X-Forwarded-Host", "X-Original-Host"), r.Host)
			}
		}
		dst = append(dst, policy.Entry{Key: a.key, Value: v})
	}
	return dst, true
}

// first is the first of names (canonical) that h carries, or "".
func first(h http.Header, names ...string) string {
	for _, n := range names {
		if vs := h[n]; len(vs) > 0 && vs[0] != "" {
			return vs[0]
		}
	}
	return ""
}

// Loopback is the default trusted proxies: 127.0.0.0/8 and ::1.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// ParsePrefixes parses a comma-separated list of CIDRs or single addresses.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix parses a trusted proxy: a CIDR, or one address as a prefix of its full
// length (IPv4-mapped IPv6 read as IPv4).
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not a CIDR or an address", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ClientIP is r's client address, the one rule of /check and the middleware. It is
// the peer's address, unless the peer is a trusted proxy: then X-Forwarded-For is
// read from the right (the hop the proxy added) leftwards past the trusted proxies,
// and the first address not trusted is the client; everything left of it could be
// forged. When every hop is trusted, or a hop is no address (what is left of it is
// the client's own claim), X-Real-IP when it is an address, else the last trusted hop
// reached (the peer when there is none), grouping its clients under one key rather
// than believing garbage. Hops may carry a port. A peer that is no address (a Unix
// socket) is the zero Addr, "invalid IP".
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := parseHost(r.RemoteAddr)
	if !isTrusted(addr, trusted) {
		return addr
	}
	h := r.Header
	hops := h["X-Forwarded-For"]
walk:
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
				break walk
			}
			if !isTrusted(a, trusted) {
				return a
			}
			addr = a
		}
	}
	if vs := h["X-Real-Ip"]; len(vs) > 0 {
		if a, err := netip.ParseAddr(strings.TrimSpace(vs[0])); err == nil {
			return a.Unmap()
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
	a, _ := netip.ParseAddr(s)
	return a.Unmap()
}

// isTrusted reports whether a is within trusted; the zero Addr never is.
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
