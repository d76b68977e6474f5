// Package conffile reads and rewrites configuration files in redis.conf's syntax:
// one directive a line, its name then its arguments, split as Redis splits them
// (sdssplitargs: "double quotes" with \n \r \t \b \a \\ \" \xHH escapes, 'single
// quotes' with \'), blank lines and # comments ignored.
//
// Rewrite changes a file as Redis's CONFIG REWRITE does: the comments, the order and
// the directives it is not given stay as they are.
package conffile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Errors of Split.
var (
	ErrUnbalancedQuotes = errors.New("unbalanced quotes")
	// ErrQuoteNotSeparated is a closing quote followed by something other than a space.
	ErrQuoteNotSeparated = errors.New("closing quote must be followed by a space")
)

// Directive is one line of a file.
type Directive struct {
	Name string // lower case
	Args []string
	File string // the file it is in: the one read, or one it includes
	Line int    // from 1
}

// maxIncludeDepth bounds nested includes, so that a file including itself is an
// error, not a stack overflow.
const maxIncludeDepth = 16

// ReadFile reads path's directives, as Redis reads a config file: each line trimmed,
// a line whose first character is '#' a comment (not split: "# it's" is no
// unbalanced quote), blank lines skipped; "include file" reads that file's
// directives in its place (the path as given, as Redis takes it). An error names
// the file and the line.
func ReadFile(path string) ([]Directive, error) { return readFile(path, 0) }

func readFile(path string, depth int) ([]Directive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Directive
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.Trim(sc.Text(), " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		words, err := Split(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if len(words) == 0 {
			continue
		}
		d := Directive{Name: strings.ToLower(words[0]), Args: words[1:], File: path, Line: n}
		if d.Name != "include" {
			out = append(out, d)
			continue
		}
		if len(d.Args) != 1 {
			return nil, fmt.Errorf("%s:%d: 'include' takes one file, got %d arguments", path, n, len(d.Args))
		}
		if depth >= maxIncludeDepth {
			return nil, fmt.Errorf("%s:%d: includes nested over %d deep", path, n, maxIncludeDepth)
		}
		inner, err := readFile(d.Args[0], depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: include: %w", path, n, err)
		}
		out = append(out, inner...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Split splits a line into words as Redis's sdssplitargs does.
func Split(line string) ([]string, error) {
	var words []string
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return words, nil
		}
		var w []byte
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case i == len(line):
				if inDouble || inSingle {
					return nil, ErrUnbalancedQuotes
				}
				done = true
			case inDouble:
				switch {
				case line[i] == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					b, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					w = append(w, byte(b))
					i += 3
				case line[i] == '\\' && i+1 < len(line):
					i++
					w = append(w, unescape(line[i]))
				case line[i] == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, ErrQuoteNotSeparated
					}
					done = true
				default:
					w = append(w, line[i])
				}
				i++
			case inSingle:
				switch {
				case line[i] == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					w = append(w, '\'')
				case line[i] == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, ErrQuoteNotSeparated
					}
					done = true
				default:
					w = append(w, line[i])
				}
				i++
			case isSpace(line[i]):
				done = true
			case line[i] == '"':
				inDouble = true
				i++
			case line[i] == '\'':
				inSingle = true
				i++
			default:
				w = append(w, line[i])
				i++
			}
		}
		words = append(words, string(w))
	}
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

func unescape(b byte) byte {
	switch b {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return b
}

// Line formats a directive so that Split reads back its words: a word that is empty
// or holds a space, a quote, a # or a control character is double-quoted.
func Line(name string, args ...string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return r <= ' ' || r == '"' || r == '\'' || r == '#' || r == '\\' || r >= 0x7f
		}) {
			b.WriteString(a)
			continue
		}
		b.WriteByte('"')
		for i := 0; i < len(a); i++ {
			switch c := a[i]; {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < ' ' || c >= 0x7f:
				fmt.Fprintf(&b, "\\x%02x", c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// Setting is a directive's running value for Rewrite.
type Setting struct {
	Name string
	// Args are the directive's words after its name; nil removes the directive
	// from the file (REPLICAOF NO ONE removes replicaof).
	Args []string
	// Default: a directive the file lacks is added only when not at its default.
	Default bool
	// Lines, if not nil, are the lines of a directive given once per line (user),
	// instead of Args: the file's lines of it are replaced in order, those beyond
	// removed, the rest appended.
	Lines [][]string
	// Keyed matches Lines to the file's lines by their first word (a user's name)
	// instead of by order: each stays where the operator wrote it, under its own
	// comments; a line whose key Lines lacks is removed, new keys are appended.
	Keyed bool
}

// keyIndex is the index of the line of lines whose first word is words', or -1.
func keyIndex(lines [][]string, words []string) int {
	if len(words) == 0 {
		return -1
	}
	for i, l := range lines {
		if len(l) > 0 && l[0] == words[0] {
			return i
		}
	}
	return -1
}

// rewriteMark precedes the directives Rewrite adds, as Redis marks its own.
const rewriteMark = "# Generated by CONFIG REWRITE"

// Rewrite writes settings into the file at path, as Redis's CONFIG REWRITE: a
// directive's first line is replaced, its other lines removed, one the file lacks is
// appended unless at its default; comments, blank lines, the order and the directives
// not in settings stay. The new file replaces the old one atomically (a temporary
// file in the same directory, synced, renamed over it) with the old one's mode.
func Rewrite(path string, settings []Setting) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	byName := make(map[string]Setting, len(settings))
	for _, s := range settings {
		byName[s.Name] = s
	}
	written := map[string]bool{}
	used := map[string]int{}      // the Lines written of a setting
	keysUsed := map[string]bool{} // "name key" of the Keyed lines written
	var out []string
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	for _, l := range lines {
		words, err := Split(l)
		if err != nil || len(words) == 0 || strings.HasPrefix(words[0], "#") {
			out = append(out, l)
			continue
		}
		name := strings.ToLower(words[0])
		s, ok := byName[name]
		switch {
		case !ok:
			out = append(out, l)
		case s.Keyed:
			if i := keyIndex(s.Lines, words[1:]); i >= 0 && !keysUsed[name+" "+s.Lines[i][0]] {
				out = append(out, Line(name, s.Lines[i]...))
				keysUsed[name+" "+s.Lines[i][0]] = true
			}
		case s.Lines != nil:
			if n := used[name]; n < len(s.Lines) {
				out = append(out, Line(name, s.Lines[n]...))
				used[name]++
			}
		case s.Args != nil && !written[name]:
			out = append(out, Line(name, s.Args...))
		}
		written[name] = ok
	}
	marked := false
	add := func(name string, args []string) {
		if !marked && !slices.Contains(out, rewriteMark) {
			if len(out) > 0 && strings.TrimSpace(out[len(out)-1]) != "" {
				out = append(out, "")
			}
			out = append(out, rewriteMark)
		}
		marked = true
		out = append(out, Line(name, args...))
	}
	for _, s := range settings {
		switch {
		case s.Keyed:
			if !written[s.Name] && s.Default {
				continue
			}
			for _, args := range s.Lines {
				if len(args) > 0 && !keysUsed[s.Name+" "+args[0]] {
					add(s.Name, args)
				}
			}
		case s.Lines != nil:
			if !written[s.Name] && s.Default {
				continue
			}
			for _, args := range s.Lines[used[s.Name]:] {
				add(s.Name, args)
			}
		case !written[s.Name] && s.Args != nil && !s.Default:
			add(s.Name, s.Args)
		}
	}
	return WriteAtomic(path, []byte(strings.Join(out, "\n")+"\n"), info.Mode().Perm())
}

// WriteAtomic replaces path with data, of mode: the file is path's old contents or
// the new ones, whole, whenever the machine stops (CONFIG REWRITE, ACL SAVE).
func WriteAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}
