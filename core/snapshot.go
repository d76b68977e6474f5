package core

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
)

// persistence is the core's snapshot bookkeeping.
type persistence struct {
	mu sync.Mutex // one save at a time; guards mark
	// mark is the store's counters just before the last save began (or after the
	// load): what changed since is read from them, without a counter on the hot path.
	mark store.Stats

	lastSave     atomic.Int64 // Unix seconds of the last successful save, 0 if none
	lastDuration atomic.Int64 // µs the last save took
	lastFailed   atomic.Bool
	saves        atomic.Uint64
	noSave       atomic.Bool // SkipFinalSave (SHUTDOWN NOSAVE)
	retick       chan struct{}
	loaded       store.SnapshotInfo
}

// calls is how many limiter calls the counters record.
func calls(st store.Stats) uint64 {
	var n uint64
	for k := range st.Allowed {
		n += st.Allowed[k] + st.Limited[k]
	}
	return n
}

// changesSinceSave counts the limiter calls (PEEK included), lease releases and
// renewals, and deletions since the last save. Deletions are the keys gone other than
// by expiry or eviction; every key that appears comes with a call, so a change of
// state shows in one or another.
func (c *Core) changesSinceSave() uint64 {
	st := c.store.Stats()
	c.persist.mu.Lock()
	mark := c.persist.mark
	c.persist.mu.Unlock()
	n := calls(st) - calls(mark) + st.Changed - mark.Changed
	gone := int64(mark.Keys) - int64(st.Keys) - int64(st.Expired-mark.Expired) - int64(st.Evicted-mark.Evicted)
	return n + uint64(max(gone, 0))
}

// loadSnapshot loads Config.SnapshotPath into the empty store. A missing file is a
// first start. An unreadable one stops New, unless SnapshotIgnoreCorrupt:
// then it is renamed to PATH.corrupt, kept for a look, and the server starts empty.
func (c *Core) loadSnapshot() error {
	path := c.cfg.SnapshotPath
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.log.Info("no snapshot yet, starting empty", "path", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	info, err := c.store.ReadSnapshot(bufio.NewReaderSize(f, 256<<10), c.clock.Now())
	if err != nil {
		bad := errors.Is(err, store.ErrSnapshotCorrupt) || errors.Is(err, store.ErrSnapshotVersion)
		if !bad || !c.cfg.SnapshotIgnoreCorrupt {
			return fmt.Errorf("snapshot %s: %w (to start empty instead, use -snapshot-ignore-corrupt)", path, err)
		}
		kept := path + ".corrupt"
		if rerr := os.Rename(path, kept); rerr != nil {
			kept = ""
		}
		c.log.Warn("snapshot unreadable, starting empty (-snapshot-ignore-corrupt)", "path", path, "err", err, "kept_as", kept)
		return nil
	}
	c.persist.loaded = info
	c.persist.mark = c.store.Stats()
	c.log.Info("snapshot loaded", "path", path, "keys", info.Keys, "fresh_while_down", info.Fresh,
		"bytes", info.Bytes, "saved_at", time.UnixMicro(info.SavedAt).UTC().Format(time.RFC3339Nano))
	return nil
}

// Save writes the snapshot now, whatever changed (SAVE, SHUTDOWN SAVE), and returns
// when it is on disk. With snapshots off (no Config.SnapshotPath) it returns ErrNoSnapshot.
func (c *Core) Save() error {
	if c.cfg.SnapshotPath == "" {
		return ErrNoSnapshot
	}
	return c.save()
}

// SkipFinalSave makes Close write no snapshot (SHUTDOWN NOSAVE).
func (c *Core) SkipFinalSave() { c.persist.noSave.Store(true) }

// save writes the snapshot now, whatever changed: Save and the loop.
func (c *Core) save() error {
	c.persist.mu.Lock()
	defer c.persist.mu.Unlock()
	begin := time.Now()
	mark := c.store.Stats() // before writing: what changes meanwhile counts for the next save
	info, err := writeSnapshotFile(c.cfg.SnapshotPath, c.store, c.clock.Now())
	c.persist.lastDuration.Store(time.Since(begin).Microseconds())
	c.persist.lastFailed.Store(err != nil)
	if err != nil {
		c.log.Error("snapshot failed", "path", c.cfg.SnapshotPath, "err", err)
		return err
	}
	c.persist.mark = mark
	c.persist.lastSave.Store(time.Now().Unix())
	c.persist.saves.Add(1)
	c.log.Debug("snapshot saved", "path", c.cfg.SnapshotPath, "keys", info.Keys, "bytes", info.Bytes,
		"took", time.Since(begin))
	return nil
}

// writeSnapshotFile writes st's snapshot to path atomically: into a temporary file in
// the same directory, synced, renamed over path, and the directory synced, so that
// path is the old snapshot or the new one, whole, whenever the machine stops.
func writeSnapshotFile(path string, st *store.Store, now int64) (info store.SnapshotInfo, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*") // mode 0600: states name users
	if err != nil {
		return info, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	if info, err = st.WriteSnapshot(w, now); err != nil {
		return info, err
	}
	if err = w.Flush(); err != nil {
		return info, err
	}
	if err = f.Sync(); err != nil {
		return info, err
	}
	if err = f.Close(); err != nil {
		return info, err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return info, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return info, err
	}
	defer d.Close()
	return info, d.Sync()
}

// snapshotLoop saves the store every Tunables.SnapshotInterval if anything changed,
// or, with Tunables.SaveRules, when a rule is met, checked every second.
func (c *Core) snapshotLoop() {
	defer c.loops.Done()
	if c.cfg.SnapshotPath == "" {
		return
	}
	period := func() time.Duration {
		if t := c.tun.Load(); len(t.SaveRules) == 0 {
			return t.SnapshotInterval
		}
		return time.Second
	}
	t := time.NewTicker(period())
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.persist.retick: // UpdateTunables changed SnapshotInterval or SaveRules
			t.Reset(period())
		case <-t.C:
			changes := c.changesSinceSave()
			rules := c.tun.Load().SaveRules
			if len(rules) == 0 && changes > 0 || saveDue(rules, time.Now().Unix(), c.lastSaveTime(), changes) {
				c.save() // a failure is logged and shown in INFO; the next tick tries again
			}
		}
	}
}

// finalSave saves once the fronts have stopped serving, unless snapshots are off,
// SHUTDOWN NOSAVE said not to, or nothing changed since the last save.
func (c *Core) finalSave() error {
	if c.cfg.SnapshotPath == "" || c.persist.noSave.Load() || c.changesSinceSave() == 0 {
		return nil
	}
	return c.save()
}

// SnapshotStatus is the snapshot bookkeeping, as INFO persistence and LASTSAVE show it.
type SnapshotStatus struct {
	// Path is Config.SnapshotPath, empty with snapshots off.
	Path string
	// LastSave is when the last save succeeded, or StartTime if none did.
	LastSave time.Time
	// LastDuration is how long the last save took, LastFailed whether it failed.
	LastDuration time.Duration
	LastFailed   bool
	// Saves counts the successful saves.
	Saves uint64
	// Changes counts the limiter calls, lease releases and renewals, and deletions
	// since the last save.
	Changes uint64
	// Loaded is what New loaded.
	Loaded store.SnapshotInfo
}

// SnapshotStatus reads the snapshot bookkeeping.
func (c *Core) SnapshotStatus() SnapshotStatus {
	return SnapshotStatus{Path: c.cfg.SnapshotPath, LastSave: time.Unix(c.lastSaveTime(), 0),
		LastDuration: time.Duration(c.persist.lastDuration.Load()) * time.Microsecond,
		LastFailed:   c.persist.lastFailed.Load(), Saves: c.persist.saves.Load(),
		Changes: c.changesSinceSave(), Loaded: c.persist.loaded}
}

// lastSaveTime is the Unix time of the last successful save, or of the start.
func (c *Core) lastSaveTime() int64 {
	if t := c.persist.lastSave.Load(); t != 0 {
		return t
	}
	return c.start.Unix()
}
