package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/resp"
)

// persistOptions are Redis's persistence directives.
type persistOptions struct {
	dir        string // chdir there at start, as redis-server: the files' paths are relative to it
	dbfilename string
	save       saveFlag
	noTrunc    bool // !aof-load-truncated
	minSize    memoryFlag
}

// redisDefaultSave is Redis's save rules when redis.conf names none: a config that
// gives dbfilename without a save line gets them.
const redisDefaultSave = "3600 1 300 100 60 10000"

// persistFlags defines the persistence directives on fs.
func persistFlags(fs *flag.FlagSet, cfg *resp.Config, o *persistOptions) {
	fs.StringVar(&o.dir, "dir", "", "working `directory`: dbfilename, -snapshot and appenddirname are relative to it (redis.conf's dir); empty: the current one")
	fs.StringVar(&o.dbfilename, "dbfilename", "", "snapshot `file` name (redis.conf's dbfilename; rlserver's snapshot format, not RDB): with save rules, or Redis's default ones; -snapshot wins")
	fs.Var(&o.save, "save", "Redis's save `rules`: \"<seconds> <changes> ...\"; a config file may repeat the line; \"\" saves nothing by itself")
	fs.BoolVar(&cfg.AppendOnly, "appendonly", false, "keep an append-only log of every write in appenddirname, replayed at start (Redis's appendonly)")
	fs.StringVar(&cfg.AOF.Name, "appendfilename", "", "the log's files' base `name`; empty: "+aof.DefaultName)
	fs.StringVar(&cfg.AOF.Dir, "appenddirname", "", "the log's `directory`, within dir; empty: "+aof.DefaultDir)
	fs.TextVar((*fsyncFlag)(&cfg.AOF.Fsync), "appendfsync", fsyncFlag(aof.FsyncEverySec), "when the log is synced: `always` (before each reply; connections share syncs), everysec or no")
	fs.BoolFunc("aof-load-truncated", "load a log whose last record a crash cut short, up to it, with a warning (default yes)", func(v string) error {
		switch strings.ToLower(v) {
		case "true", "yes", "1":
			o.noTrunc = false
		case "false", "no", "0":
			o.noTrunc = true
		default:
			return errors.New("yes or no")
		}
		return nil
	})
	fs.Func("auto-aof-rewrite-percentage", "rewrite the log when it grew by this `percent` since the last rewrite (default 100); 0: never by itself", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("a percentage, 0 or more")
		}
		if cfg.AOF.RewritePercentage = n; n == 0 {
			cfg.AOF.RewritePercentage = -1 // off, as Redis's 0
		}
		return nil
	})
	fs.IntVar(&cfg.MinReplicasToWrite, "min-replicas-to-write", 0, "refuse spends (NOREPLICAS) on a primary with fewer `replicas` that acknowledged within -min-replicas-max-lag; 0: never")
	fs.IntVar(&cfg.MinReplicasMaxLag, "min-replicas-max-lag", 0, "`seconds` within which a good replica acknowledged; 0: 10")
	// Redis's older names, which many redis.conf files still carry.
	fs.IntVar(&cfg.MinReplicasToWrite, "min-slaves-to-write", 0, "the old name of -min-replicas-to-write")
	fs.IntVar(&cfg.MinReplicasMaxLag, "min-slaves-max-lag", 0, "the old name of -min-replicas-max-lag")
	fs.Var(&o.minSize, "auto-aof-rewrite-min-size", "and is at least this many `bytes` (suffixes k, mb, gb); 0: 64mb")
}

// applyPersist completes cfg from o once the flags are parsed.
func applyPersist(cfg *resp.Config, o persistOptions) error {
	cfg.AOF.RefuseTruncated = o.noTrunc
	cfg.AOF.RewriteMinSize = int64(o.minSize)
	if strings.ContainsAny(cfg.AOF.Name, `/\`) {
		return fmt.Errorf("appendfilename %q: a file name, without a directory", cfg.AOF.Name)
	}
	rules := o.save.rules
	if !o.save.set && o.dbfilename != "" {
		rules, _ = core.ParseSave(redisDefaultSave)
	}
	cfg.SaveRules = rules
	if len(rules) > 0 && cfg.SnapshotPath == "" {
		cfg.SnapshotPath = cmp.Or(o.dbfilename, "dump.rdb")
	}
	return nil
}

// chdir moves to redis.conf's dir, as redis-server does at start.
func (o persistOptions) chdir() error {
	if o.dir == "" {
		return nil
	}
	if err := os.Chdir(o.dir); err != nil {
		return fmt.Errorf("dir: can't chdir to '%s': %w", o.dir, err)
	}
	return nil
}

// saveFlag is -save: rules, accumulated over the config file's save lines.
type saveFlag struct {
	rules []core.SaveRule
	set   bool
}

func (f *saveFlag) String() string {
	if f == nil {
		return ""
	}
	return core.FormatSave(f.rules)
}

// Set adds a line's rules; "" clears them, as Redis's save "".
func (f *saveFlag) Set(v string) error {
	rules, err := core.ParseSave(v)
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		f.rules = nil
	}
	f.rules = append(f.rules, rules...)
	f.set = true
	return nil
}

// fsyncFlag is -appendfsync.
type fsyncFlag aof.Fsync

func (f fsyncFlag) MarshalText() ([]byte, error) { return []byte(aof.Fsync(f).String()), nil }

func (f *fsyncFlag) UnmarshalText(b []byte) error {
	p, err := aof.ParseFsync(string(b))
	*f = fsyncFlag(p)
	return err
}

// checkAOF is `rlserver check-aof [--fix] FILE`, as redis-check-aof: it reports the
// first damage of each file of the log (FILE a manifest) or of one file, and with
// --fix cuts an increment there. It returns the exit status: 0 if every file is
// whole (or was fixed), 1 otherwise, 2 for a bad command line.
func checkAOF(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlserver check-aof", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fix := fs.Bool("fix", false, "cut an increment at its first damage: the records from there on are lost")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rlserver check-aof [--fix] FILE\n\nFILE is the log's manifest (appendonlydir/appendonly.aof.manifest), an increment or a base.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	checks, err := aof.Check(fs.Arg(0), *fix)
	if err != nil {
		fmt.Fprintln(stderr, "check-aof:", err)
		return 1
	}
	status := 0
	for _, c := range checks {
		switch {
		case c.Err == nil:
			fmt.Fprintf(stdout, "%s: valid, %d bytes\n", c.Path, c.Size)
		case c.Fixed:
			fmt.Fprintf(stdout, "%s: %v\n%s: fixed: cut at byte %d, %d bytes dropped\n", c.Path, c.Err, c.Path, c.Valid, c.Size-c.Valid)
		default:
			fmt.Fprintf(stdout, "%s: %v\n", c.Path, c.Err)
			if c.Valid > 0 && c.Valid < c.Size {
				fmt.Fprintf(stdout, "%s: %d of %d bytes are valid; --fix cuts the rest\n", c.Path, c.Valid, c.Size)
			}
			status = 1
		}
	}
	return status
}
