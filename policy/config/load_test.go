package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/policy"

	"github.com/rlserver/rlserver/algo"
)

// TestParseRefuses is a table of bad policy files, each with the error it must give:
// envoyproxy/ratelimit's wording where it refuses the same thing, the line, and the
// descriptor's path.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"empty domain", "descriptors:\n", "p.yaml:1: config file cannot have empty domain"},
		{"empty file", "", "p.yaml: config file cannot have empty domain"},
		{"empty key", "domain: d\ndescriptors:\n  - value: v\n", "p.yaml:3: descriptor 'd': descriptor has empty key"},
		{"duplicate key", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b\n",
			"p.yaml:5: descriptor 'd': duplicate descriptor composite key 'd.a_b'"},
		{"key_value collides with key", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a_b\n",
			"duplicate descriptor composite key 'd.a_b'"},
		{"bad unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n",
			"p.yaml:4: descriptor 'd.a': invalid rate limit unit 'fortnight'"},
		{"no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      requests_per_unit: 1\n", "invalid rate limit unit ''"},
		{"unknown unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: unknown\n", "invalid rate limit unit 'unknown'"},
		{"misspelled rate_limit", "domain: d\ndescriptors:\n  - key: a\n    ratelimit:\n      unit: day\n",
			"p.yaml:4: config error, unknown key 'ratelimit'"},
		{"misspelled nested", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit:\n          unit: day\n          requestsperunit: 5\n",
			"p.yaml:8: config error, unknown key 'requestsperunit'"},
		{"non-map list", "domain: d\ndescriptors:\n  - a\n  - b\n", "p.yaml:3: config error, yaml file contains list of type other than map: a"},
		{"non-string key", "0.25: d\n", "p.yaml:1: config error, key is not of type string: 0.25"},
		{"float value", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n      requests_per_unit: 1.5\n",
			"p.yaml:6: error checking config"},
		{"replaces empty", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: n\n      unit: day\n      replaces:\n        - name:\n",
			"descriptor 'd.a': should not have an empty replaces entry"},
		{"replaces self", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: n\n      unit: day\n      replaces:\n        - name: n\n",
			"replaces should not contain name of same descriptor"},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: day\n",
			"should not specify rate limit unit when unlimited"},
		{"bad yaml", "'''\n", "p.yaml:2: error loading config file: yaml: line 2: found unexpected end of stream"},
		{"list at the top", "- domain: d\n", "p.yaml:1: error loading config file: the document is a list, not a map"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n",
			"share_threshold can only be used with wildcard values (ending with '*'), but found key 'a_b'"},
		{"negative requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n      requests_per_unit: -1\n",
			"p.yaml:6: descriptor 'd.a': requests_per_unit: '-1' is not an integer between 0 and 4294967295"},
		{"requests past uint32", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n      requests_per_unit: 4294967296\n",
			"'4294967296' is not an integer between 0 and 4294967295"},
		{"key is a map", "domain: d\ndescriptors:\n  - key: {value: x}\n", "p.yaml:3: descriptor 'd': key: cannot unmarshal a map into a string"},
		{"bool is a word", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", "shadow_mode: cannot unmarshal 'maybe' into a boolean"},
		{"key given twice", "domain: d\ndomain: e\n", "p.yaml:2: key 'domain' given twice in one map"},
		{"misplaced unit", "domain: d\ndescriptors:\n  - key: a\n    unit: day\n", "p.yaml:4: descriptor 'd': 'unit' is not a key of a descriptor"},
		// rlserver's extensions.
		{"unknown algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n      requests_per_unit: 5\n      algorithm: magic\n",
			"descriptor 'd.a': unknown algorithm 'magic'"},
		{"unit and window", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n      window: 90s\n", "give unit or window, not both"},
		{"bad window", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      window: soon\n      requests_per_unit: 5\n", "window 'soon' is not a duration"},
		{"window too long", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      window: 9000h\n      requests_per_unit: 5\n", "window '9000h' is not a duration"},
		{"burst on fixed", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      window: 1m\n      requests_per_unit: 5\n      burst: 3\n",
			"burst applies to the token, gcra and leaky algorithms"},
		{"slide of 0", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: minute\n      requests_per_unit: 0\n      algorithm: slide\n",
			"requests_per_unit must be between 1 and 1000000000 for algorithm slide"},
		{"log too long", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: minute\n      requests_per_unit: 100001\n      algorithm: log\n",
			"requests_per_unit must be at most 100000 for algorithm log"},
		{"gcra span", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: year\n      requests_per_unit: 1\n      algorithm: gcra\n      burst: 1000\n",
			"burst and window out of range"},
		{"unlimited with window", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      window: 1m\n", "an unlimited rate_limit takes no window"},
		{"all_or_nothing not bool", "domain: d\nall_or_nothing: 3\n", "all_or_nothing: cannot unmarshal '3' into a boolean"},
		// Priorities (docs/policies.md): classes highest first, each leaving at least what
		// the one above it leaves, at most 100%, a default among them.
		{"priorities not ordered", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - name: critical\n    - name: batch\n      reserve_percent: 50\n    - name: normal\n      reserve_percent: 20\n",
			"p.yaml:8: priorities not ordered: 'normal' leaves 20%, less than the 50% of 'batch' above it"},
		{"priority share over 100%", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - name: critical\n    - name: batch\n      reserve_percent: 120\n",
			"p.yaml:6: priority 'batch' leaves 120%: shares are at most 100%"},
		{"unknown default priority", "domain: d\npriorities:\n  descriptor_key: priority\n  default: urgent\n  classes:\n    - name: critical\n    - name: batch\n      reserve_percent: 20\n",
			"p.yaml:4: default: unknown priority 'urgent' (critical, batch)"},
		{"duplicate priority", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - name: a\n    - name: a\n", "p.yaml:6: duplicate priority 'a'"},
		{"priority without a name", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - reserve_percent: 5\n", "p.yaml:5: a priority class needs a name"},
		{"no classes", "domain: d\npriorities:\n  descriptor_key: priority\n", "p.yaml:2: priorities need at least one class"},
		{"no descriptor_key", "domain: d\npriorities:\n  classes:\n    - name: a\n", "p.yaml:2: priorities need a descriptor_key"},
		{"negative share", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - name: a\n      reserve_percent: -5\n", "p.yaml:6: reserve_percent: '-5' is not an integer"},
		{"priorities a list", "domain: d\npriorities:\n  - name: a\n", "p.yaml:3: priorities: cannot unmarshal a list into a map"},
		{"unknown class key", "domain: d\npriorities:\n  descriptor_key: priority\n  classes:\n    - name: a\n      share: 5\n", "p.yaml:6: config error, unknown key 'share'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("loaded %v, want error %q", p.Domains(), tc.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.File != "p.yaml" {
				t.Fatalf("error %T %v is not a *LoadError of p.yaml", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestParseAccepts is a table of good files and what they load to.
func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		entries    []policy.Entry
		want       string // the matched rule as "requests/window kind", "" for none
	}{
		{"minimal", "domain: d\n", []policy.Entry{{Key: "a", Value: "b"}}, ""},
		{"null descriptors", "domain: d\ndescriptors:\n", []policy.Entry{{Key: "a", Value: "b"}}, ""},
		{"integer value", "domain: d\ndescriptors:\n  - key: port\n    value: 8080\n    rate_limit: {unit: second, requests_per_unit: 3}\n",
			[]policy.Entry{{Key: "port", Value: "8080"}}, "3/1s fixed"},
		{"upper-case unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: MINUTE, requests_per_unit: 3}\n", []policy.Entry{{Key: "a", Value: "x"}}, "3/1m0s fixed"},
		{"yaml 1.1 booleans", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: yes\n    rate_limit: {unlimited: on}\n", []policy.Entry{{Key: "a", Value: "x"}}, "unlimited"},
		{"hex count", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: day, requests_per_unit: 0x10}\n", []policy.Entry{{Key: "a", Value: "x"}}, "16/24h0m0s fixed"},
		{"anchors", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &rl {unit: hour, requests_per_unit: 7}\n  - key: b\n    rate_limit: *rl\n",
			[]policy.Entry{{Key: "b", Value: "x"}}, "7/1h0m0s fixed"},
		{"window", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {window: 90s, requests_per_unit: 10, algorithm: slide}\n", []policy.Entry{{Key: "a", Value: "x"}}, "10/1m30s slide"},
		{"token burst", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {window: 15m, requests_per_unit: 10, algorithm: token, burst: 40}\n", []policy.Entry{{Key: "a", Value: "x"}}, "10/15m0s token"},
		{"month", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: month, requests_per_unit: 1}\n", []policy.Entry{{Key: "a", Value: "x"}}, "1/720h0m0s fixed"},
		{"priorities", "domain: d\npriorities:\n  descriptor_key: priority\n  default: normal\n  classes:\n    - name: critical\n    - name: normal\n      reserve_percent: 20\n    - name: all\n      reserve_percent: 100\n" +
			"descriptors:\n  - key: a\n    rate_limit: {unit: day, requests_per_unit: 3}\n", []policy.Entry{{Key: "a", Value: "x"}}, "3/24h0m0s fixed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			r, _ := p.domains["d"].Match(tc.entries)
			if got := ruleText(r); got != tc.want {
				t.Fatalf("matched %q, want %q", got, tc.want)
			}
		})
	}
}

func ruleText(r *Rule) string {
	switch {
	case r == nil:
		return ""
	case r.Unlimited:
		return "unlimited"
	}
	return strings.Join([]string{itoa(uint64(r.Requests)) + "/" + r.Window.String(), r.Request.Kind.String()[3:]}, " ")
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestParseExtensionsRequest checks the request template each algorithm gets.
func TestParseExtensionsRequest(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`domain: d
all_or_nothing: true
descriptors:
  - key: t
    rate_limit: {window: 15m, requests_per_unit: 10, algorithm: token, burst: 40}
  - key: g
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 5}
  - key: l
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: leaky, burst: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	d := p.domains["d"]
	if !d.allOrNothing {
		t.Fatal("all_or_nothing not read")
	}
	for key, want := range map[string]algo.Request{
		"t": {Kind: algo.KindToken, Limit: 40, Rate: 10, Window: 15 * 60e6, Cost: 1},
		"g": {Kind: algo.KindGCRA, Limit: 10, Burst: 5, Window: 1e6, Cost: 1},
		"l": {Kind: algo.KindLeaky, Limit: 10, Queue: 2, Window: 1e6, Cost: 1},
	} {
		if got := d.root.children[key].rule.Request; got != want {
			t.Errorf("%s: %+v, want %+v", key, got, want)
		}
	}
}

// TestLoadBounds checks the refusals of a huge, deeply nested or alias-bombed file.
func TestLoadBounds(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("domain: d\n# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(huge); err == nil || !strings.Contains(err.Error(), "huge.yaml: file larger than") {
		t.Fatalf("huge file: %v", err)
	}
	var deep strings.Builder
	deep.WriteString("domain: d\ndescriptors:\n")
	for i := 0; i < 40; i++ {
		ind := strings.Repeat("  ", 2*i)
		deep.WriteString(ind + "  - key: k\n" + ind + "    descriptors:\n")
	}
	if _, err := Parse("deep.yaml", []byte(deep.String())); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("deep descriptors: %v", err)
	}
	// Flow-style nesting far past the limit: refused by depth, not by stack.
	flow := "domain: d\ndescriptors: " + strings.Repeat("[{descriptors: ", 5000) + strings.Repeat("}]", 5000) + "\n"
	if _, err := Parse("flow.yaml", []byte(flow)); err == nil {
		t.Fatal("5000-deep flow nesting loaded")
	}
	// Each level lists ten aliases of the one before: 10^8 maps once expanded.
	bomb := "domain: d\nvalue: &l0 [" + strings.Repeat("{key: x}, ", 9) + "{key: x}]\n"
	for i, k := range []string{"key", "name", "unit", "window", "burst", "replaces", "rate_limit", "descriptors"} {
		ref := "{descriptors: *l" + itoa(uint64(i)) + "}"
		bomb += k + ": &l" + itoa(uint64(i+1)) + " [" + strings.Repeat(ref+", ", 9) + ref + "]\n"
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(bomb))
	if err == nil {
		t.Fatal("alias bomb loaded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("alias bomb took %v to refuse", d)
	}
}

// TestLoadDirectory checks that a directory's *.yaml files are read, one domain each,
// dotfiles and other extensions skipped, and that a domain in two files is refused.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "domain: one\n")
	write("b.yaml", "domain: two\n")
	write("notes.txt", "not yaml: [")
	write(".hidden.yaml", "domain: three\n")
	p, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Domains(), ","); got != "one,two" {
		t.Fatalf("domains %s", got)
	}
	write("c.yaml", "domain: one\n")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "c.yaml:1: duplicate domain 'one' in config file") {
		t.Fatalf("duplicate domain: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing path: %v", err)
	}
}
