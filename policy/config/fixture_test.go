package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/policy"
)

// ratelimitModule is the envoyproxy/ratelimit version CI installs (.ci/run), whose
// test/config and examples this test reads from the Go module cache. Their files are
// never copied into this repository.
const ratelimitModule = "github.com/envoyproxy/ratelimit@v1.4.1-0.20260122083618-3fb702589d36"

// ratelimitDir is the module's directory, or "" (the test skips, or fails under
// RLSERVER_REQUIRE_RATELIMIT=1) when it is not in the module cache.
func ratelimitDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	dir := filepath.Join(strings.TrimSpace(string(out)), ratelimitModule)
	if err == nil {
		if _, err = os.Stat(filepath.Join(dir, "test", "config", "config_test.go")); err == nil {
			return dir
		}
	}
	msg := "envoyproxy/ratelimit not in the module cache (go install " + strings.Replace(ratelimitModule, "@", "/src/service_cmd@", 1) + "): " + err.Error()
	if os.Getenv("RLSERVER_REQUIRE_RATELIMIT") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// theirVerdicts is what their test/config/config_test.go says of each fixture loaded
// alone: "" accepted, else their error text after the file name.
var theirVerdicts = map[string]string{
	"basic_config.yaml":        "",
	"bad_limit_unit.yaml":      "invalid rate limit unit 'foo'",
	"bad_yaml.yaml":            "error loading config file: yaml: line 2: found unexpected end of stream",
	"duplicate_domain.yaml":    "", // refused only beside basic_config.yaml (below)
	"duplicate_key.yaml":       "duplicate descriptor composite key 'test-domain.key1_value1'",
	"empty_domain.yaml":        "config file cannot have empty domain",
	"empty_key.yaml":           "descriptor has empty key",
	"merge_domain_key1.yaml":   "",
	"merge_domain_key2.yaml":   "",
	"misspelled_key.yaml":      "config error, unknown key 'ratelimit'",
	"misspelled_key2.yaml":     "config error, unknown key 'requestsperunit'",
	"non_map_list.yaml":        "config error, yaml file contains list of type other than map: a",
	"non_string_key.yaml":      "config error, key is not of type string: 0.25",
	"replaces_empty.yaml":      "should not have an empty replaces entry",
	"replaces_self.yaml":       "replaces should not contain name of same descriptor",
	"shadowmode_config.yaml":   "",
	"share_threshold.yaml":     "",
	"unlimited_with_unit.yaml": "should not specify rate limit unit when unlimited",
	"wildcard.yaml":            "",
}

// TestTheirFixtures loads every test/config fixture of envoyproxy/ratelimit and its
// examples, and checks the same accept or refuse, with the same reason, as their
// config_test.go; a fixture this table does not know fails the test.
func TestTheirFixtures(t *testing.T) {
	root := ratelimitDir(t)
	cfg := filepath.Join(root, "test", "config")
	files, err := filepath.Glob(filepath.Join(cfg, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", cfg, err)
	}
	sort.Strings(files)
	for _, f := range files {
		name := filepath.Base(f)
		want, known := theirVerdicts[name]
		if !known {
			t.Errorf("%s: a fixture this test does not know; add their verdict", name)
			continue
		}
		_, err := Load(f)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused, theirs accepts: %v", name, err)
		case want != "" && err == nil:
			t.Errorf("%s: accepted, theirs refuses: %s", name, want)
		case want != "" && (!strings.HasPrefix(err.Error(), f+":") || !strings.HasSuffix(err.Error(), ": "+want)):
			t.Errorf("%s: error %q\nwant %q after the file, line and path", name, err, want)
		}
	}

	// Their TestDuplicateDomain and, without MERGE_DOMAIN_CONFIG, TestDomainMerge: two
	// files of one domain, read from one directory, refuse.
	for _, pair := range [][2]string{{"basic_config.yaml", "duplicate_domain.yaml"}, {"merge_domain_key1.yaml", "merge_domain_key2.yaml"}} {
		dir := t.TempDir()
		for _, n := range pair {
			data, err := os.ReadFile(filepath.Join(cfg, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "duplicate domain 'test-domain' in config file") {
			t.Errorf("%v: %v, want duplicate domain", pair, err)
		}
	}

	// Their examples load, as a directory and each file alone.
	examples := filepath.Join(root, "examples", "ratelimit", "config")
	p, err := Load(examples)
	if err != nil {
		t.Fatalf("examples: %v", err)
	}
	if got := strings.Join(p.Domains(), ","); got != "mongo_cps,rl" {
		t.Fatalf("examples' domains: %s", got)
	}
}

// TestTheirMatching replays the lookups of their TestBasicConfig, TestWildcardConfig
// and TestShareThreshold on their fixtures: the limit each descriptor gets, or none.
func TestTheirMatching(t *testing.T) {
	cfg := filepath.Join(ratelimitDir(t), "test", "config")
	load := func(name string) *Domain {
		t.Helper()
		p, err := Load(filepath.Join(cfg, name))
		if err != nil {
			t.Fatal(err)
		}
		return p.domains["test-domain"]
	}
	e := func(kv ...string) []policy.Entry {
		var out []policy.Entry
		for i := 0; i < len(kv); i += 2 {
			out = append(out, policy.Entry{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	basic, wild, share := load("basic_config.yaml"), load("wildcard.yaml"), load("share_threshold.yaml")
	for _, tc := range []struct {
		d       *Domain
		entries []policy.Entry
		want    string // "requests/window" or "unlimited", "" for none
		path    string // the rule's composite key (their stats key without the domain)
	}{
		{basic, e("key1", "something"), "", ""},
		{basic, e("key1", "value1"), "", ""},
		{basic, e("key2", "value2", "subkey", "subvalue"), "", ""},
		{basic, e("key5", "value5", "subkey5", "subvalue"), "", ""},
		{basic, e("key1", "value1", "subkey1", "something"), "5/1s", "key1_value1.subkey1"},
		{basic, e("key1", "value1", "subkey1", "subvalue1"), "10/1s", "key1_value1.subkey1_subvalue1"},
		{basic, e("key2", "something"), "20/1m0s", "key2"},
		{basic, e("key2", "value2"), "30/1m0s", "key2_value2"},
		{basic, e("key2", "value3"), "", ""},
		{basic, e("key3", "foo"), "1/1h0m0s", "key3"},
		{basic, e("key4", "foo"), "1/24h0m0s", "key4"},
		{basic, e("key6", "foo"), "unlimited", "key6"},
		{basic, e("key7", "unspecified_value"), "70/1m0s", "key7"},
		{wild, e("noVal", "foo1"), "20/1m0s", "noVal"},
		{wild, e("wild", "foo1"), "20/1m0s", "wild_foo*"},
		{wild, e("wild", "foo2"), "20/1m0s", "wild_foo*"},
		{wild, e("nestedWild", "val1", "wild", "goo2"), "20/1m0s", "nestedWild_val1.wild_goo*"},
		{wild, e("wild", "bar"), "", ""},
		{wild, e("noWild", "foo1"), "", ""},
		{wild, e("midWildcard", "barab"), "", ""},
		{share, e("files", "files/a.txt"), "100/1m0s", "files_files/*"},
		{share, e("nested", "parent", "files", "nested/x"), "200/1m0s", "nested_parent.files_nested/*"},
		{share, e("files", "top/a", "files", "nested/b"), "300/1m0s", "files_top/*.files_nested/*"},
		{share, e("file", "test1"), "50/1m0s", "file_test1"},
		{share, e("file", "test2"), "100/1m0s", "file_test*"},
	} {
		r, _ := tc.d.Match(tc.entries)
		got, path := "", ""
		if r != nil {
			got, path = strings.Fields(ruleText(r) + " ")[0], r.Path
		}
		if got != tc.want || path != tc.path {
			t.Errorf("%v: matched %q at %q, want %q at %q", tc.entries, got, path, tc.want, tc.path)
		}
	}
	// share_threshold: every value under the wildcard shares one state key, the
	// pattern's, as their cache key does; other wildcards keep each value's own.
	key := func(d *Domain, entries []policy.Entry) string {
		r, shared := d.Match(entries)
		return string(r.AppendKey(nil, entries, shared))
	}
	if a, b := key(share, e("files", "files/a")), key(share, e("files", "files/b")); a != b || a != "rl:test-domain:fixed/60s:files=files/*" {
		t.Errorf("share_threshold keys %q and %q", a, b)
	}
	if a, b := key(wild, e("wild", "foo1")), key(wild, e("wild", "foo2")); a == b {
		t.Errorf("plain wildcard values share key %q", a)
	}
}
