package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/policy"
)

// Match finds the rule of a descriptor's entries (nil: none) as envoyproxy/ratelimit's
// GetLimit does: depth by depth, "key_value" first, then the first wildcard "key_prefix*" of
// the level in file order, then "key" alone; a rule counts only at the last entry,
// and the walk stops at a descriptor without children. shared holds, per entry
// matched through a share_threshold wildcard, the value pattern its state is kept
// under (nil when none).
func (d *Domain) Match(entries []policy.Entry) (r *Rule, shared []string) {
	var buf [128]byte
	parent := d.root
	for i, e := range entries {
		fk := append(append(append(buf[:0], e.Key...), '_'), e.Value...)
		next := parent.children[string(fk)]
		viaWildcard := false
		if next == nil {
			for _, w := range parent.wildcards {
				p := w[:len(w)-1]
				if len(fk) >= len(p) && string(fk[:len(p)]) == p {
					next, viaWildcard = parent.children[w], true
					break
				}
			}
		}
		if next == nil {
			next = parent.children[e.Key]
		}
		if next == nil {
			break
		}
		if viaWildcard && next.pattern != "" {
			if shared == nil {
				shared = make([]string, len(entries))
			}
			shared[i] = strings.TrimPrefix(next.pattern, e.Key+"_")
		}
		if next.rule != nil && i == len(entries)-1 {
			r = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		parent = next
	}
	return r, shared
}

// AppendKey appends to b the store key of the state of a descriptor's entries under r,
// shared as Match gave it: "rl:DOMAIN:fixed/60s:key=value:key2=value2". The algorithm and window are
// part of the name, so a reload that changes them starts afresh instead of misreading
// another algorithm's state; the limit is not, so a changed limit keeps the counts (as
// envoyproxy/ratelimit's keys do). They come before the entries so that all of a rule's
// keys share their first bytes (Rule.KeyPrefix), which the store interns.
// Separators inside names are escaped (escape).
func (r *Rule) AppendKey(b []byte, entries []policy.Entry, shared []string) []byte {
	return appendKey(b, r.Domain, entries, shared, r.Request.Kind.String()[3:], r.Window)
}

// appendKey is AppendKey of a rule of domain, algorithm kindName and window.
func appendKey(b []byte, domain string, entries []policy.Entry, shared []string, kindName string, window time.Duration) []byte {
	b = appendRulePrefix(b, domain, kindName, window)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ':')
		}
		b = escape(b, e.Key)
		b = append(b, '=')
		if shared != nil && shared[i] != "" {
			b = escape(b, shared[i])
		} else {
			b = escape(b, e.Value)
		}
	}
	return b
}

// appendRulePrefix appends "rl:DOMAIN:fixed/60s:", the start of every key of a rule.
func appendRulePrefix(b []byte, domain string, kindName string, window time.Duration) []byte {
	b = append(b, "rl:"...)
	b = escape(b, domain)
	b = append(b, ':')
	b = append(b, kindName...)
	b = append(b, '/')
	b = appendWindow(b, window)
	return append(b, ':')
}

// appendWindow writes a window in whole seconds, milliseconds or microseconds: 60s,
// 1500ms, 250us.
func appendWindow(b []byte, w time.Duration) []byte {
	switch {
	case w%time.Second == 0:
		return append(strconv.AppendInt(b, int64(w/time.Second), 10), 's')
	case w%time.Millisecond == 0:
		return append(strconv.AppendInt(b, int64(w/time.Millisecond), 10), "ms"...)
	}
	return append(strconv.AppendInt(b, int64(w/time.Microsecond), 10), "us"...)
}

// escape appends s with '%', the separators ':' and '=', the hash-tag braces '{' '}'
// (a value must not pick the cluster slot) and bytes below '!' or DEL written as %XX,
// so that distinct descriptors never share a key and the rest reads as given.
func escape(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' || c == ':' || c == '=' || c == '{' || c == '}' || c < '!' || c == 0x7f:
			b = append(b, '%', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}
