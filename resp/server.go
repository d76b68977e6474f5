// Package resp is rlserver's network side: it speaks RESP2 and RESP3 (the Redis
// protocol) through github.com/tidwall/redcon, holds the one command table that
// drives dispatch, COMMAND, COMMAND DOCS and docs/commands.md, owns the server
// clock, and hands every RL.* call to the store. It knows no algorithm math.
//
// Pipelined commands are read as one batch and answered with one write: redcon
// reads everything the socket has, runs the handler for each command (replies are
// appended to the connection's buffer) and flushes once after the batch.
package resp

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/store"
	"github.com/tidwall/redcon"
)

// Version is rlserver's version, reported by INFO and rlserver --version; make
// release stamps the release's own with -ldflags -X.
var Version = "1.0.0"

// redisVersion is the Redis version whose commands and replies rlserver follows.
// HELLO and INFO report it so that clients which switch features on the server
// version (redis-cli, client libraries) treat rlserver as a Redis 7.0.
const redisVersion = "7.0.0"

// Defaults applied by NewServer to zero Config fields.
const (
	// DefaultMaxLogLimit is the largest RL.LOG limit unless Config says otherwise.
	DefaultMaxLogLimit = store.DefaultMaxLogLimit
	// DefaultExpireInterval is how often fresh keys are removed unless Config says
	// otherwise. An idle tick over every shard costs microseconds (BenchmarkExpireTick),
	// so 100 ticks a second take a negligible share of a core, and memory returns
	// within 10 ms.
	DefaultExpireInterval = 10 * time.Millisecond
)

// Config configures a Server. The zero value is valid: every zero field takes its default.
type Config struct {
	// Shards is the number of store shards, a power of two; 0 means store.DefaultShards.
	Shards int
	// MaxLogLimit is the largest limit RL.LOG accepts; 0 means DefaultMaxLogLimit.
	MaxLogLimit int64
	// EnableDebugCommand turns on DEBUG CLOCK SET|ADVANCE|REAL, for tests. Off by
	// default, as Redis's enable-debug-command.
	EnableDebugCommand bool
	// ExpireInterval is how often the server removes keys whose state became fresh,
	// so memory returns without traffic; 0 means DefaultExpireInterval.
	ExpireInterval time.Duration
	// Logger receives connection errors and recovered panics; nil means slog.Default().
	Logger *slog.Logger
	// LogLevel, if set, is Logger's level, which CONFIG SET loglevel changes; nil: the
	// level cannot change.
	LogLevel *slog.LevelVar
	// ConfigFile is the file the server was configured from, which CONFIG REWRITE
	// writes the running settings into; empty: CONFIG REWRITE answers Redis's error.
	ConfigFile string
	// SlowlogLogSlowerThan is the run time from which a command enters SLOWLOG; 0
	// means DefaultSlowlogLogSlowerThan, negative logs nothing. (Redis's 0, every
	// command, is any duration under a microsecond here, such as time.Nanosecond.)
	SlowlogLogSlowerThan time.Duration
	// SlowlogMaxLen is how many entries SLOWLOG keeps; 0 means DefaultSlowlogMaxLen,
	// negative none.
	SlowlogMaxLen int
	// MaxMemory bounds the store's bytes (INFO used_memory_dataset); 0 means no bound.
	MaxMemory int64
	// MaxMemoryPolicy is what happens to a new key past MaxMemory: evict the keys
	// closest to fresh (the zero value, volatile-ttl) or refuse it (noeviction).
	MaxMemoryPolicy store.Policy

	// RequirePass, if set, is the default user's password: until a connection
	// authenticates (AUTH, HELLO AUTH), only the "no-auth" commands are served.
	RequirePass string
	// TLSCertFile and TLSKeyFile are the PEM certificate and key for ServeTLS;
	// both or neither.
	TLSCertFile, TLSKeyFile string
	// MaxClients is the most connections served at once; 0 means DefaultMaxClients.
	// Beyond it a new connection gets Redis's error and is closed.
	MaxClients int
	// IdleTimeout closes a connection that sent nothing for that long; 0 means never.
	IdleTimeout time.Duration
	// ProtoMaxBulkLen is the largest bulk string a request may announce; 0 means
	// DefaultProtoMaxBulkLen.
	ProtoMaxBulkLen int64

	// SnapshotPath is the snapshot file: loaded by NewServer, saved every
	// SnapshotInterval when something changed, by SAVE, and when the server stops
	// (unless SHUTDOWN NOSAVE). Empty means no snapshots.
	SnapshotPath string
	// SnapshotInterval is how often a changed store is saved; 0 means
	// DefaultSnapshotInterval.
	SnapshotInterval time.Duration
	// SnapshotIgnoreCorrupt starts the server empty, with a warning, when the snapshot
	// is corrupt or of an unknown version, instead of refusing to start.
	SnapshotIgnoreCorrupt bool

	// Cluster, if set, makes the server one node of a Redis Cluster: it runs a
	// command with keys only when they hash to one of its own slots, answers
	// MOVED or CROSSSLOT otherwise, and serves CLUSTER SLOTS and the like. Nil:
	// standalone.
	Cluster *cluster.Topology

	// ReplicaOf, if set ("host:port"), starts the server as a replica of that
	// primary, as REPLICAOF host port would; empty: a primary.
	ReplicaOf string
	// MasterAuth is the password a replica gives its primary (the primary's RequirePass).
	MasterAuth string
	// ReplBacklogSize is the bytes of recent effects a primary keeps for replicas to
	// continue from after a disconnection; 0 means DefaultReplBacklogSize.
	ReplBacklogSize int
	// ReplicaPriority is Sentinel's replica priority (INFO slave_priority): lower is
	// promoted first; 0 means Redis's default 100, a negative value 0 (never promoted).
	ReplicaPriority int
}

// Errors returned by Server methods.
var (
	// ErrServerClosed is returned by Serve after Close, or when Serve is called twice.
	ErrServerClosed = errors.New("resp: server closed")
	// ErrNoTLS is returned by ServeTLS when Config has no certificate.
	ErrNoTLS = errors.New("resp: ServeTLS needs Config.TLSCertFile and TLSKeyFile")
)

// Server is an rlserver instance: a store, a clock, and the RESP listener in front.
// Create it with NewServer, start it with Serve, stop it with Close or SHUTDOWN.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *store.Store
	clock clock
	// clockMu orders DEBUG CLOCK changes with the expiry sweep: a sweep that read the
	// time before a test set the clock back would otherwise remove keys written after.
	clockMu sync.Mutex
	rc      *redcon.Server
	rcTLS   *redcon.Server // the same callbacks as rc, for the TLS listener
	runID   string
	start   time.Time // for uptime, in real (monotonic) time whatever the debug clock says

	tlsConfig *tls.Config // nil without a certificate

	// tun are the settings CONFIG SET changes (config.go); tunMu orders the changes.
	tun   atomic.Pointer[tunables]
	tunMu sync.Mutex
	// statBase is INFO's counters at the last CONFIG RESETSTAT (cmd_info.go).
	statBase atomic.Pointer[statCounters]

	mu      sync.Mutex
	ln      net.Listener
	tlsLn   net.Listener
	serving bool // the expiry ticker runs
	closed  bool
	clients map[*client]struct{}
	stop    chan struct{} // closed by Close; ends the expiry ticker
	ticker  sync.WaitGroup
	conns   sync.WaitGroup // connections still running commands

	nextClientID atomic.Int64
	connected    atomic.Int64
	connections  atomic.Uint64 // accepted since start
	rejected     atomic.Uint64 // refused for maxclients
	// Counters of connections that have closed; live ones count in their client.
	closedCommands atomic.Uint64
	closedErrors   atomic.Uint64

	persist  persistence   // snapshot.go
	metrics  metrics       // metrics.go
	repl     replication   // replication.go
	applied  replicaOffset // replication.go: a replica's position in its primary's stream
	ps       pubsub        // pubsub.go
	mon      monitors      // monitor.go
	slow     slowlog       // slowlog.go
	errStats errorStats    // info_stats.go
}

// NewServer validates cfg and returns a Server, not yet listening, with an empty
// store or the keys of Config.SnapshotPath.
func NewServer(cfg Config) (*Server, error) {
	if cfg.MaxLogLimit < 0 {
		return nil, fmt.Errorf("resp: MaxLogLimit must be 0 (default) or positive, got %d", cfg.MaxLogLimit)
	}
	if cfg.ExpireInterval < 0 {
		return nil, fmt.Errorf("resp: ExpireInterval must be 0 (default) or positive, got %v", cfg.ExpireInterval)
	}
	if cfg.MaxClients < 0 {
		return nil, fmt.Errorf("resp: MaxClients must be 0 (default) or positive, got %d", cfg.MaxClients)
	}
	if cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("resp: IdleTimeout must be 0 (none) or positive, got %v", cfg.IdleTimeout)
	}
	if cfg.ProtoMaxBulkLen < 0 {
		return nil, fmt.Errorf("resp: ProtoMaxBulkLen must be 0 (default) or positive, got %d", cfg.ProtoMaxBulkLen)
	}
	if cfg.SnapshotInterval < 0 {
		return nil, fmt.Errorf("resp: SnapshotInterval must be 0 (default) or positive, got %v", cfg.SnapshotInterval)
	}
	if cfg.SnapshotInterval == 0 {
		cfg.SnapshotInterval = DefaultSnapshotInterval
	}
	if cfg.ReplBacklogSize < 0 {
		return nil, fmt.Errorf("resp: ReplBacklogSize must be 0 (default) or positive, got %d", cfg.ReplBacklogSize)
	}
	var masterHost string
	var masterPort int
	if cfg.ReplicaOf != "" {
		if cfg.Cluster != nil {
			return nil, errors.New("resp: ReplicaOf and Cluster do not go together: cluster mode has no replicas")
		}
		var err error
		if masterHost, masterPort, err = parseReplicaOf(cfg.ReplicaOf); err != nil {
			return nil, err
		}
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("resp: TLSCertFile and TLSKeyFile go together: set both or neither")
	}
	var tlsConfig *tls.Config
	if cfg.TLSCertFile != "" {
		var err error
		if tlsConfig, err = loadTLS(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return nil, err
		}
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.ProtoMaxBulkLen == 0 {
		cfg.ProtoMaxBulkLen = DefaultProtoMaxBulkLen
	}
	if cfg.Shards == 0 {
		cfg.Shards = store.DefaultShards
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
		MonotonicTime: true}) // the clock is read before the shard's lock: see store.Config
	if err != nil {
		return nil, err // the store names the setting and its range
	}
	id := make([]byte, 20)
	rand.Read(id)
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		store:   st,
		runID:   hex.EncodeToString(id),
		start:   time.Now(),
		clients: make(map[*client]struct{}),
		stop:    make(chan struct{}),

		tlsConfig: tlsConfig,
	}
	s.tun.Store(initialTunables(cfg))
	s.statBase.Store(&statCounters{})
	s.persist.retick = make(chan struct{}, 1)
	s.clock.real()
	s.repl.replID = newReplID()
	s.repl.masterHost, s.repl.masterPort = masterHost, masterPort
	s.repl.readOnly.Store(masterHost != "")
	// The address is unused: Serve hands redcon the caller's listener.
	s.rc = redcon.NewServerNetwork("tcp", "", s.serveCommand, s.accept, s.closeConn)
	s.rcTLS = redcon.NewServerNetwork("tcp", "", s.serveCommand, s.accept, s.closeConn)
	s.rc.SetIdleClose(cfg.IdleTimeout)
	s.rcTLS.SetIdleClose(cfg.IdleTimeout)
	s.metrics.latency = make([]latencyHistogram, len(allCommands))
	if cfg.SnapshotPath != "" {
		if err := s.loadSnapshot(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Serve accepts connections on ln and serves them until Close or SHUTDOWN, then
// closes ln and every connection, waits for the commands under way, writes the
// final snapshot (Config.SnapshotPath) and returns nil, or the snapshot's error.
// It returns ErrServerClosed if the server was closed before, or is already serving.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, &s.ln, s.rc)
}

// serve runs rc on ln, recorded in *slot, for Serve and ServeTLS.
func (s *Server) serve(ln net.Listener, slot *net.Listener, rc *redcon.Server) error {
	s.mu.Lock()
	if s.closed || *slot != nil {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	*slot = ln
	startTicker := !s.serving
	s.serving = true
	if startTicker {
		s.ticker.Add(2)
	}
	s.mu.Unlock()
	if startTicker {
		go s.expireLoop()
		go s.snapshotLoop()
		s.startReplication()
	}
	s.warnIfExposed(ln.Addr())
	err := rc.Serve(&limitListener{Listener: ln, s: s})
	s.Close()
	s.stopReplication()
	s.stopPubSub()
	s.ticker.Wait()
	s.conns.Wait()
	return errors.Join(err, s.finalSave())
}

// Close stops the server: the listener and every connection close, and Serve
// returns. Calling it again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stop)
	// redcon's accept loops see net.ErrClosed, close all connections and return.
	var errs []error
	for _, ln := range []net.Listener{s.ln, s.tlsLn} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// Addr is the address Serve listens on, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// expireLoop removes keys whose state became fresh, so that memory returns by
// itself even when no request touches them.
func (s *Server) expireLoop() {
	defer s.ticker.Done()
	t := time.NewTicker(s.cfg.ExpireInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.clockMu.Lock()
			s.store.Expire(s.clock.now())
			s.clockMu.Unlock()
		}
	}
}

// accept registers a new connection. It runs in redcon's accept loop.
func (s *Server) accept(rc redcon.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Close came between this connection's Accept and now, which happens to the
		// other listener's loop when Serve and ServeTLS both run: a Serve may already
		// be in conns.Wait, which an Add must not race. closeConn will not run for it.
		s.connected.Add(-1)
		return false
	}
	c := &client{
		id:      s.nextClientID.Add(1),
		conn:    rc,
		w:       redcon.BaseWriter(rc),
		addr:    rc.RemoteAddr(),
		created: time.Now(),
		authed:  s.tun.Load().requirePass == "",
	}
	c.proto.Store(2)
	c.multiLen.Store(-1)
	c.active.Store(c.created.UnixNano())
	c.fd = connFD(rc.NetConn())
	c.errStats = &s.errStats
	if la := rc.NetConn().LocalAddr(); la != nil {
		c.laddr = la.String()
	}
	if lc, ok := rc.NetConn().(*limitConn); ok {
		lc.client = c
	}
	rc.SetContext(c)
	s.conns.Add(1)
	s.clients[c] = struct{}{}
	s.connections.Add(1) // connected was counted by limitListener.Accept
	return true
}

// closeConn unregisters a connection. redcon calls it with its own lock held,
// after the connection's last command.
func (s *Server) closeConn(rc redcon.Conn, err error) {
	c := rc.Context().(*client)
	if err != nil {
		// A protocol error (already answered by redcon) or a network error: only this
		// connection is affected, so it is not worth more than a debug line.
		s.log.Debug("connection closed", "id", c.id, "addr", c.addr, "err", err)
	}
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	s.closedCommands.Add(c.commands.Load())
	s.closedErrors.Add(c.errors.Load())
	s.connected.Add(-1)
	s.conns.Done()
}

// serveCommand runs one command. redcon calls it for each command of a batch and
// flushes the replies of the whole batch afterwards.
func (s *Server) serveCommand(rc redcon.Conn, cmd redcon.Command) {
	c := rc.Context().(*client)
	defer func() {
		// The last guard, not the plan: a handler bug must not take down every
		// client. The reply may be half-written, so the connection is closed, and
		// the commands pipelined after this one are dropped: redcon would otherwise
		// run them, changing limits, with their replies going nowhere.
		if r := recover(); r != nil {
			s.log.Error("command panicked", "client", c.id, "command", string(cmd.Args[0]),
				"panic", r, "stack", string(debug.Stack()))
			c.w.WriteError("ERR internal error")
			rc.ReadPipeline()
			rc.Close()
		}
	}()
	c.commands.Add(1)
	// The commands of one pipeline share one reading of the clock, wall and monotonic:
	// a reading is slow under a virtualised clock (BenchmarkClockNow), a visible share
	// of the CPU of a deep RL.TOKEN pipeline in pprof. Each command's run time, for
	// SLOWLOG and the latency metric, is then read from the monotonic clock alone
	// (time.Since, BenchmarkClockSince) since the end of the command before.
	if !c.batchOpen {
		c.batchStart = time.Now()
		c.active.Store(c.batchStart.UnixNano())
		c.batchNow = s.clock.at(c.batchStart)
		c.batchMark = 0
	}
	c.batchOpen = len(rc.PeekPipeline()) > 0
	if !c.replyOff && !c.replySkip {
		s.dispatch(c, cmd.Args)
		return
	}
	s.dispatchSilent(c, cmd.Args)
}

// dispatchSilent runs a command whose reply CLIENT REPLY OFF or SKIP drops: what it
// wrote is cut from the buffer, unless it was CLIENT REPLY ON's OK, or the command
// handed the connection to a goroutine of its own (SUBSCRIBE), which owns c now.
func (s *Server) dispatchSilent(c *client, args [][]byte) {
	skip, sub := c.replySkip, c.sub
	c.replySkip = false
	mark := len(c.w.Buffer())
	s.dispatch(c, args)
	if c.sub == sub && (skip || c.replyOff) {
		c.w.SetBuffer(c.w.Buffer()[:mark])
	}
}

// dispatch finds a command and checks its arguments and the connection's right to
// run it; inside MULTI it queues it, else runs it.
func (s *Server) dispatch(c *client, args [][]byte) {
	cm := lookup(commandIndex, args[0])
	if cm == nil {
		c.refuse(unknownCommand(args))
		return
	}
	if cm.subs != nil && len(args) > 1 {
		sub := lookup(cm.subIndex, args[1])
		if sub == nil {
			c.refuse(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.",
				args[1], upper(cm.name)))
			return
		}
		cm = sub
	}
	if cm.arity > 0 && len(args) != cm.arity || cm.arity < 0 && len(args) < -cm.arity {
		cm.stats.rejected.Add(1)
		msg := "wrong number of arguments for '" + cm.full + "' command"
		if c.inMulti && cm.name == "exec" {
			// Redis aborts the transaction at once, saying why.
			c.inMulti, c.multi = false, nil
			c.multiLen.Store(-1)
			c.writeError(errExecAbortBecause + msg)
			return
		}
		c.refuse("ERR " + msg)
		return
	}
	if !c.authed && !cm.noAuth {
		cm.stats.rejected.Add(1)
		c.refuse(errNoAuth)
		return
	}
	if c.inMulti && !cm.tx {
		if cm.noMulti {
			cm.stats.rejected.Add(1)
			c.refuse(errNoMulti)
			return
		}
		// Refused now, as Redis refuses it when queued, it dooms the transaction:
		// EXEC then applies none of it.
		if msg := s.refusal(cm, args, true); msg != "" {
			cm.stats.rejected.Add(1)
			c.refuse(msg)
			return
		}
		c.queue(cm, args)
		return
	}
	s.execute(c, cm, args)
}

// refusal is the error that keeps a checked command from running here, or "": the
// key's slot is another node's (MOVED, CROSSSLOT), the server is a replica and the
// command writes (READONLY), or a full sync is loading (LOADING). Queued (inside
// MULTI), a limiter that may be a PEEK is judged by its arguments; run, it checks
// after parsing them (limiter, cmdAll).
func (s *Server) refusal(cm *command, args [][]byte, queued bool) string {
	// Only cluster mode pays for the slot check, mostly the key's CRC16
	// (BenchmarkClusterRedirect), within the noise of a pipelined RL.TOKEN over
	// loopback (BenchmarkClusterCheck). Standalone, one comparison.
	if s.cfg.Cluster != nil && (cm.firstKey != 0 || cm.keys != nil) {
		if msg := s.clusterRedirect(cm, args); msg != "" {
			return msg
		}
	}
	if cm.write && s.repl.readOnly.Load() && (!cm.peekable || queued && !peeks(cm, args)) {
		return errReadOnly
	}
	if !cm.loadingOK && s.repl.loading.Load() {
		return errLoading
	}
	return ""
}

// execute runs a checked command, unless refusal says no.
func (s *Server) execute(c *client, cm *command, args [][]byte) {
	if msg := s.refusal(cm, args, false); msg != "" {
		cm.stats.rejected.Add(1)
		c.writeError(msg)
		return
	}
	c.last.Store(cm)
	cm.stats.calls.Add(1)
	errs := c.errors.Load()
	cm.run(s, c, args, c.batchNow)
	if cm.noMulti || cm.detaches && !c.inExec {
		return // it may have handed the connection to a goroutine of its own, which owns c now
	}
	if c.errors.Load() != errs {
		cm.stats.failed.Add(1)
	}
	end := time.Since(c.batchStart)
	took := end - c.batchMark
	c.batchMark = end
	cm.stats.ns.Add(uint64(took))
	if s.metrics.timeThisOne() {
		s.metrics.latency[cm.id].observe(took)
	}
	if t := s.tun.Load(); t.slowerThan >= 0 && took.Microseconds() >= t.slowerThan && !cm.tx {
		s.slow.add(c, cm, args, took, t.slowlogLen)
	}
	if s.mon.n.Load() > 0 {
		s.feedMonitors(c, cm, args)
	}
	if c.execSub != nil && !c.inExec {
		s.serveExecSub(c)
	}
}

// unknownCommand formats the error exactly as Redis does: the name as typed and the
// first arguments, quoted, until 128 bytes of them are shown.
func unknownCommand(args [][]byte) string {
	b := make([]byte, 0, 64)
	for i := 1; i < len(args) && len(b) < 128; i++ {
		a := args[i]
		if len(a) > 128-len(b) {
			a = a[:128-len(b)]
		}
		b = append(b, '\'')
		b = append(b, a...)
		b = append(b, "' "...)
	}
	return fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b)
}

// stats sums the counters of live and closed connections.
func (s *Server) stats() (commands, errs uint64) {
	commands, errs = s.closedCommands.Load(), s.closedErrors.Load()
	s.mu.Lock()
	for c := range s.clients {
		commands += c.commands.Load()
		errs += c.errors.Load()
	}
	s.mu.Unlock()
	return commands, errs
}
