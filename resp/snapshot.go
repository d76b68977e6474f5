package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
)

// DefaultSnapshotInterval is how often a changed store is saved when
// Config.SnapshotInterval is 0: at most a second of requests is lost to a crash.
const DefaultSnapshotInterval = time.Second

// errNoSnapshot answers SAVE and SHUTDOWN SAVE on a server started without a file.
const errNoSnapshot = "ERR snapshots are off: start rlserver with -snapshot PATH"

// persistence is the server's snapshot bookkeeping.
type persistence struct {
	mu sync.Mutex // one save at a time; guards mark
	// mark is the store's counters just before the last save began (or after the
	// load): what changed since is read from them, without a counter on the hot path.
	mark store.Stats

	lastSave     atomic.Int64 // Unix seconds of the last successful save, 0 if none
	lastDuration atomic.Int64 // µs the last save took
	lastFailed   atomic.Bool
	saves        atomic.Uint64
	noSave       atomic.Bool // SHUTDOWN NOSAVE: no final save
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
func (s *Server) changesSinceSave() uint64 {
	st := s.store.Stats()
	s.persist.mu.Lock()
	mark := s.persist.mark
	s.persist.mu.Unlock()
	n := calls(st) - calls(mark) + st.Changed - mark.Changed
	gone := int64(mark.Keys) - int64(st.Keys) - int64(st.Expired-mark.Expired) - int64(st.Evicted-mark.Evicted)
	return n + uint64(max(gone, 0))
}

// loadSnapshot loads Config.SnapshotPath into the empty store. A missing file is a
// first start. An unreadable one stops the server, unless SnapshotIgnoreCorrupt:
// then it is renamed to PATH.corrupt, kept for a look, and the server starts empty.
func (s *Server) loadSnapshot() error {
	path := s.cfg.SnapshotPath
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.log.Info("no snapshot yet, starting empty", "path", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	info, err := s.store.ReadSnapshot(bufio.NewReaderSize(f, 256<<10), s.clock.now())
	if err != nil {
		bad := errors.Is(err, store.ErrSnapshotCorrupt) || errors.Is(err, store.ErrSnapshotVersion)
		if !bad || !s.cfg.SnapshotIgnoreCorrupt {
			return fmt.Errorf("snapshot %s: %w (to start empty instead, use -snapshot-ignore-corrupt)", path, err)
		}
		kept := path + ".corrupt"
		if rerr := os.Rename(path, kept); rerr != nil {
			kept = ""
		}
		s.log.Warn("snapshot unreadable, starting empty (-snapshot-ignore-corrupt)", "path", path, "err", err, "kept_as", kept)
		return nil
	}
	s.persist.loaded = info
	s.persist.mark = s.store.Stats()
	s.log.Info("snapshot loaded", "path", path, "keys", info.Keys, "fresh_while_down", info.Fresh,
		"bytes", info.Bytes, "saved_at", time.UnixMicro(info.SavedAt).UTC().Format(time.RFC3339Nano))
	return nil
}

// save writes the snapshot now, whatever changed: SAVE, SHUTDOWN, and the loop.
func (s *Server) save() error {
	s.persist.mu.Lock()
	defer s.persist.mu.Unlock()
	begin := time.Now()
	mark := s.store.Stats() // before writing: what changes meanwhile counts for the next save
	info, err := writeSnapshotFile(s.cfg.SnapshotPath, s.store, s.clock.now())
	s.persist.lastDuration.Store(time.Since(begin).Microseconds())
	s.persist.lastFailed.Store(err != nil)
	if err != nil {
		s.log.Error("snapshot failed", "path", s.cfg.SnapshotPath, "err", err)
		return err
	}
	s.persist.mark = mark
	s.persist.lastSave.Store(time.Now().Unix())
	s.persist.saves.Add(1)
	s.log.Debug("snapshot saved", "path", s.cfg.SnapshotPath, "keys", info.Keys, "bytes", info.Bytes,
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

// snapshotLoop saves the store every SnapshotInterval if anything changed.
func (s *Server) snapshotLoop() {
	defer s.ticker.Done()
	if s.cfg.SnapshotPath == "" {
		return
	}
	t := time.NewTicker(s.tun.Load().snapshotInt)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.persist.retick: // CONFIG SET snapshot-interval
			t.Reset(s.tun.Load().snapshotInt)
		case <-t.C:
			if s.changesSinceSave() > 0 {
				s.save() // a failure is logged and shown in INFO; the next tick tries again
			}
		}
	}
}

// finalSave saves once the server has stopped serving, unless snapshots are off,
// SHUTDOWN NOSAVE said not to, or nothing changed since the last save.
func (s *Server) finalSave() error {
	if s.cfg.SnapshotPath == "" || s.persist.noSave.Load() || s.changesSinceSave() == 0 {
		return nil
	}
	return s.save()
}

// cmdSave serves SAVE: write the snapshot now and answer when it is on disk.
func cmdSave(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.SnapshotPath == "" {
		c.writeError(errNoSnapshot)
		return
	}
	if err := s.save(); err != nil {
		c.writeError("ERR snapshot failed: " + err.Error())
		return
	}
	c.w.WriteString("OK")
}

// cmdLastSave serves LASTSAVE: the Unix time of the last successful save, or of the
// start if there was none, as Redis answers.
func cmdLastSave(s *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteInt64(s.lastSaveTime())
}

// lastSaveTime is the Unix time of the last successful save, or of the start.
func (s *Server) lastSaveTime() int64 {
	if t := s.persist.lastSave.Load(); t != 0 {
		return t
	}
	return s.start.Unix()
}

// persistenceInfo is INFO's persistence section, in Redis's names where they fit.
func (s *Server) persistenceInfo() [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	status := "ok"
	if s.persist.lastFailed.Load() {
		status = "err"
	}
	lastDuration := "-1" // Redis's answer before the first save
	if s.persist.saves.Load() > 0 || s.persist.lastFailed.Load() {
		lastDuration = itoa(s.persist.lastDuration.Load() / 1_000_000)
	}
	enabled := "0"
	if s.cfg.SnapshotPath != "" {
		enabled = "1"
	}
	return [][2]string{
		{"loading", "0"},
		{"snapshot_enabled", enabled},
		{"snapshot_path", s.cfg.SnapshotPath},
		{"rdb_changes_since_last_save", strconv.FormatUint(s.changesSinceSave(), 10)},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", itoa(s.lastSaveTime())},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_bgsave_time_sec", lastDuration},
		{"rdb_saves", strconv.FormatUint(s.persist.saves.Load(), 10)},
		{"rdb_last_load_keys_loaded", strconv.Itoa(s.persist.loaded.Keys)},
		{"rdb_last_load_keys_expired", strconv.Itoa(s.persist.loaded.Fresh)},
	}
}
