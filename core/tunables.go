package core

import (
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/rlserver/rlserver/store"
)

// Tunables are the core's settings that change while it runs (the RESP front's
// CONFIG SET maxmemory, maxmemory-policy, loglevel, snapshot-interval). A change
// builds a new value and swaps the pointer, so readers take them with one atomic
// load and no lock.
type Tunables struct {
	// MaxMemory bounds the store's bytes; 0 means no bound.
	MaxMemory int64
	// MaxMemoryPolicy is what happens past MaxMemory, as set (see EffectivePolicy).
	MaxMemoryPolicy store.Policy
	// LogLevel is Config.LogLevel's level; it changes only with a Config.LogLevel.
	LogLevel slog.Level
	// SnapshotInterval is how often a changed store is saved, positive, without
	// SaveRules.
	SnapshotInterval time.Duration
	// SaveRules, if any, say when the snapshot is saved instead (Redis's save): the
	// rules are checked every second.
	SaveRules []SaveRule
}

// Errors of the core's methods.
var (
	// ErrNoSnapshot is Save's error when snapshots are off.
	ErrNoSnapshot = errors.New("core: snapshots are off: no Config.SnapshotPath")
	// The errors of UpdateTunables.
	// ErrImmutable refuses a change of a setting fixed at start: the log level
	// without Config.LogLevel.
	ErrImmutable = errors.New("can't set immutable config")
	// ErrSnapshotInterval refuses a SnapshotInterval that is not positive.
	ErrSnapshotInterval = errors.New("core: SnapshotInterval must be positive")
)

// initialTunables reads cfg, its defaults applied.
func initialTunables(cfg Config) *Tunables {
	t := &Tunables{MaxMemory: cfg.MaxMemory, MaxMemoryPolicy: cfg.MaxMemoryPolicy,
		SnapshotInterval: cfg.SnapshotInterval, SaveRules: cfg.SaveRules}
	if cfg.LogLevel != nil {
		t.LogLevel = cfg.LogLevel.Level()
	}
	return t
}

// EffectivePolicy is the policy in effect, as CONFIG GET and INFO report it: without
// maxmemory nothing is ever evicted, so noeviction, as Redis's default says.
func (t *Tunables) EffectivePolicy() store.Policy {
	if t.MaxMemory == 0 {
		return store.PolicyNoEviction
	}
	return t.MaxMemoryPolicy
}

// Tunables are the settings in force; the value must not be changed.
func (c *Core) Tunables() *Tunables { return c.tun.Load() }

// UpdateTunables changes the settings all at once or not at all: edit changes a copy
// of those in force; if it returns an error, or the new ones are refused (the
// store's memory bound, a fixed log level), nothing changes and the error is returned.
func (c *Core) UpdateTunables(edit func(*Tunables) error) error {
	c.tunMu.Lock()
	defer c.tunMu.Unlock()
	old := c.tun.Load()
	draft := *old
	if err := edit(&draft); err != nil {
		return err
	}
	if draft.LogLevel != old.LogLevel && c.cfg.LogLevel == nil {
		return ErrImmutable
	}
	if draft.SnapshotInterval <= 0 {
		return ErrSnapshotInterval
	}
	// The store checks the memory bound against its shards; it is the one change
	// that can fail, so it goes first, changing nothing if it does.
	if draft.MaxMemory != old.MaxMemory || draft.MaxMemoryPolicy != old.MaxMemoryPolicy {
		if err := c.store.SetMaxMemory(draft.MaxMemory, draft.MaxMemoryPolicy); err != nil {
			return err
		}
	}
	c.tun.Store(&draft)
	if c.cfg.LogLevel != nil {
		c.cfg.LogLevel.Set(draft.LogLevel)
	}
	if draft.SnapshotInterval != old.SnapshotInterval || !slices.Equal(draft.SaveRules, old.SaveRules) {
		select {
		case c.persist.retick <- struct{}{}:
		default:
		}
	}
	return nil
}
