// Package aof keeps the store's effects in an append-only log on disk, laid out as
// Redis 7's multi-part AOF: a manifest naming a base (a snapshot) and increments (the
// effect records of every write since), with Redis's fsync policies, group commit,
// start-up replay and rewrite. See docs/persistence.md.
package aof

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Fsync is appendfsync: when the log's writes are made durable.
type Fsync int

// The appendfsync policies.
const (
	// FsyncEverySec syncs once a second: a crash of the machine loses up to about a
	// second; a crash of the process alone loses nothing written.
	FsyncEverySec Fsync = iota
	// FsyncAlways syncs before a write's reply is sent: many connections' writes
	// share one fsync (group commit).
	FsyncAlways
	// FsyncNo leaves syncing to the operating system.
	FsyncNo
)

var fsyncNames = [...]string{FsyncEverySec: "everysec", FsyncAlways: "always", FsyncNo: "no"}

func (f Fsync) String() string { return fsyncNames[f] }

// ParseFsync reads an appendfsync value, in any case.
func ParseFsync(s string) (Fsync, error) {
	for i, n := range fsyncNames {
		if strings.EqualFold(s, n) {
			return Fsync(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q: appendfsync is always, everysec or no", ErrFsync, s)
}

// Defaults, Redis's.
const (
	DefaultDir               = "appendonlydir"
	DefaultName              = "appendonly.aof"
	DefaultRewritePercentage = 100
	DefaultRewriteMinSize    = 64 << 20
)

// Config is the log's settings.
type Config struct {
	// Dir is the directory of the log's files (appenddirname, within dir).
	Dir string
	// Name is the files' base name (appendfilename); DefaultName if empty.
	Name string
	// Fsync is appendfsync.
	Fsync Fsync
	// RefuseTruncated refuses a log whose last frame a crash cut short
	// (aof-load-truncated no). By default (yes) it loads up to that frame, with a
	// warning, and the file is cut there.
	RefuseTruncated bool
	// RewritePercentage and RewriteMinSize start a rewrite when the log has grown
	// by that percentage over its size after the last rewrite and is at least that
	// many bytes (auto-aof-rewrite-percentage, auto-aof-rewrite-min-size). 0 means
	// DefaultRewritePercentage and DefaultRewriteMinSize; a negative percentage
	// turns this off (auto-aof-rewrite-percentage 0).
	RewritePercentage int
	RewriteMinSize    int64
	// Logger receives warnings (a torn tail loaded, a write failing); nil discards.
	Logger *slog.Logger
}

// Errors of the log.
var (
	// ErrFsync is wrapped by ParseFsync's error.
	ErrFsync = errors.New("aof: unknown appendfsync policy")
	// ErrRewriteRunning is Rewrite's error while a rewrite runs.
	ErrRewriteRunning = errors.New("aof: a rewrite is already in progress")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("aof: log closed")
)

func (c Config) name() string {
	if c.Name == "" {
		return DefaultName
	}
	return c.Name
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
