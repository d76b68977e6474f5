package docs_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/internal/launch"
)

// root is the repository's root, from this package's directory.
const root = ".."

// page is one Markdown page: its path from the root and its text.
type page struct {
	path string
	text string
}

// pages reads README.md and every docs/*.md. docs/commands.md is generated from
// the command table and its examples replayed by resp's tests; it is read here for
// its links and anchors only (see checked).
func pages(t *testing.T) []page {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append([]string{filepath.Join(root, "README.md")}, paths...)
	var ps []page
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		ps = append(ps, page{path: filepath.ToSlash(rel), text: string(b)})
	}
	if len(ps) < 10 {
		t.Fatalf("only %d pages found under %s", len(ps), root)
	}
	return ps
}

// checked reports whether p's examples are this package's to check: every page but
// the generated command reference.
func (p page) checked() bool { return p.path != "docs/commands.md" }

// block is a fenced code block of a page.
type block struct {
	page string
	line int    // the opening fence's line, from 1
	lang string // the fence's info string: "sh", "go", "" ...
	text string // the lines inside, less the fence's indentation
}

func (b block) String() string { return b.page + ":" + strconv.Itoa(b.line) }

var fence = regexp.MustCompile("^( *)```(\\S*)\\s*$")

// blocksIn returns the fenced blocks of every page whose info string is lang.
func blocksIn(t *testing.T, lang string) []block {
	var in []block
	for _, p := range pages(t) {
		bs, _ := p.blocks()
		for _, b := range bs {
			if b.lang == lang {
				in = append(in, b)
			}
		}
	}
	return in
}

// blocks returns p's fenced blocks, and its prose: the text with every block's lines
// blanked (so line numbers stay), for links and code spans.
func (p page) blocks() (bs []block, prose string) {
	lines := strings.Split(p.text, "\n")
	var out []string
	var cur *block
	var indent string
	var body []string
	for i, line := range lines {
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &block{page: p.path, line: i + 1, lang: m[2]}
			indent, body = m[1], nil
			out = append(out, "")
		case cur != nil && m != nil && m[2] == "":
			cur.text = strings.Join(body, "\n")
			bs = append(bs, *cur)
			cur = nil
			out = append(out, "")
		case cur != nil:
			body = append(body, strings.TrimPrefix(line, indent))
			out = append(out, "")
		default:
			out = append(out, line)
		}
	}
	return bs, strings.Join(out, "\n")
}

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// spans returns the code spans of prose.
func spans(prose string) []string {
	var s []string
	for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
		s = append(s, m[1])
	}
	return s
}

// rlserverBin builds cmd/rlserver once for the package's tests.
var rlserverBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rlserver-docs-")
	if err != nil {
		return "", err
	}
	binDir = dir
	return launch.BuildRLServer(context.Background(), dir)
})

// binDir is where rlserverBin built the binary, removed by TestMain.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary returns the built rlserver, failing t if it does not build.
func binary(t *testing.T) string {
	t.Helper()
	bin, err := rlserverBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// goPackageDirs lists, from the root, every directory holding .go files, testdata,
// hidden directories and node_modules left out. The root itself is ".".
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}

// testFuncs returns the names of the Test, Benchmark, Fuzz and Example functions of
// dir's test files.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	var names []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if m := testFunc.FindStringSubmatch(sc.Text()); m != nil {
				names = append(names, m[1])
			}
		}
		fh.Close()
	}
	return names
}

var testFunc = regexp.MustCompile(`^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
