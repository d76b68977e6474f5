package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
)

// TestPersistDirectives: an operator's redis.conf persistence lines, repeated save
// lines added up as Redis does.
func TestPersistDirectives(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "redis.conf")
	os.WriteFile(path, []byte("dir "+dir+"\ndbfilename dump.rdb\nsave 900 1\nsave 300 10\n"+
		"appendonly yes\nappendfsync always\nappendfilename \"a.aof\"\nappenddirname \"aofdir\"\n"+
		"aof-load-truncated no\nauto-aof-rewrite-percentage 50\nauto-aof-rewrite-min-size 1mb\n"+
		"min-replicas-to-write 1\nmin-replicas-max-lag 3\n"), 0o600)
	o, err := parseFlags([]string{path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	want := []core.SaveRule{{Seconds: 900, Changes: 1}, {Seconds: 300, Changes: 10}}
	if !c.AppendOnly || c.AOF.Fsync != aof.FsyncAlways || c.AOF.Name != "a.aof" || c.AOF.Dir != "aofdir" ||
		!c.AOF.RefuseTruncated || c.AOF.RewritePercentage != 50 || c.AOF.RewriteMinSize != 1<<20 ||
		c.SnapshotPath != "dump.rdb" || len(c.SaveRules) != 2 || c.SaveRules[0] != want[0] || c.SaveRules[1] != want[1] ||
		o.persist.dir != dir || c.MinReplicasToWrite != 1 || c.MinReplicasMaxLag != 3 {
		t.Fatalf("got %+v, dir %q", c, o.persist.dir)
	}
	// dbfilename without a save line takes Redis's default rules; save "" none.
	o, err = parseFlags([]string{"--dbfilename", "x.rdb"}, io.Discard)
	if err != nil || o.cfg.SnapshotPath != "x.rdb" || core.FormatSave(o.cfg.SaveRules) != redisDefaultSave {
		t.Fatalf("dbfilename alone: %+v, %v", o.cfg.SaveRules, err)
	}
	o, err = parseFlags([]string{"--dbfilename", "x.rdb", "--save", ""}, io.Discard)
	if err != nil || o.cfg.SnapshotPath != "" || len(o.cfg.SaveRules) != 0 {
		t.Fatalf("save \"\": %q %+v, %v", o.cfg.SnapshotPath, o.cfg.SaveRules, err)
	}
	// -snapshot keeps working, and wins over dbfilename.
	o, err = parseFlags([]string{"-snapshot", "s.snap", "--save", "60 1", "--dbfilename", "x.rdb"}, io.Discard)
	if err != nil || o.cfg.SnapshotPath != "s.snap" {
		t.Fatalf("-snapshot: %q, %v", o.cfg.SnapshotPath, err)
	}
}

// TestPersistBadInput: each bad persistence line is refused naming the file, the
// line and the directive.
func TestPersistBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ line, want string }{
		{"appendfsync sometimes", ":1: bad value for 'appendfsync' \"sometimes\""},
		{"save 900", ":1: bad value for 'save' \"900\": Invalid save parameters"},
		{"save 0 1", ":1: bad value for 'save' \"0 1\": Invalid save parameters"},
		{"appendonly perhaps", ":1: bad value for 'appendonly' \"perhaps\""},
		{"aof-load-truncated maybe", ":1: bad value for 'aof-load-truncated' \"maybe\""},
		{"appendfilename a/b.aof", "appendfilename \"a/b.aof\": a file name, without a directory"},
	} {
		path := filepath.Join(dir, "bad.conf")
		os.WriteFile(path, []byte(tc.line+"\n"), 0o600)
		var out strings.Builder
		_, err := parseFlags([]string{path}, &out)
		if err == nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: %v, %q; want %q", tc.line, err, out.String(), tc.want)
		}
	}
	o, err := parseFlags([]string{"--dir", filepath.Join(dir, "nosuch")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.persist.chdir(); err == nil || !strings.Contains(err.Error(), "dir: can't chdir to '"+filepath.Join(dir, "nosuch")+"'") {
		t.Errorf("a missing dir: %v", err)
	}
}

// TestCheckAOF: rlserver check-aof finds a flipped byte, names the file and offset,
// exits 1; with --fix cuts the file there and exits 0; on a whole log exits 0.
func TestCheckAOF(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "appendonly.aof.manifest")
	incr := filepath.Join(dir, "appendonly.aof.1.incr.aof")
	// A log of three frames, built as the server writes it.
	writeTestLog(t, dir, 3)
	var out, errOut strings.Builder
	if st := checkAOF([]string{manifest}, &out, &errOut); st != 0 || !strings.Contains(out.String(), incr+": valid") {
		t.Fatalf("a whole log: status %d, %q %q", st, out.String(), errOut.String())
	}
	data, _ := os.ReadFile(incr)
	size := len(data)
	data[size-3] ^= 1 // in the last frame's body
	os.WriteFile(incr, data, 0o600)
	out.Reset()
	if st := checkAOF([]string{incr}, &out, &errOut); st != 1 || !strings.Contains(out.String(), incr+": at byte ") ||
		!strings.Contains(out.String(), "checksum mismatch") {
		t.Fatalf("a flipped byte: status %d, %q", st, out.String())
	}
	out.Reset()
	if st := checkAOF([]string{"--fix", manifest}, &out, &errOut); st != 0 || !strings.Contains(out.String(), "fixed: cut at byte") {
		t.Fatalf("--fix: status %d, %q", st, out.String())
	}
	if st, _ := os.Stat(incr); st.Size() >= int64(size) {
		t.Fatalf("--fix left %d bytes of %d", st.Size(), size)
	}
	out.Reset()
	if st := checkAOF([]string{manifest}, &out, &errOut); st != 0 {
		t.Fatalf("after --fix: status %d, %q", st, out.String())
	}
	if st := checkAOF(nil, &out, &errOut); st != 2 {
		t.Fatalf("no FILE: status %d", st)
	}
}
