package aof

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// A rewrite (BGREWRITEAOF, or the log's growth past the auto-rewrite thresholds)
// compacts the log as Redis 7 does: the writer first starts a new increment, listed
// after the others in the manifest, so that every write from then on goes there; a
// base is then written of the store's keys, taken shard by shard while requests go on;
// the manifest is then replaced by the new base and the new increment, and the old
// files removed. A write that lands in the new increment and also in the base is
// replayed over it: a record is a key's whole resulting state, so applying it again
// leaves the state it gave. A crash at any point leaves a manifest whose files
// replay to every acknowledged write.

// rewriteState is the rewrites' bookkeeping.
type rewriteState struct {
	wg        sync.WaitGroup
	running   atomic.Bool
	scheduled atomic.Bool // Schedule asked for one while another ran
	failed    atomic.Bool // the last rewrite failed
	count     atomic.Uint64
	took      atomic.Int64 // µs of the last rewrite, -1 if none
	began     atomic.Int64 // Unix µs the running rewrite began
}

// Rewrite starts a rewrite in the background, or returns ErrRewriteRunning.
func (l *Log) Rewrite() error {
	if !l.rewrites.running.CompareAndSwap(false, true) {
		return ErrRewriteRunning
	}
	l.mu.Lock()
	closed := l.stopping
	if !closed {
		l.rewrites.wg.Add(1)
	}
	l.mu.Unlock()
	if closed {
		l.rewrites.running.Store(false)
		return ErrClosed
	}
	go func() {
		defer l.rewrites.wg.Done()
		l.rewrite()
	}()
	return nil
}

// Schedule starts a rewrite, or, if one runs, another after it (Redis's
// aof_rewrite_scheduled): for a store whose keys changed without effects (a
// replica's full sync), which the running rewrite's base may have missed.
func (l *Log) Schedule() {
	l.rewrites.scheduled.Store(true)
	if l.Rewrite() == nil {
		l.rewrites.scheduled.Store(false)
	}
}

// RewriteNow runs a rewrite and returns when it is done.
func (l *Log) RewriteNow() error {
	if !l.rewrites.running.CompareAndSwap(false, true) {
		return ErrRewriteRunning
	}
	l.mu.Lock()
	if l.stopping {
		l.mu.Unlock()
		l.rewrites.running.Store(false)
		return ErrClosed
	}
	l.rewrites.wg.Add(1)
	l.mu.Unlock()
	defer l.rewrites.wg.Done()
	return l.rewrite()
}

// rewrite does the rewrite; l.rewrites.running is set and cleared here.
func (l *Log) rewrite() error {
	defer func() {
		l.rewrites.running.Store(false)
		if l.rewrites.scheduled.Swap(false) {
			l.Schedule()
		}
	}()
	begin := time.Now()
	l.rewrites.began.Store(begin.UnixMicro())
	err := l.rewriteFiles()
	l.rewrites.took.Store(time.Since(begin).Microseconds())
	l.rewrites.failed.Store(err != nil)
	if err != nil {
		l.log.Error("aof: rewrite failed", "dir", l.cfg.Dir, "err", err)
		return err
	}
	l.rewrites.count.Add(1)
	l.baseSize.Store(l.curSize.Load())
	l.log.Info("aof: rewrite done", "dir", l.cfg.Dir, "bytes", l.curSize.Load(), "took", time.Since(begin))
	return nil
}

func (l *Log) rewriteFiles() error {
	reply := make(chan error, 1)
	select {
	case l.rotate <- reply:
	case <-l.done:
		return ErrClosed
	}
	if err := <-reply; err != nil {
		return err
	}
	l.mu.Lock()
	old := l.m
	l.mu.Unlock()
	b, err := l.writeBase(l.nextBaseSeq(old))
	if err != nil {
		return err
	}
	last, _ := old.lastIncr()
	next := manifest{base: &b, incrs: []part{last}}
	if err := writeManifest(l.cfg.Dir, l.cfg.name(), next); err != nil {
		os.Remove(filepath.Join(l.cfg.Dir, b.name))
		return fmt.Errorf("aof: manifest in %s: %w", l.cfg.Dir, err)
	}
	l.mu.Lock()
	l.m = next
	l.mu.Unlock()
	l.removeFiles(old, next)
	l.curSize.Store(l.filesSize(next))
	return nil
}

// rotateIncr, run by the writer, writes and syncs what the journal holds into the
// increment, then starts the next one and lists it in the manifest.
func (l *Log) rotateIncr() error {
	l.flush(true)
	if err := l.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	oldF, oldSize := l.f, l.size
	p := part{name: incrName(l.cfg.name(), l.nextSeq(m)), seq: l.nextSeq(m), kind: kindIncr}
	if err := l.openIncr(p); err != nil {
		l.f, l.size = oldF, oldSize
		return err
	}
	next := manifest{base: m.base, incrs: append(append([]part(nil), m.incrs...), p)}
	if err := writeManifest(l.cfg.Dir, l.cfg.name(), next); err != nil {
		l.f.Close()
		os.Remove(filepath.Join(l.cfg.Dir, p.name))
		l.f, l.size = oldF, oldSize
		return fmt.Errorf("aof: manifest in %s: %w", l.cfg.Dir, err)
	}
	oldF.Close()
	l.curSize.Add(l.size)
	l.mu.Lock()
	l.m = next
	l.mu.Unlock()
	return nil
}

// writeBase writes a base of seq of the store's keys at now, atomically.
func (l *Log) writeBase(seq int64) (part, error) {
	p := part{name: baseName(l.cfg.name(), seq), seq: seq, kind: kindBase}
	path := filepath.Join(l.cfg.Dir, p.name)
	f, err := os.CreateTemp(l.cfg.Dir, "temp-"+p.name+"-*")
	if err != nil {
		return p, fmt.Errorf("aof: base in %s: %w", l.cfg.Dir, err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	_, err = l.st.WriteSnapshot(w, l.now())
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(l.cfg.Dir)
	}
	if err != nil {
		os.Remove(f.Name())
		return p, fmt.Errorf("aof: base %s: %w", path, err)
	}
	return p, nil
}

// maybeRewrite starts a rewrite if the log has grown past the thresholds.
func (l *Log) maybeRewrite() {
	pct := l.pct.Load()
	if pct <= 0 || l.rewrites.running.Load() {
		return
	}
	cur, base := l.curSize.Load(), l.baseSize.Load()
	if cur < l.minSize.Load() || cur < base+base*pct/100 {
		return
	}
	l.Rewrite()
}
