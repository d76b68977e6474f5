package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rlserver/rlserver/aof"
)

// appendOnly is the core's append-only log (appendonly yes): nil while off.
type appendOnly struct {
	mu     sync.Mutex // orders SetAppendOnly, SetFsync and Close
	log    atomic.Pointer[aof.Log]
	cfg    aof.Config
	loaded aof.LoadInfo
}

// ErrAOFOff is the error of a log operation (BGREWRITEAOF) with appendonly no.
var ErrAOFOff = errors.New("core: the append-only log is off (appendonly no)")

// loadAOF replays the log into the empty store and reports whether there was one.
func (c *Core) loadAOF() (bool, error) {
	info, found, err := aof.Load(c.aof.cfg, c.store, c.clock.Now())
	if err != nil {
		return found, err
	}
	if found {
		c.aof.loaded = info
		c.persist.mark = c.store.Stats()
		c.log.Info("append-only log loaded", "dir", c.aof.cfg.Dir, "files", info.Files, "keys", info.Keys,
			"bytes", info.Bytes, "torn_tail_cut", info.Truncated)
	}
	return found, nil
}

// openAOF starts logging; c.aof.mu is held or New runs.
func (c *Core) openAOF() error {
	l, err := aof.Open(c.aof.cfg, c.store, c.clock.Now)
	if err != nil {
		return err
	}
	c.aof.log.Store(l)
	return nil
}

// AOF is the running append-only log, nil with appendonly no. A front waits on it
// for its writes to be durable (WaitDurable) and refuses writes while it fails (Err).
func (c *Core) AOF() *aof.Log { return c.aof.log.Load() }

// AOFConfig is the log's settings in force, appendonly no or yes.
func (c *Core) AOFConfig() aof.Config {
	c.aof.mu.Lock()
	defer c.aof.mu.Unlock()
	return c.aof.cfg
}

// AOFLoaded is what New loaded from the log.
func (c *Core) AOFLoaded() aof.LoadInfo { return c.aof.loaded }

// SetAppendOnly turns the log on (CONFIG SET appendonly yes: a base of the keys now,
// then every write, as Redis's rewrite on enabling) or off (the log's files stay as
// they are, no longer written).
func (c *Core) SetAppendOnly(on bool) error {
	c.aof.mu.Lock()
	defer c.aof.mu.Unlock()
	l := c.aof.log.Load()
	switch {
	case on && l == nil:
		return c.openAOF()
	case !on && l != nil:
		c.aof.log.Store(nil)
		return l.Close()
	}
	return nil
}

// SetAOFConfig changes the log's settings (CONFIG SET appendfsync, ...): a running
// log takes Fsync and the rewrite thresholds at once; its directory and file name
// are fixed while it runs.
func (c *Core) SetAOFConfig(edit func(*aof.Config) error) error {
	c.aof.mu.Lock()
	defer c.aof.mu.Unlock()
	cfg := c.aof.cfg
	if err := edit(&cfg); err != nil {
		return err
	}
	if l := c.aof.log.Load(); l != nil {
		if cfg.Dir != c.aof.cfg.Dir || cfg.Name != c.aof.cfg.Name {
			return fmt.Errorf("%w while appendonly is yes", ErrImmutable)
		}
		l.SetTunables(cfg)
	}
	c.aof.cfg = cfg
	return nil
}

// RewriteAOF starts a rewrite of the log (BGREWRITEAOF).
func (c *Core) RewriteAOF() error {
	l := c.aof.log.Load()
	if l == nil {
		return ErrAOFOff
	}
	return l.Rewrite()
}

// closeAOF closes the log, after the final save.
func (c *Core) closeAOF() error {
	c.aof.mu.Lock()
	defer c.aof.mu.Unlock()
	l := c.aof.log.Swap(nil)
	if l == nil {
		return nil
	}
	return l.Close()
}
