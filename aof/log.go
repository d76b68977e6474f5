package aof

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
)

// Log is the running log: it takes the store's effects from a store.Journal in
// batches and appends each batch as one frame to the newest increment, syncing it as
// Config.Fsync says. One goroutine writes; WaitDurable lets a connection hold its
// reply until its writes are on disk. It is safe for concurrent use.
type Log struct {
	cfg Config
	st  *store.Store
	j   *store.Journal
	now func() int64
	log *slog.Logger

	mu       sync.Mutex
	synced   *sync.Cond // broadcast when durable moves, or at Close
	written  int64      // journal offset up to which the file holds the records
	durable  int64      // journal offset up to which they are synced
	writeErr error      // the last write's or sync's error; nil since one succeeded
	stopping bool       // Close has begun
	closed   bool       // Close has written and synced the last records
	m        manifest   // the files; changed by the writer and the rewrite, under mu

	// The writer's own.
	f        *os.File
	size     int64 // the newest increment's length
	frame    []byte
	spare    []byte
	pending  []byte // records taken but not yet written (a write failed)
	lastSync time.Time

	curSize  atomic.Int64 // every file's bytes (aof_current_size)
	baseSize atomic.Int64 // curSize after the last rewrite (aof_base_size)

	failed   atomic.Bool  // writeErr != nil, for Failing
	fsync    atomic.Int32 // Fsync; SetTunables changes it
	pct      atomic.Int64 // RewritePercentage
	minSize  atomic.Int64 // RewriteMinSize
	rewrites rewriteState
	rotate   chan chan error
	stop     chan struct{}
	done     chan struct{}
}

// Open starts the log in cfg.Dir for st, which holds what Load loaded (or what the
// server loaded otherwise): appending to the newest increment of the manifest there,
// or, on a first start, writing a base of st's keys and a first increment. From then
// on every write on st is logged. now is the clock the bases are written at.
func Open(cfg Config, st *store.Store, now func() int64) (*Log, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("aof: appenddirname %s: %w", cfg.Dir, err)
	}
	l := &Log{cfg: cfg, st: st, j: store.NewJournal(), now: now, log: cfg.logger(),
		rotate: make(chan chan error), stop: make(chan struct{}), done: make(chan struct{})}
	l.synced = sync.NewCond(&l.mu)
	l.SetTunables(cfg)
	l.rewrites.took.Store(-1)
	m, err := readManifest(cfg.Dir, cfg.name())
	switch {
	case notExist(err):
		st.SetJournal(l.j) // before the base is taken: what it misses, the increment has
		if err := l.create(manifest{}); err != nil {
			st.SetJournal(nil)
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if err := l.resume(m); err != nil {
			return nil, err
		}
		st.SetJournal(l.j)
	}
	l.baseSize.Store(l.curSize.Load())
	l.lastSync = time.Now()
	go l.run()
	return l, nil
}

// create starts a log from st's keys, after old's files: a new increment, then a base
// written at now, then the manifest naming both; old's files are removed.
func (l *Log) create(old manifest) error {
	next := manifest{incrs: []part{{name: incrName(l.cfg.name(), l.nextSeq(old)), seq: l.nextSeq(old), kind: kindIncr}}}
	if err := l.openIncr(next.incrs[0]); err != nil {
		return err
	}
	b, err := l.writeBase(l.nextBaseSeq(old))
	if err != nil {
		l.f.Close()
		return err
	}
	next.base = &b
	if err := writeManifest(l.cfg.Dir, l.cfg.name(), next); err != nil {
		l.f.Close()
		return fmt.Errorf("aof: manifest in %s: %w", l.cfg.Dir, err)
	}
	l.m = next
	l.removeFiles(old, next)
	l.curSize.Store(l.filesSize(next))
	return nil
}

// resume opens m's newest increment for appending, starting one if m has none.
func (l *Log) resume(m manifest) error {
	last, ok := m.lastIncr()
	if !ok {
		last = part{name: incrName(l.cfg.name(), l.nextSeq(m)), seq: l.nextSeq(m), kind: kindIncr}
		if err := l.openIncr(last); err != nil {
			return err
		}
		m.incrs = append(m.incrs, last)
		if err := writeManifest(l.cfg.Dir, l.cfg.name(), m); err != nil {
			l.f.Close()
			return fmt.Errorf("aof: manifest in %s: %w", l.cfg.Dir, err)
		}
	} else {
		path := filepath.Join(l.cfg.Dir, last.name)
		f, err := os.OpenFile(path, os.O_RDWR, 0o600)
		if err != nil {
			return fmt.Errorf("aof: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("aof: %w", err)
		}
		l.f, l.size = f, st.Size()
	}
	l.m = m
	l.curSize.Store(l.filesSize(m))
	return nil
}

// SetTunables applies cfg's Fsync, RewritePercentage and RewriteMinSize from now on
// (CONFIG SET appendfsync, auto-aof-rewrite-*); the rest of cfg is fixed at Open.
func (l *Log) SetTunables(cfg Config) {
	l.fsync.Store(int32(cfg.Fsync))
	l.pct.Store(int64(cmp.Or(cfg.RewritePercentage, DefaultRewritePercentage)))
	l.minSize.Store(cmp.Or(cfg.RewriteMinSize, DefaultRewriteMinSize))
}

func (l *Log) policy() Fsync { return Fsync(l.fsync.Load()) }

func (l *Log) nextSeq(m manifest) int64 {
	if last, ok := m.lastIncr(); ok {
		return last.seq + 1
	}
	return 1
}

func (l *Log) nextBaseSeq(m manifest) int64 {
	if m.base != nil {
		return m.base.seq + 1
	}
	return 1
}

// openIncr creates the increment p, with its header, synced, as l.f.
func (l *Log) openIncr(p part) error {
	path := filepath.Join(l.cfg.Dir, p.name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600) // states name users
	if err != nil {
		return fmt.Errorf("aof: %w", err)
	}
	head := appendHeader(nil, store.EffectVersion)
	if _, err := f.Write(head); err != nil {
		f.Close()
		return fmt.Errorf("aof: %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("aof: %s: %w", path, err)
	}
	if err := syncDir(l.cfg.Dir); err != nil {
		f.Close()
		return fmt.Errorf("aof: %s: %w", l.cfg.Dir, err)
	}
	l.f, l.size = f, int64(len(head))
	return nil
}

// filesSize sums the sizes of m's files.
func (l *Log) filesSize(m manifest) int64 {
	var n int64
	for _, p := range m.files() {
		if st, err := os.Stat(filepath.Join(l.cfg.Dir, p.name)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// removeFiles removes old's files that next does not name.
func (l *Log) removeFiles(old, next manifest) {
	keep := map[string]bool{}
	for _, p := range next.files() {
		keep[p.name] = true
	}
	for _, p := range old.files() {
		if !keep[p.name] {
			if err := os.Remove(filepath.Join(l.cfg.Dir, p.name)); err != nil && !notExist(err) {
				l.log.Warn("aof: removing a file a rewrite made obsolete", "file", p.name, "err", err)
			}
		}
	}
	syncDir(l.cfg.Dir)
}
