package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The manifest is Redis 7's (aof.c): one line a file, in the order they are loaded,
//
//	file appendonly.aof.2.base.rls seq 2 type b
//	file appendonly.aof.2.incr.aof seq 2 type i
//	file appendonly.aof.3.incr.aof seq 3 type i
//
// a base (b: a snapshot, snapshot.go's format) then increments (i: effect frames,
// file.go). It is replaced whole (a temporary file synced and renamed) whenever the
// set of files changes, so a crash leaves the old set or the new one. Keys are read
// as Redis reads them, in any order, and unknown keys are skipped; a history file
// (type h, Redis's name for an increment a rewrite made obsolete) is not loaded.

// Kinds of file in the manifest.
const (
	kindBase    = 'b'
	kindIncr    = 'i'
	kindHistory = 'h'
)

// part is one file of the manifest.
type part struct {
	name string
	seq  int64
	kind byte
}

// manifest is the set of files of the log, in the order they are loaded.
type manifest struct {
	base  *part
	incrs []part
}

// manifestName is the manifest's file name for the log's base name.
func manifestName(name string) string { return name + ".manifest" }

func baseName(name string, seq int64) string {
	return name + "." + strconv.FormatInt(seq, 10) + ".base.rls"
}

func incrName(name string, seq int64) string {
	return name + "." + strconv.FormatInt(seq, 10) + ".incr.aof"
}

// readManifest reads dir's manifest of the log name; fs.ErrNotExist if there is none.
func readManifest(dir, name string) (manifest, error) {
	path := filepath.Join(dir, manifestName(name))
	data, err := os.ReadFile(path)
	if err != nil {
		return manifest{}, err
	}
	m, err := parseManifest(data)
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseManifest parses a manifest's text.
func parseManifest(data []byte) (manifest, error) {
	var m manifest
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f)%2 != 0 {
			return m, fmt.Errorf("%w: line %d: %q is not key value pairs", ErrManifest, n, line)
		}
		var p part
		for i := 0; i < len(f); i += 2 {
			switch f[i] {
			case "file":
				p.name = f[i+1]
			case "seq":
				seq, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil || seq < 1 {
					return m, fmt.Errorf("%w: line %d: bad seq %q", ErrManifest, n, f[i+1])
				}
				p.seq = seq
			case "type":
				if len(f[i+1]) != 1 || !strings.Contains("bih", f[i+1]) {
					return m, fmt.Errorf("%w: line %d: unknown type %q", ErrManifest, n, f[i+1])
				}
				p.kind = f[i+1][0]
			}
		}
		if p.name == "" || p.seq == 0 || p.kind == 0 || strings.ContainsAny(p.name, "/\\") {
			return m, fmt.Errorf("%w: line %d: %q needs a plain file name, a seq and a type", ErrManifest, n, line)
		}
		switch p.kind {
		case kindBase:
			if m.base != nil {
				return m, fmt.Errorf("%w: line %d: a second base", ErrManifest, n)
			}
			m.base = &p
		case kindIncr:
			if k := len(m.incrs); k > 0 && m.incrs[k-1].seq >= p.seq {
				return m, fmt.Errorf("%w: line %d: increments out of order", ErrManifest, n)
			}
			m.incrs = append(m.incrs, p)
		}
	}
	if m.base == nil && len(m.incrs) == 0 {
		return m, fmt.Errorf("%w: no file", ErrManifest)
	}
	return m, sc.Err()
}

// text is the manifest's lines.
func (m manifest) text() []byte {
	var b bytes.Buffer
	if m.base != nil {
		fmt.Fprintf(&b, "file %s seq %d type b\n", m.base.name, m.base.seq)
	}
	for _, p := range m.incrs {
		fmt.Fprintf(&b, "file %s seq %d type i\n", p.name, p.seq)
	}
	return b.Bytes()
}

// lastIncr is the increment appended to; false if there is none.
func (m manifest) lastIncr() (part, bool) {
	if len(m.incrs) == 0 {
		return part{}, false
	}
	return m.incrs[len(m.incrs)-1], true
}

// files is every file the manifest names, in load order.
func (m manifest) files() []part {
	var ps []part
	if m.base != nil {
		ps = append(ps, *m.base)
	}
	return append(ps, m.incrs...)
}

// writeManifest replaces dir's manifest of name with m, atomically.
func writeManifest(dir, name string, m manifest) error {
	return WriteFileAtomic(filepath.Join(dir, manifestName(name)), m.text())
}

// WriteFileAtomic replaces path with data durably, as the manifest is written: a
// temporary file in the same directory, synced, renamed over path, and the
// directory synced. A crash leaves the old file or the new, never a part.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "temp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(filepath.Dir(path))
}

// RemoveSynced removes path, if there, and syncs its directory, so that the removal
// survives a crash.
func RemoveSynced(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a directory's entries (a file created, renamed, removed) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
