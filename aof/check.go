package aof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlserver/rlserver/store"
)

// FileCheck is what Check found in one file.
type FileCheck struct {
	Path  string
	Size  int64 // the file's bytes
	Valid int64 // bytes up to the first damage: Size if none
	Err   error // the damage (a *FrameError for an increment), nil if none
	Fixed bool  // the file was cut at Valid
}

// Check reads path, a manifest (then every file it names) or one increment or base
// file, as redis-check-aof does, and reports each file's first damage. With fix, an
// increment is cut at the frame where its damage starts: the frames before it stay,
// that frame and every one after it are lost (a torn tail holds nothing acknowledged
// under appendfsync always; a corrupt frame in the middle may). A base is never cut:
// its damage is reported for a look (and an older copy).
func Check(path string, fix bool) ([]FileCheck, error) {
	if strings.HasSuffix(path, ".manifest") {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		m, err := parseManifest(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var out []FileCheck
		for _, p := range m.files() {
			out = append(out, checkFile(filepath.Join(filepath.Dir(path), p.name), p.kind, fix))
		}
		return out, nil
	}
	kind := byte(kindIncr)
	if strings.Contains(filepath.Base(path), ".base.") {
		kind = kindBase
	}
	return []FileCheck{checkFile(path, kind, fix)}, nil
}

func checkFile(path string, kind byte, fix bool) FileCheck {
	c := FileCheck{Path: path}
	st, err := os.Stat(path)
	if err != nil {
		c.Err = err
		return c
	}
	c.Size = st.Size()
	if kind == kindBase {
		c.Err = checkBase(path)
		if c.Err == nil {
			c.Valid = c.Size
		}
		return c
	}
	version, valid, err := readIncr(path, func([]byte) error { return nil }, func(uint32) {})
	c.Valid, c.Err = valid, err
	var fe *FrameError
	if err != nil && errors.As(err, &fe) {
		c.Valid = fe.Offset
		if fix && fe.Offset >= fileHeadBytes {
			if ferr := truncateAt(path, fe.Offset, version); ferr != nil {
				c.Err = fmt.Errorf("%w; fixing: %v", err, ferr)
			} else {
				c.Fixed = true
			}
		}
	}
	return c
}

// checkBase reads a base whole, checking every frame of it.
func checkBase(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := store.New(store.Config{})
	if err != nil {
		return err
	}
	if _, err := st.ReadSnapshot(bufio.NewReaderSize(f, 256<<10), 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err = io.Copy(io.Discard, f)
	return err
}
