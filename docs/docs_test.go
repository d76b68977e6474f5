package docs_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/policy/config"
	"go.yaml.in/yaml/v3"
)

// TestArchitectureNamesEveryPackage fails when a directory holding Go files is not
// named in docs/architecture.md's package table (as `dir/`), or when the table names
// a directory that does not exist: the map of the house follows the house.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	arch := string(b)
	dirs := goPackageDirs(t)
	if len(dirs) < 20 {
		t.Fatalf("only %d package directories found: %v", len(dirs), dirs)
	}
	for _, d := range dirs {
		if d == "." {
			continue // the root: compat_test.go, which the page names
		}
		if !strings.Contains(arch, "`"+d+"/`") {
			t.Errorf("docs/architecture.md does not name `%s/`, which holds Go files", d)
		}
	}
	// The table's first column, every row: a directory that exists.
	for _, line := range strings.Split(arch, "\n") {
		m := tableDir.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, m[1])); err != nil || !fi.IsDir() {
			t.Errorf("docs/architecture.md names `%s/`, which is not a directory of the repository", m[1])
		}
	}
}

var tableDir = regexp.MustCompile("^\\| `([a-z][a-z0-9_/.-]*)/` \\|")

// TestLinks fails when a relative link of a page names a file that does not exist,
// or an anchor no heading of its target gives.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	all := pages(t)
	for _, p := range all {
		anchors[p.path] = headingAnchors(p.text)
	}
	n := 0
	for _, p := range all {
		_, prose := p.blocks()
		prose = codeSpan.ReplaceAllString(prose, "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			dest := p.path
			if file != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(p.path), file))
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s: link %q: %s does not exist", p.path, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			as, ok := anchors[dest]
			if !ok {
				t.Errorf("%s: link %q: an anchor into %s, which is no page of README.md or docs/", p.path, target, dest)
				continue
			}
			if !as[anchor] {
				t.Errorf("%s: link %q: %s has no heading whose anchor is #%s", p.path, target, dest, anchor)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d relative links found", n)
	}
}

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingAnchors returns the ids GitHub gives text's headings: lower case, spaces
// to hyphens, punctuation dropped, a repeated id numbered -1, -2...
func headingAnchors(text string) map[string]bool {
	ids := map[string]bool{}
	count := map[string]int{}
	_, prose := page{text: text}.blocks()
	for _, line := range strings.Split(prose, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if title == "" || title[0] != ' ' {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && unicode.IsLetter(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if c := count[id]; c > 0 {
			ids[id+"-"+strconv.Itoa(c)] = true
		} else {
			ids[id] = true
		}
		count[id]++
	}
	return ids
}

// TestRedisCLISessions replays every redis-cli session of the pages (a block whose
// lines are `$ redis-cli ...` commands, each followed by its output) with the real
// redis-cli, on an rlserver whose clock is frozen at 2026-01-01 00:00 UTC, from an
// empty store per block: the output must be the page's, comments ("  # ...") aside.
// The server runs with -limits on policies.md's first policy, which its RL.POLICY
// session decides against.
func TestRedisCLISessions(t *testing.T) {
	cli := redisCLI(t)
	var sessions []block
	var edge *block
	for _, p := range pages(t) {
		if !p.checked() {
			continue
		}
		bs, _ := p.blocks()
		for _, b := range bs {
			if strings.HasPrefix(strings.TrimSpace(b.text), "$ redis-cli") {
				sessions = append(sessions, b)
			}
			if p.path == "docs/policies.md" && b.lang == "yaml" && edge == nil {
				edge = &b
			}
		}
	}
	if len(sessions) < 2 || edge == nil {
		t.Fatalf("%d redis-cli sessions found, and policies.md's policy: %v; README.md and policies.md have them", len(sessions), edge)
	}
	dir := t.TempDir()
	limits := filepath.Join(dir, "limits")
	if err := os.Mkdir(limits, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(limits, "edge.yaml"), []byte(edge.text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := launch.RLServer(binary(t), dir, "-enable-debug-command", "-limits", limits)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	_, port, _ := strings.Cut(proc.Addr, ":")
	run := func(args ...string) string {
		out, err := exec.Command(cli, append([]string{"--no-raw", "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	for _, s := range sessions {
		run("FLUSHALL")
		run("DEBUG", "CLOCK", "SET", frozenClock)
		for _, step := range parseSession(t, s) {
			if got := run(step.args...); got != step.want {
				t.Errorf("%s: redis-cli %s\n got:\n%s\nwant:\n%s", s, strings.Join(step.args, " "), got, step.want)
			}
		}
	}
}

// frozenClock is 2026-01-01 00:00:00 UTC in µs: the start of every window of a whole
// number of seconds, minutes, hours or days, as docs/commands.md's examples run.
const frozenClock = "1767225600000000"

type step struct {
	args []string // redis-cli's arguments, less -h and -p
	want string
}

// parseSession reads a session block: "$ redis-cli [-p N] args...  # comment", then
// its output lines.
func parseSession(t *testing.T, b block) []step {
	t.Helper()
	var steps []step
	var want []string
	flush := func() {
		if len(steps) > 0 {
			steps[len(steps)-1].want = strings.Join(want, "\n")
		}
		want = nil
	}
	for _, line := range strings.Split(b.text, "\n") {
		line = stripComment(line)
		if rest, ok := strings.CutPrefix(line, "$ "); ok {
			flush()
			words, err := shellWords(rest)
			if err != nil || len(words) < 2 || words[0] != "redis-cli" {
				t.Fatalf("%s: %q is not a redis-cli call (%v)", b, rest, err)
			}
			var args []string
			for i := 1; i < len(words); i++ {
				if words[i] == "-p" || words[i] == "-h" {
					i++
					continue
				}
				args = append(args, words[i])
			}
			steps = append(steps, step{args: args})
			continue
		}
		want = append(want, line)
	}
	flush()
	for i := range steps {
		steps[i].want = strings.TrimRight(steps[i].want, "\n")
	}
	return steps
}

// stripComment drops a "  # ..." comment and trailing blanks.
func stripComment(line string) string {
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimRight(line, " \t")
}

// shellWords splits a command line as sh would, for the quoting the pages use:
// words at blanks, '...' and "..." (no escapes within '...').
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			in = true
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unbalanced quote")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// TestPolicySnippets parses every YAML block of the pages; one that is a policy (a
// top-level domain) must load with package policy's parser, as -limits loads it.
func TestPolicySnippets(t *testing.T) {
	policies := 0
	for _, p := range pages(t) {
		if !p.checked() {
			continue
		}
		bs, _ := p.blocks()
		for _, b := range bs {
			if b.lang != "yaml" {
				continue
			}
			dec := yaml.NewDecoder(strings.NewReader(b.text))
			for {
				var doc any
				err := dec.Decode(&doc)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Errorf("%s: not YAML: %v", b, err)
					break
				}
			}
			if !policyDoc.MatchString(b.text) {
				continue
			}
			policies++
			if _, err := config.Parse(b.String(), []byte(b.text)); err != nil {
				t.Errorf("%s: the policy does not load: %v", b, err)
			}
		}
	}
	if policies < 3 {
		t.Errorf("only %d policy snippets found: README.md, gateway.md and policies.md have them", policies)
	}
}

var policyDoc = regexp.MustCompile(`(?m)^domain:`)

// TestConfigSnippets reads every ```conf block with the config file reader
// rlserver uses, and checks that each directive is one of rlserver's flags (every
// flag is a directive of the same name).
func TestConfigSnippets(t *testing.T) {
	flags := helpFlags(t)
	bs := blocksIn(t, "conf")
	for _, b := range bs {
		path := filepath.Join(t.TempDir(), "rlserver.conf")
		if err := os.WriteFile(path, []byte(b.text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ds, err := conffile.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		for _, d := range ds {
			if !flags[d.Name] {
				t.Errorf("%s: line %d: %q is not a directive: rlserver -h lists no -%s", b, d.Line, d.Name, d.Name)
			}
		}
	}
	if n := len(bs); n < 2 {
		t.Errorf("only %d conf blocks found: operations.md and acl.md have them", n)
	}
}

// TestACLSnippets starts rlserver with every ```acl block as its -aclfile: the real
// loader must accept it (Redis's aclfile takes only user lines, no comments).
func TestACLSnippets(t *testing.T) {
	bin := binary(t)
	bs := blocksIn(t, "acl")
	for _, b := range bs {
		dir := t.TempDir()
		path := filepath.Join(dir, "users.acl")
		if err := os.WriteFile(path, []byte(b.text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		proc, err := launch.RLServer(bin, dir, "-aclfile", path)
		if err != nil {
			t.Errorf("%s: rlserver -aclfile refuses it: %v", b, err)
			continue
		}
		proc.Stop()
	}
	if n := len(bs); n < 2 {
		t.Errorf("only %d acl blocks found: acl.md and ha.md have them", n)
	}
}

// TestGoSnippets fails when a page's ```go block is not, line for line (indentation
// and blank lines aside), a run of lines of a Go file of the repository: the
// snippets are excerpts of code that compiles (docs/examples_test.go holds those
// that live nowhere else).
func TestGoSnippets(t *testing.T) {
	var sources [][]string
	for _, d := range goPackageDirs(t) {
		files, _ := filepath.Glob(filepath.Join(root, d, "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, codeLines(string(b)))
		}
	}
	bs := blocksIn(t, "go")
	for _, b := range bs {
		want := codeLines(b.text)
		found := false
		for _, src := range sources {
			if containsRun(src, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: this Go snippet is in no Go file of the repository (add it to docs/examples_test.go, or copy it from the code):\n%s", b, b.text)
		}
	}
	if n := len(bs); n < 8 {
		t.Errorf("only %d Go snippets found", n)
	}
}

// codeLines returns text's lines, trimmed, blank ones dropped.
func codeLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func containsRun(src, run []string) bool {
	if len(run) == 0 {
		return false
	}
	for i := 0; i+len(run) <= len(src); i++ {
		if src[i] == run[0] && slicesEqual(src[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func slicesEqual(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFlags fails when a page gives rlserver a flag that `rlserver -h` does not
// list: on every command line starting rlserver in a code block or span, and in
// every code span that is a flag alone (`-maxmemory`), unless it is one of the
// other tools' flags the pages use.
func TestFlags(t *testing.T) {
	flags := helpFlags(t)
	n := 0
	check := func(where, flag string) {
		n++
		name := strings.TrimLeft(flag, "-")
		name, _, _ = strings.Cut(name, "=")
		if !flags[name] {
			t.Errorf("%s: %s is not a flag of rlserver -h", where, flag)
		}
	}
	for _, p := range pages(t) {
		if !p.checked() {
			continue
		}
		bs, prose := p.blocks()
		var lines []string
		for _, b := range bs {
			if b.lang == "sh" || b.lang == "" {
				lines = append(lines, strings.Split(strings.ReplaceAll(b.text, "\\\n", " "), "\n")...)
			}
		}
		for _, s := range spans(prose) {
			if m := flagSpan.FindStringSubmatch(s); m != nil && !otherTools[m[1]] {
				check(p.path+": `"+s+"`", m[1])
			}
			lines = append(lines, s)
		}
		for _, l := range lines {
			for _, m := range rlserverCall.FindAllStringSubmatch(strings.TrimSpace(l), -1) {
				words, err := shellWords(m[1])
				if err != nil {
					words = strings.Fields(m[1])
				}
				if len(words) > 1 && subcommand.MatchString(words[1]) {
					continue // rlserver check-aof and the like: flags of their own
				}
				for _, w := range words[1:] {
					if strings.HasPrefix(w, "-") && len(w) > 1 {
						check(p.path+": "+strings.TrimSpace(l), w)
					}
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d flags checked", n)
	}
}

// rlserverCall finds a command starting rlserver (at a line's start, after a shell
// operator or a prompt), up to a comment, a pipe or another command.
var rlserverCall = regexp.MustCompile(`(?:^|[;&|(]\s*|\$\s+)((?:\./|bin/|\./bin/|/usr/local/bin/)?rlserver(?:\s[^|#;&]*)?)`)

// subcommand is a word after rlserver naming a subcommand, not a config file.
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

var flagSpan = regexp.MustCompile(`^(--?[a-z][a-z0-9-]*)(?:[ =].*)?$`)

// otherTools are the flags of other programs (go test, redis-cli, redis-benchmark,
// rlbench, curl, the example app...) that the pages show in code spans.
var otherTools = map[string]bool{
	// go test, go build
	"-run": true, "-bench": true, "-race": true, "-tags": true, "-fuzz": true, "-trimpath": true,
	// redis-cli, redis-server, redis-benchmark, podman
	"-a": true, "--cluster": true, "--cluster-pipeline": true, "--pipe": true, "--scan": true,
	"--memkeys": true, "--bigkeys": true, "--hotkeys": true, "--host": true, "--singledb": true,
	"--save": true, "--network": true,
	// rlbench's scale experiment and the example app
	"-scale-time": true, "-scale-rounds": true, "-scale-clients": true, "-scale-depth": true,
	"-scale-keys": true, "-fallback": true, "-fail-closed": true, "-replicas": true, "-report-delay": true,
	"-report-rate": true,
	// an ACL rule (acl.md); rlserver check-aof's own
	"-command": true, "--fix": true,
}

// helpFlags returns the flag names `rlserver -h` lists.
func helpFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(binary(t), "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllSubmatch(out, -1) {
		flags[string(m[1])] = true
	}
	flags["h"], flags["help"] = true, true // the flag package's own
	if len(flags) < 40 || !flags["addr"] || !flags["maxmemory-policy"] {
		t.Fatalf("rlserver -h lists %d flags:\n%s", len(flags), out)
	}
	return flags
}

var helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// TestMakeTargets fails when a page names a make target the Makefile lacks.
func TestMakeTargets(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllSubmatch(mk, -1) {
		targets[string(m[1])] = true
	}
	n := 0
	for _, p := range pages(t) {
		bs, prose := p.blocks()
		texts := spans(prose)
		for _, b := range bs {
			texts = append(texts, b.text)
		}
		for _, text := range texts {
			for _, m := range makeCall.FindAllStringSubmatch(text, -1) {
				n++
				if !targets[m[1]] {
					t.Errorf("%s: `make %s`: the Makefile has no target %s", p.path, m[1], m[1])
				}
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d make calls found", n)
	}
}

var (
	makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	makeCall   = regexp.MustCompile(`(?m)(?:^|[\s;&(])make ([a-z][a-z0-9-]*)`)
)

// TestGoCommands fails when a page's go test, run, build or vet command names a
// package directory that does not exist, or a -run, -bench or -fuzz pattern that
// matches no function of that package's tests.
func TestGoCommands(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		if !p.checked() {
			continue
		}
		bs, prose := p.blocks()
		texts := spans(prose)
		for _, b := range bs {
			if b.lang == "sh" || b.lang == "" {
				texts = append(texts, strings.Split(b.text, "\n")...)
			}
		}
		for _, text := range texts {
			for _, cmd := range goCall.FindAllString(text, -1) {
				n++
				checkGoCommand(t, p.path, cmd)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d go commands found", n)
	}
}

var goCall = regexp.MustCompile(`\bgo (?:test|run|build|vet)\s[^#\x60\n]*`)

func checkGoCommand(t *testing.T, where, cmd string) {
	t.Helper()
	cmd = strings.TrimSpace(cmd)
	words, err := shellWords(cmd)
	if err != nil {
		t.Errorf("%s: %s: %v", where, cmd, err)
		return
	}
	var dirs, patterns []string
	base := "." // go -C's directory
	for i := 2; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == "&&" || w == ";" || w == "&" {
			break // the next command
		}
		switch {
		case w == "-C" && i+1 < len(words):
			base = words[i+1]
			i++
		case (w == "-run" || w == "-bench" || w == "-fuzz") && i+1 < len(words):
			patterns = append(patterns, words[i+1])
			i++
		case w == "." || strings.HasPrefix(w, "./"):
			dirs = append(dirs, strings.TrimSuffix(w, "/..."))
		}
	}
	for _, d := range dirs {
		d = filepath.ToSlash(filepath.Join(base, d))
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %s: no directory %s", where, cmd, d)
			continue
		}
		if m, from := moduleOf(d), moduleOf(base); m != from {
			t.Errorf("%s: %s: %s is in the module of %s/go.mod, not %s's: run go -C %s", where, cmd, d, m, base, m)
			continue
		}
		if words[1] != "test" || strings.HasSuffix(cmd, "...") {
			continue
		}
		funcs := testFuncs(t, d)
		for _, pat := range patterns {
			pat, _, _ = strings.Cut(pat, "/")
			if pat == "^$" || pat == "." {
				continue
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				t.Errorf("%s: %s: %v", where, cmd, err)
				continue
			}
			matched := false
			for _, f := range funcs {
				if re.MatchString(f) {
					matched = true
					break
				}
			}
			if !matched {
				t.Errorf("%s: %s: no test, benchmark or fuzz function of %s matches %s", where, cmd, d, pat)
			}
		}
	}
}

// moduleOf returns the directory, from the root, of the go.mod that dir (from the
// root) belongs to.
func moduleOf(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil || d == "." {
			return filepath.ToSlash(d)
		}
	}
}

// redisCLI returns redis-cli's path, or skips t (fails it under
// RLSERVER_REQUIRE_REDIS=1) when it is not installed.
func redisCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err == nil {
		return path
	}
	const hint = "redis-cli is not on PATH (Debian: apt-get install redis-tools; macOS: brew install redis)"
	if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
		t.Fatal(hint)
	}
	t.Skip(hint + "; RLSERVER_REQUIRE_REDIS=1 makes this a failure")
	return ""
}

// TestREADMEIsAFrontDoor keeps README.md what a newcomer reads first: what rlserver
// is, how to start, the three ways in and links, at most 350 lines. What grows goes
// to a page of docs/.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 350 {
		t.Errorf("README.md has %d lines: move the detail to docs/ (at most 350)", n)
	}
	for _, want := range []string{"make run", "make test", "### 1. Any Redis client", "### 2. A gateway", "### 3. Go", "docs/architecture.md"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}
