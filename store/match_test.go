package store

import (
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, str string
		want         bool
	}{
		// The examples of Redis's KEYS documentation.
		{"h?llo", "hello", true},
		{"h?llo", "hallo", true},
		{"h?llo", "hxllo", true},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hbllo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hallo", true},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		// "Use \ to escape special characters if you want to match them verbatim."
		{`h\?llo`, "h?llo", true},
		{`h\?llo`, "hello", false},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`[\]]`, "]", true},
		{`[\-]`, "-", true},
		{`[\-]`, "a", false},
		{`x\`, `x\`, true}, // a trailing backslash is itself
		// Redis's tests (tests/unit/keyspace.tcl and util.c).
		{"foo*", "foo_a", true},
		{"foo*", "key_x", false},
		{"*", "anything", true},
		{"*", "", false}, // the commands special-case "*"; stringmatchlen does not match ""
		{"", "", true},
		{"", "a", false},
		{"a*", "a", true},
		{"*a", "a", true},
		{"a**b", "ab", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"?", "", false},
		{"??", "a", false},
		{"[abc]", "", false},
		// Sets: reversed ranges, open sets, and '/' is an ordinary byte.
		{"[z-a]", "m", true},
		{"[a-]", "-", false}, // as in Redis, ']' ends the range a-] ...
		{"[a-]", "_", true},  // ... which holds ] ^ _ ` a, and the set stays open
		{"[a-", "a", true},   // an open set ends with the pattern
		{"[a-", "b", false},
		{"[^", "x", true},
		{"[", "x", false},
		{"a[b", "ab", true},
		{"user/*", "user/1/x", true},
		{"*/x", "user/1/x", true},
		{"*", "a/b", true},
		// Redis compares range ends as C's signed char: [a-\xff] is [\xff-a].
		{"[a-\xff]", "b", false},
		{"[a-\xff]", "\x00", true},
		{"[\x80-\xff]", "\x90", true},
		{"\xff?", "\xff\x00", true},
		// Binary-safe: NUL bytes are ordinary.
		{"a\x00*", "a\x00b", true},
		{"a?c", "a\x00c", true},
		// a*a*...*b against a run of a's: linear thanks to skipLonger, not 2^n.
		{strings.Repeat("a*", 30) + "b", strings.Repeat("a", 60), false},
		// Recursion deeper than 1000 '*' gives up, as Redis does.
		{strings.Repeat("*a", 1000), strings.Repeat("a", 1000), true},
		{strings.Repeat("*a", 1001), strings.Repeat("a", 1001), false},
	}
	for _, tt := range tests {
		if got := Match([]byte(tt.pattern), []byte(tt.str), false); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.str, got, tt.want)
		}
	}
}

// TestMatchNocase covers the case-insensitive form CONFIG GET and COMMAND LIST use.
func TestMatchNocase(t *testing.T) {
	tests := []struct {
		pattern, str string
		want         bool
	}{
		{"SAVE", "save", true},
		{"max*", "MAXMEMORY-policy", true},
		{"h[A-C]llo", "hbllo", true},
		{"h[a-c]llo", "HBLLO", true},
		{"h[^E]llo", "hello", false},
		{`h\E*`, "hello", true},
		{"client|*", "CLIENT|setname", true},
		{"save", "sav", false},
	}
	for _, tt := range tests {
		if got := Match([]byte(tt.pattern), []byte(tt.str), true); got != tt.want {
			t.Errorf("Match(%q, %q, nocase) = %v, want %v", tt.pattern, tt.str, got, tt.want)
		}
		if tt.want && tt.pattern != tt.str && Match([]byte(tt.pattern), []byte(tt.str), false) {
			t.Errorf("Match(%q, %q) matched without nocase", tt.pattern, tt.str)
		}
	}
}
