package resp

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		nocase     bool
		want       bool
	}{
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"save", "save", false, true},
		{"save", "sav", false, false},
		{"SAVE", "save", true, true},
		{"SAVE", "save", false, false},
		{"max*", "maxmemory-policy", false, true},
		{"*memory*", "maxmemory-policy", false, true},
		{"*y", "maxmemory-policy", false, true},
		{"*x", "maxmemory-policy", false, false},
		{"m?x*", "maxmemory", false, true},
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-c]llo", "hbllo", false, true},
		{"h[c-a]llo", "hbllo", false, true}, // a reversed range, as Redis reads it
		{"h[A-C]llo", "hbllo", true, true},
		{`h\*llo`, "h*llo", false, true},
		{`h\*llo`, "hello", false, false},
		{`h[\]]llo`, "h]llo", false, true},
		{"h[ab", "ha", false, true}, // an unterminated class ends with the pattern
		{`a\`, `a\`, false, true},
		{"client|*", "client|setname", false, true},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxbyy", false, false},
	} {
		if got := globMatch(tc.pattern, tc.s, tc.nocase); got != tc.want {
			t.Errorf("globMatch(%q, %q, %v) = %v, want %v", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
}

// BenchmarkGlobMatchWorstCase: many stars against a long non-matching string stay
// polynomial (the recursive form is exponential here).
func BenchmarkGlobMatchWorstCase(b *testing.B) {
	pattern := strings.Repeat("a*", 20) + "b"
	s := strings.Repeat("a", 200)
	for b.Loop() {
		if globMatch(pattern, s, false) {
			b.Fatal("matched")
		}
	}
}
