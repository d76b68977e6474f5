package core

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/replication"
)

// A replica with appendonly yes keeps, beside its log, a file saying where the log
// stands in its primary's stream (replid, offset, format), so that restarted from its
// files it continues from the primary's backlog instead of a full sync, as Redis 7's
// replica does. The file says a position the log holds at least: an effect is a key's
// whole state, so the primary sending again what the log already holds leaves the
// same states, while a position beyond the log would skip effects. Hence a position
// is written only once the log's sync (aof.Log.Durable) covers the journal's end read
// after the frame that reached it, and, after a full sync, only once a rewrite begun
// after the load (whose base holds the snapshot's keys, which came without effects)
// is done. The file goes before a full sync empties the store and when the server
// becomes a primary: its log then holds writes no primary streamed. The same
// position, read with each ack, is the FACK a replica reports for WAITAOF.

// replStateEvery is how often a replica's position is written, when it moved: a
// restart continues from at most that long before, which the primary sends again.
const replStateEvery = time.Second

// replMark is a position and the journal's end of log just after it was applied.
type replMark struct {
	log *aof.Log
	end int64
	at  replication.Position
}

// replState is the replica's positions not yet written, and what gates them.
type replState struct {
	mu      sync.Mutex
	marks   []replMark
	blocked bool // a full sync is loading
	// gate, once a full sync has loaded, holds marks of gateLog back until it has
	// done gateRewrites rewrites.
	gateLog      *aof.Log
	gateRewrites uint64
	durable      replication.Position // the latest position the log holds
	written      replication.Position // the position in the file
}

// replStatePath is the position's file, in the log's directory.
func (c *Core) replStatePath() string {
	cfg := c.AOFConfig()
	return filepath.Join(cfg.Dir, cmp.Or(cfg.Name, aof.DefaultName)+".replica")
}

// loadReplState reads the position of the log New loaded, for a replica; on a
// primary, or without a loaded log, it removes a file left over: what the store
// holds is not, or no longer, at that position.
func (c *Core) loadReplState(loaded bool) (replication.Position, error) {
	path := c.replStatePath()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return replication.Position{}, nil
	}
	if err != nil {
		return replication.Position{}, fmt.Errorf("replica position: %w", err)
	}
	if c.cfg.ReplicaOf == "" || !loaded {
		return replication.Position{}, removeSynced(path)
	}
	f := strings.Fields(string(b))
	var pos replication.Position
	var off, format int64
	if len(f) == 3 {
		pos.ReplID = f[0]
		off, err = strconv.ParseInt(f[1], 10, 64)
		if err == nil {
			format, err = strconv.ParseInt(f[2], 10, 32)
		}
	}
	if len(f) != 3 || err != nil || len(pos.ReplID) != 40 || off < 0 || format < 0 {
		c.log.Warn("replica position unreadable: the first sync is a full one", "file", path)
		return replication.Position{}, removeSynced(path)
	}
	pos.Offset, pos.Format = off, uint32(format)
	c.repls.written, c.repls.durable = pos, pos
	c.log.Info("replica position loaded: asking the primary to continue from it", "replid", pos.ReplID, "offset", off)
	return pos, nil
}

// replApplied records a position a replica reached (replication.Config.OnApplied).
func (c *Core) replApplied(pos replication.Position) {
	l := c.AOF()
	if l == nil {
		return
	}
	end := l.End()
	c.repls.mu.Lock()
	defer c.repls.mu.Unlock()
	if len(c.repls.marks) >= 1024 { // at most a second's frames are kept: drop the older half
		c.repls.marks = append(c.repls.marks[:0], c.repls.marks[512:]...)
	}
	c.repls.marks = append(c.repls.marks, replMark{log: l, end: end, at: pos})
}

// beforeFullSync forgets the replica's position: its store is about to be emptied.
func (c *Core) beforeFullSync() {
	c.repls.mu.Lock()
	defer c.repls.mu.Unlock()
	c.repls.blocked = true
	c.forgetReplLocked()
}

// forgetReplLocked drops the positions and the file; c.repls.mu is held.
func (c *Core) forgetReplLocked() {
	c.repls.marks = nil
	c.repls.durable = replication.Position{}
	if c.repls.written != (replication.Position{}) {
		c.repls.written = replication.Position{}
		if err := removeSynced(c.replStatePath()); err != nil {
			c.log.Error("replica position: cannot remove its file", "err", err)
		}
	}
}

// afterFullSync rewrites the log of a replica that loaded its primary's snapshot, and
// holds its positions back until a rewrite begun now is done.
func (c *Core) afterFullSync() {
	l := c.aof.log.Load()
	c.repls.mu.Lock()
	defer c.repls.mu.Unlock()
	c.repls.blocked = false
	c.repls.gateLog = l
	if l == nil {
		return
	}
	st := l.Status()
	c.repls.gateRewrites = st.Rewrites + 1
	if st.RewriteInProgress { // begun before the load: the next one counts
		c.repls.gateRewrites++
	}
	l.Schedule()
}

// replRoleChanged forgets the position of a replica promoted: writes of its own follow.
func (c *Core) replRoleChanged(primary bool) {
	if primary {
		c.repls.mu.Lock()
		c.forgetReplLocked()
		c.repls.mu.Unlock()
	}
}

// advanceReplLocked moves c.repls.durable to the latest position that log's sync
// covers; c.repls.mu is held.
func (c *Core) advanceReplLocked(l *aof.Log) {
	if c.repls.blocked || c.repls.gateLog == l && l.Status().Rewrites < c.repls.gateRewrites {
		return
	}
	durable := l.Durable()
	i := -1
	for k, m := range c.repls.marks {
		if m.log == l && m.end <= durable {
			i = k
		}
	}
	if i >= 0 {
		c.repls.durable = c.repls.marks[i].at
		c.repls.marks = append(c.repls.marks[:0], c.repls.marks[i+1:]...)
	}
}

// replSynced is the offset of the primary's stream that a replica's log holds, and
// false without a log (replication.Config.Synced): WAITAOF's count on the primary.
func (c *Core) replSynced() (int64, bool) {
	l := c.AOF()
	if l == nil {
		return 0, false
	}
	c.repls.mu.Lock()
	defer c.repls.mu.Unlock()
	c.advanceReplLocked(l)
	return c.repls.durable.Offset, true
}

// saveReplState writes the latest position that log's sync covers, if it moved.
func (c *Core) saveReplState(l *aof.Log) {
	if l == nil || !c.repl.ReadOnly() {
		return
	}
	c.repls.mu.Lock()
	defer c.repls.mu.Unlock()
	c.advanceReplLocked(l)
	at := c.repls.durable
	if at == c.repls.written || at.ReplID == "" {
		return
	}
	text := fmt.Sprintf("%s %d %d\n", at.ReplID, at.Offset, at.Format)
	if err := writeFileSynced(c.replStatePath(), []byte(text)); err != nil {
		c.log.Warn("replica position: cannot write its file", "err", err)
		return
	}
	c.repls.written = at
}

// replStateLoop writes the replica's position every replStateEvery.
func (c *Core) replStateLoop() {
	defer c.loops.Done()
	t := time.NewTicker(replStateEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.saveReplState(c.AOF())
		}
	}
}

// writeFileSynced writes path atomically: a synced temporary file renamed over it,
// the directory synced.
func writeFileSynced(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
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

// removeSynced removes path, if there, and syncs its directory.
func removeSynced(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir syncs a directory, so that a rename or removal in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
