// Package core is what every front of rlserver stands on, whatever protocol it
// speaks: the store and its expiry, the server clock (and the debug clock), the
// settings that change while it runs (Tunables), snapshot persistence, the role
// (primary or replica, through package replication), the Prometheus registry
// served on /metrics, and the TLS configuration. Package resp is the RESP front
// over a Core; another front takes the same Core.
//
// Lifecycle: New loads the snapshot; Start (which every front's Serve calls) starts
// the expiry loop, the snapshot loop and replication; Close stops them and writes
// the final snapshot, once every front has stopped serving.
package core

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/replication"
	"github.com/rlserver/rlserver/store"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMaxLogLimit is the largest RL.LOG limit unless Config says otherwise.
	DefaultMaxLogLimit = store.DefaultMaxLogLimit
	// DefaultExpireInterval is how often fresh keys are removed unless Config says
	// otherwise. An idle tick over every shard costs microseconds (BenchmarkExpireTick),
	// so 100 ticks a second take a negligible share of a core, and memory returns
	// within 10 ms.
	DefaultExpireInterval = 10 * time.Millisecond
	// DefaultSnapshotInterval is how often a changed store is saved when
	// Config.SnapshotInterval is 0: at most a second of requests is lost to a crash.
	DefaultSnapshotInterval = time.Second
)

// Config configures a Core. The zero value is valid: every zero field takes its default.
type Config struct {
	// Shards is the number of store shards, a power of two; 0 means store.DefaultShards.
	Shards int
	// MaxLogLimit is the largest limit RL.LOG accepts; 0 means DefaultMaxLogLimit.
	MaxLogLimit int64
	// ExpireInterval is how often keys whose state became fresh are removed, so
	// memory returns without traffic; 0 means DefaultExpireInterval.
	ExpireInterval time.Duration
	// Logger receives what the core and the fronts log; nil means slog.Default().
	Logger *slog.Logger
	// LogLevel, if set, is Logger's level, which Tunables.LogLevel changes; nil: the
	// level cannot change.
	LogLevel *slog.LevelVar
	// MaxMemory bounds the store's bytes (INFO used_memory_dataset); 0 means no bound.
	MaxMemory int64
	// MaxMemoryPolicy is what happens to a new key past MaxMemory: evict the keys
	// closest to fresh (the zero value, volatile-ttl) or refuse it (noeviction).
	MaxMemoryPolicy store.Policy

	// TLSCertFile and TLSKeyFile are the PEM certificate and key every front's TLS
	// listener serves (TLSConfig); both or neither.
	TLSCertFile, TLSKeyFile string
	// TLSCACertFile is the PEM file of the CAs that sign the clients' certificates.
	TLSCACertFile string
	// TLSAuthClients is Redis's tls-auth-clients, for every TLS front: "yes", a
	// client must present a certificate TLSCACertFile's CAs signed, else the handshake
	// fails; "optional", one presented must be; "no", none is asked for. Empty: yes
	// with TLSCACertFile, no without it.
	TLSAuthClients string
	// TLSClientSAN, if set, is a name a client's certificate must carry among its
	// subject alternative names (envoyproxy/ratelimit's GRPC_CLIENT_TLS_SAN).
	TLSClientSAN string

	// SnapshotPath is the snapshot file: loaded by New, saved every SnapshotInterval
	// when something changed, by Save, and by Close (unless SkipFinalSave). Empty
	// means no snapshots.
	SnapshotPath string
	// SnapshotInterval is how often a changed store is saved; 0 means
	// DefaultSnapshotInterval.
	SnapshotInterval time.Duration
	// SaveRules, if any, say when the snapshot is saved instead of SnapshotInterval
	// (Redis's save <seconds> <changes>).
	SaveRules []SaveRule
	// SnapshotIgnoreCorrupt starts empty, with a warning, when the snapshot is corrupt
	// or of an unknown version, instead of refusing to start.
	SnapshotIgnoreCorrupt bool

	// AppendOnly turns the append-only log on (appendonly yes): New replays it, when
	// there is one, instead of loading SnapshotPath, and every write is logged.
	AppendOnly bool
	// AOF is the log's settings, kept for CONFIG SET appendonly yes with AppendOnly
	// false; an empty Dir means aof.DefaultDir.
	AOF aof.Config

	// ReplicaOf, if set ("host:port"), starts as a replica of that primary; empty: a primary.
	ReplicaOf string
	// MasterAuth is the password a replica gives its primary.
	MasterAuth string
	// MasterUser, if set, is the ACL user a replica logs in to its primary as, with
	// MasterAuth.
	MasterUser string
	// ReplBacklogSize is the bytes of recent effects a primary keeps for replicas to
	// continue from after a disconnection; 0 means replication.DefaultBacklogSize.
	ReplBacklogSize int
	// Partition is the store's store.Config.Partition: cluster mode's hash slot.
	Partition func(key []byte) uint16
}

// Core is the shared state of one rlserver: create it with New, start it with
// Start (or a front's Serve), stop it with Close after the fronts.
type Core struct {
	cfg   Config
	log   *slog.Logger
	store *store.Store
	clock Clock
	// clockMu orders debug clock changes with the expiry sweep: a sweep that read the
	// time before a test set the clock back would otherwise remove keys written after.
	clockMu sync.Mutex
	repl    *replication.Node
	tls     *tls.Config // nil without a certificate
	runID   string
	start   time.Time // for uptime, in real (monotonic) time whatever the debug clock says
	reg     *prometheus.Registry
	port    atomic.Int64 // the RESP port a replica announces (SetListenPort)

	// tun are the settings that change while running (tunables.go); tunMu orders the changes.
	tun   atomic.Pointer[Tunables]
	tunMu sync.Mutex

	persist persistence // snapshot.go
	aof     appendOnly  // aof.go
	repls   replState   // replstate.go

	roleMu sync.Mutex
	onRole []func(primary bool)

	mu      sync.Mutex
	started bool
	closed  bool
	stop    chan struct{} // closed by Close; ends the loops
	loops   sync.WaitGroup
	closeMu sync.Mutex // a second Close waits for the first's final save
}

// New validates cfg and returns a Core, not yet started, with an empty store or
// the keys of Config.SnapshotPath.
func New(cfg Config) (*Core, error) {
	if cfg.MaxLogLimit < 0 {
		return nil, fmt.Errorf("core: MaxLogLimit must be 0 (default) or positive, got %d", cfg.MaxLogLimit)
	}
	if cfg.ExpireInterval < 0 {
		return nil, fmt.Errorf("core: ExpireInterval must be 0 (default) or positive, got %v", cfg.ExpireInterval)
	}
	if cfg.SnapshotInterval < 0 {
		return nil, fmt.Errorf("core: SnapshotInterval must be 0 (default) or positive, got %v", cfg.SnapshotInterval)
	}
	if cfg.ReplBacklogSize < 0 {
		return nil, fmt.Errorf("core: ReplBacklogSize must be 0 (default) or positive, got %d", cfg.ReplBacklogSize)
	}
	tlsConfig, err := loadTLS(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.SnapshotInterval == 0 {
		cfg.SnapshotInterval = DefaultSnapshotInterval
	}
	if cfg.MaxLogLimit == 0 {
		cfg.MaxLogLimit = DefaultMaxLogLimit
	}
	if cfg.ExpireInterval == 0 {
		cfg.ExpireInterval = DefaultExpireInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st, err := store.New(store.Config{Shards: cfg.Shards, MaxLogLimit: cfg.MaxLogLimit,
		MaxMemory: cfg.MaxMemory, Policy: cfg.MaxMemoryPolicy,
		MonotonicTime: true, Partition: cfg.Partition}) // the clock is read before the shard's lock: see store.Config
	if err != nil {
		return nil, err // the store names the setting and its range
	}
	cfg.Shards = st.Shards() // the store's default where 0 (CONFIG GET shards)
	id := make([]byte, 20)
	rand.Read(id)
	c := &Core{cfg: cfg, log: cfg.Logger, store: st, tls: tlsConfig, runID: hex.EncodeToString(id),
		start: time.Now(), stop: make(chan struct{})}
	c.clock.real()
	c.tun.Store(initialTunables(cfg))
	c.persist.retick = make(chan struct{}, 1)
	if c.aof.cfg = cfg.AOF; c.aof.cfg.Dir == "" {
		c.aof.cfg.Dir = aof.DefaultDir
	}
	if c.aof.cfg.Logger == nil {
		c.aof.cfg.Logger = cfg.Logger
	}
	loaded := false
	if cfg.AppendOnly {
		if loaded, err = c.loadAOF(); err != nil {
			return nil, err
		}
	}
	if cfg.SnapshotPath != "" && !loaded {
		if err := c.loadSnapshot(); err != nil {
			return nil, err
		}
	}
	resume, err := c.loadReplState(loaded)
	if err != nil {
		return nil, err
	}
	c.OnRoleChange(c.replRoleChanged)
	if c.repl, err = replication.New(replication.Config{Store: st, Now: c.clock.Now, Logger: cfg.Logger,
		ReplicaOf: cfg.ReplicaOf, MasterAuth: cfg.MasterAuth, MasterUser: cfg.MasterUser, BacklogSize: cfg.ReplBacklogSize,
		ListenPort: func() int { return int(c.port.Load()) }, OnRoleChange: c.roleChanged,
		BeforeFullSync: c.beforeFullSync, OnFullSync: c.afterFullSync, Resume: resume,
		OnApplied: c.replApplied, Synced: c.replSynced}); err != nil {
		return nil, err
	}
	c.reg = newRegistry(c)
	if cfg.AppendOnly {
		if err := c.openAOF(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Start starts the expiry loop, the snapshot loop and replication. Every front's
// Serve calls it; calling it again, or after Close, does nothing.
func (c *Core) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed {
		return
	}
	c.started = true
	c.loops.Add(3)
	go c.expireLoop()
	go c.snapshotLoop()
	go c.replStateLoop()
	c.repl.Start()
}

// Close stops the loops and replication and writes the final snapshot (unless
// snapshots are off, SkipFinalSave was called or nothing changed), returning its
// error. Call it after every front has stopped serving, so that no command runs
// after the save. Calling it again does nothing.
func (c *Core) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.repl.Stop()
	c.loops.Wait()
	l := c.AOF()
	err := errors.Join(c.finalSave(), c.closeAOF())
	c.saveReplState(l) // the log is synced to its end: the last position holds
	return err
}

// expireLoop removes keys whose state became fresh, so that memory returns by
// itself even when no request touches them.
func (c *Core) expireLoop() {
	defer c.loops.Done()
	t := time.NewTicker(c.cfg.ExpireInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.clockMu.Lock()
			c.store.Expire(c.clock.Now())
			c.clockMu.Unlock()
		}
	}
}

// Config is the Core's configuration, its defaults applied.
func (c *Core) Config() Config { return c.cfg }

// Store is the store every front serves.
func (c *Core) Store() *store.Store { return c.store }

// Clock is the server clock; its Now is what every decision takes as now.
func (c *Core) Clock() *Clock { return &c.clock }

// Now is Clock().Now(): µs since the Unix epoch, or the debug clock's.
func (c *Core) Now() int64 { return c.clock.Now() }

// Logger is Config.Logger, or slog.Default().
func (c *Core) Logger() *slog.Logger { return c.log }

// RunID is this process's random 40-hex-digit id (INFO run_id).
func (c *Core) RunID() string { return c.runID }

// StartTime is when New ran, for uptime.
func (c *Core) StartTime() time.Time { return c.start }

// TLSConfig is the TLS configuration of Config.TLSCertFile and TLSKeyFile, with the
// client certificates Config.TLSAuthClients asks for; nil without a certificate. A front gives it to tls.NewListener (or grpc's credentials); it
// must not be changed.
func (c *Core) TLSConfig() *tls.Config { return c.tls }

// Registry is the Prometheus registry served on /metrics (MetricsHandler): the
// core's metrics, the Go runtime's and the process's are in it; a front registers
// its own collectors into it.
func (c *Core) Registry() *prometheus.Registry { return c.reg }

// Replication is the replication node: the role, the link to a primary, the
// replicas. Fronts that only need the role use IsPrimary and OnRoleChange.
func (c *Core) Replication() *replication.Node { return c.repl }

// IsPrimary reports whether this server is a primary, which takes writes; a
// replica's fronts refuse them (and a gRPC health check answers NOT_SERVING).
func (c *Core) IsPrimary() bool { return !c.repl.ReadOnly() }

// Loading reports whether a replica's full sync is loading the store: a front
// refuses to read or write it meanwhile.
func (c *Core) Loading() bool { return c.repl.Loading() }

// OnRoleChange registers f, called after every change of role (REPLICAOF, a
// Sentinel failover) with whether the server is now a primary. f runs in the
// goroutine that changed the role and must not block.
func (c *Core) OnRoleChange(f func(primary bool)) {
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	c.onRole = append(c.onRole, f)
}

// roleChanged calls the OnRoleChange functions.
func (c *Core) roleChanged(primary bool) {
	c.roleMu.Lock()
	fs := c.onRole
	c.roleMu.Unlock()
	for _, f := range fs {
		f(primary)
	}
}

// SetListenPort records the RESP port, which a replica announces to its primary
// (the primary's INFO slaveN, read by Sentinel to reach the replica); the RESP
// front's Serve calls it.
func (c *Core) SetListenPort(port int) { c.port.Store(int64(port)) }

// SetClock freezes the clock at t µs since the Unix epoch, 1 to MaxClock (DEBUG
// CLOCK SET): for tests. It reports false, changing nothing, out of that range.
func (c *Core) SetClock(t int64) bool {
	if t < 1 || t > MaxClock {
		return false
	}
	c.changeClock(func() bool { c.clock.set(t); return true })
	return true
}

// AdvanceClock moves the clock d µs forward, 0 to MaxClock, and leaves it frozen
// there (DEBUG CLOCK ADVANCE). It reports false, changing nothing, if the result
// would pass MaxClock.
func (c *Core) AdvanceClock(d int64) bool {
	if d < 0 || d > MaxClock {
		return false
	}
	return c.changeClock(func() bool { return c.clock.advance(d) })
}

// RealClock makes the clock follow the real time again (DEBUG CLOCK REAL).
func (c *Core) RealClock() {
	c.changeClock(func() bool { c.clock.real(); return true })
}

// changeClock runs change, ordered with the expiry sweep, and if it changed the
// clock tells the store, since a test may set the clock back on purpose.
func (c *Core) changeClock(change func() bool) bool {
	c.clockMu.Lock()
	defer c.clockMu.Unlock()
	if !change() {
		return false
	}
	c.store.ResetTime()
	return true
}
