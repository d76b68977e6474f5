package conffile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  error
	}{
		{"", nil, nil},
		{"   \t ", nil, nil},
		{"maxclients 100", []string{"maxclients", "100"}, nil},
		{"  replicaof 10.0.0.1   6380  ", []string{"replicaof", "10.0.0.1", "6380"}, nil},
		{`requirepass "a b\"c\\d\n\x41"`, []string{"requirepass", "a b\"c\\d\nA"}, nil},
		{`requirepass 'it\'s "x"'`, []string{"requirepass", `it's "x"`}, nil},
		{`requirepass ""`, []string{"requirepass", ""}, nil},
		{`a foo"bar"`, []string{"a", "foobar"}, nil}, // a quote inside a word opens, as in sdssplitargs
		{`requirepass "open`, nil, ErrUnbalancedQuotes},
		{`requirepass 'open`, nil, ErrUnbalancedQuotes},
		{`requirepass "a"b`, nil, ErrQuoteNotSeparated},
	} {
		got, err := Split(tc.line)
		if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}

// Line's output reads back as the words it was given, whatever they hold.
func TestLineRoundTrip(t *testing.T) {
	for _, args := range [][]string{
		{"100"}, {""}, {"a b"}, {`q"uo'te`}, {"#not-a-comment"}, {"back\\slash"}, {"tab\there", "\x00\xff"},
		{"10.0.0.1", "6380"},
	} {
		line := Line("x", args...)
		got, err := Split(line)
		if err != nil || !reflect.DeepEqual(got, append([]string{"x"}, args...)) {
			t.Errorf("Line(x, %q) = %s, which splits to %q, %v", args, line, got, err)
		}
	}
	if got := Line("maxclients", "100"); got != "maxclients 100" {
		t.Errorf("a plain word is quoted: %s", got)
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.conf")
	// A stock redis.conf's comments hold quotes: they are not split, as in Redis.
	write(t, path, "# a comment, it's not split\n\nMaxClients 100\n  # indented \"comment\nreplicaof 10.0.0.1 6380\nrequirepass \"a b\"\n")
	got, err := ReadFile(path)
	want := []Directive{
		{Name: "maxclients", Args: []string{"100"}, File: path, Line: 3},
		{Name: "replicaof", Args: []string{"10.0.0.1", "6380"}, File: path, Line: 5},
		{Name: "requirepass", Args: []string{"a b"}, File: path, Line: 6},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile = %+v, %v; want %+v", got, err, want)
	}
	write(t, path, "maxclients 1\nrequirepass \"open\n")
	if _, err := ReadFile(path); err == nil || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("unbalanced quotes on line 2: %v, want %s:2: ...", err, path)
	}
}

// Rewrite replaces, removes and appends directives, keeping every other line, and
// keeps the file's mode.
func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.conf")
	write(t, path, strings.Join([]string{
		"# rlserver, production",
		"addr 0.0.0.0:6380",
		"",
		"# the clients",
		"maxclients 100",
		"maxclients 200",
		"replicaof 10.0.0.1 6380",
		"timeout 0",
		"",
	}, "\n"))
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	err := Rewrite(path, []Setting{
		{Name: "maxclients", Args: []string{"300"}},
		{Name: "replicaof", Args: nil},                            // a primary now: removed
		{Name: "timeout", Args: []string{"0"}, Default: true},     // in the file: stays, rewritten
		{Name: "requirepass", Args: []string{"s e"}},              // not in the file, set: appended
		{Name: "loglevel", Args: []string{"info"}, Default: true}, // not in the file, default: left out
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"# rlserver, production",
		"addr 0.0.0.0:6380",
		"",
		"# the clients",
		"maxclients 300",
		"timeout 0",
		"",
		rewriteMark,
		`requirepass "s e"`,
		"",
	}, "\n")
	if got := read(t, path); got != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode after rewrite: %v, %v; want 0640", info.Mode(), err)
	}
	// A second rewrite adds no second mark and changes the appended line in place.
	if err := Rewrite(path, []Setting{{Name: "requirepass", Args: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); strings.Count(got, rewriteMark) != 1 || !strings.HasSuffix(got, rewriteMark+"\nrequirepass x\n") {
		t.Errorf("second rewrite:\n%s", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := Rewrite(filepath.Join(t.TempDir(), "nosuch.conf"), nil); err == nil {
		t.Error("rewriting a missing file succeeded")
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A directive given once per line (user): the file's lines replaced in order,
// those beyond removed, the rest appended; at its default, none added.
func TestRewriteLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.conf")
	write(t, path, "user a on nopass\n# between\nuser b off\nuser c off\nmaxclients 5\n")
	lines := [][]string{{"a", "off"}, {"b", "on"}}
	if err := Rewrite(path, []Setting{{Name: "user", Lines: lines}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path), "user a off\n# between\nuser b on\nmaxclients 5\n"; got != want {
		t.Errorf("fewer lines:\n%s\nwant:\n%s", got, want)
	}
	lines = append(lines, []string{"c", "on", "~x y"})
	if err := Rewrite(path, []Setting{{Name: "user", Lines: lines}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path), "user a off\n# between\nuser b on\nmaxclients 5\n\n"+rewriteMark+"\nuser c on \"~x y\"\n"; got != want {
		t.Errorf("more lines:\n%s\nwant:\n%s", got, want)
	}
	write(t, path, "maxclients 5\n")
	if err := Rewrite(path, []Setting{{Name: "user", Lines: [][]string{{"default", "on"}}, Default: true}}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "maxclients 5\n" {
		t.Errorf("at its default, added:\n%s", got)
	}
}

// TestRewriteKeyed: user lines stay where the operator wrote them, each under its own
// comment, whatever order the running users are listed in; a deleted user's line
// goes, a new user's is appended.
func TestRewriteKeyed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.conf")
	write(t, path, "# zed: the batch jobs\nuser zed on nopass\n# default: closed\nuser default off\n# gone\nuser old on\nmaxclients 5\n")
	lines := [][]string{{"default", "on"}, {"new", "off"}, {"zed", "off"}} // sorted, as ACL LIST lists them
	if err := Rewrite(path, []Setting{{Name: "user", Lines: lines, Keyed: true}}); err != nil {
		t.Fatal(err)
	}
	want := "# zed: the batch jobs\nuser zed off\n# default: closed\nuser default on\n# gone\nmaxclients 5\n\n" + rewriteMark + "\nuser new off\n"
	if got := read(t, path); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
