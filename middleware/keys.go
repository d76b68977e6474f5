package middleware

import (
	"strings"
)

// Keys says what a dimension's key is made of: one or more of ByUser, ByIP and
// ByRoute, combined with |.
type Keys uint8

// The parts of a key.
const (
	// ByUser is Config.User's answer for the request. A request it answers "" for
	// (anonymous) skips the dimension.
	ByUser Keys = 1 << iota
	// ByIP is the client's IP address, as Limiter.ClientIP finds it.
	ByIP
	// ByRoute is Config.Route's answer for the request.
	ByRoute
)

// makeKey is the key of prefix and the parts by says, for a request with these parts;
// false if it lacks one (no user).
func makeKey(prefix string, by Keys, user, ip, route string) (string, bool) {
	if by&ByUser != 0 && user == "" {
		return "", false
	}
	var b strings.Builder
	b.WriteString(prefix)
	sep := false
	for _, part := range []struct {
		by    Keys
		value string
	}{{ByUser, user}, {ByIP, ip}, {ByRoute, route}} {
		if by&part.by == 0 {
			continue
		}
		if sep {
			b.WriteByte('|')
		}
		sep = true
		writeEscaped(&b, part.value)
	}
	return b.String(), true
}

// writeEscaped writes s with '|' and '\' escaped by '\', so that a key's parts never
// run into each other ("a|b" + "c" against "a" + "b|c").
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '|' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}
