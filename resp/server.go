// Package resp is rlserver's RESP front: it speaks RESP2 and RESP3 (the Redis
// protocol) through github.com/tidwall/redcon, holds the one command table that
// drives dispatch, COMMAND, COMMAND DOCS and docs/commands.md, and hands every RL.*
// call to the store of the core it stands on (package core: the store, the clock,
// snapshots, the role, the metrics registry). It knows no algorithm math.
//
// Pipelined commands are read as one batch and answered with one write: redcon
// reads everything the socket has, runs the handler for each command (replies are
// appended to the connection's buffer) and flushes once after the batch.
package resp

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/topk"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/replication"
	"github.com/rlserver/rlserver/store"
	"github.com/tidwall/redcon"
	"go.opentelemetry.io/otel/trace"
)

// Version is rlserver's version, reported by INFO and rlserver --version; make
// release stamps the release's own with -ldflags -X.
var Version = "1.0.0"

// redisVersion is the Redis version whose commands and replies rlserver follows.
// HELLO and INFO report it so that clients which switch features on the server
// version (redis-cli, client libraries) treat rlserver as a Redis 7.0.
const redisVersion = "7.0.0"

// Defaults of the core's settings, applied to zero Config fields.
const (
	// DefaultMaxLogLimit is core.DefaultMaxLogLimit.
	DefaultMaxLogLimit = core.DefaultMaxLogLimit
	// DefaultExpireInterval is core.DefaultExpireInterval.
	DefaultExpireInterval = core.DefaultExpireInterval
)

// Config configures a Server. The zero value is valid: every zero field takes its
// default. The embedded core.Config configures the core NewServer builds (its
// Partition is the Cluster's); NewFront takes it from the core it is given instead.
type Config struct {
	core.Config
	// EnableDebugCommand turns on DEBUG CLOCK SET|ADVANCE|REAL, for tests. Off by
	// default, as Redis's enable-debug-command.
	EnableDebugCommand bool
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

	// RequirePass, if set, is the default user's password: until a connection
	// authenticates (AUTH, HELLO AUTH), only the "no-auth" commands are served.
	RequirePass string
	// MaxClients is the most connections served at once; 0 means DefaultMaxClients.
	// Beyond it a new connection gets Redis's error and is closed.
	MaxClients int
	// IdleTimeout closes a connection that sent nothing for that long; 0 means never.
	IdleTimeout time.Duration
	// ProtoMaxBulkLen is the largest bulk string a request may announce; 0 means
	// DefaultProtoMaxBulkLen.
	ProtoMaxBulkLen int64

	// MinReplicasToWrite and MinReplicasMaxLag are Redis's min-replicas-to-write and
	// min-replicas-max-lag (seconds; 0 means DefaultMinReplicasMaxLag): a primary
	// with fewer good replicas refuses spends (NOREPLICAS).
	MinReplicasToWrite int
	MinReplicasMaxLag  int

	// Cluster, if set, makes the server one node of a Redis Cluster: it runs a
	// command with keys only when they hash to one of its own slots, answers
	// MOVED or CROSSSLOT otherwise, and serves CLUSTER SLOTS and the like. Nil:
	// standalone.
	Cluster *cluster.Topology

	// Users are the `user` directives of the config file, as Redis's: each the words
	// after "user" (the name, then ACL rules), with where it was read for errors.
	Users []UserDirective
	// ACLFile, if set, is Redis's aclfile: its users are loaded at start (an error
	// refuses to start), ACL SAVE writes them there and ACL LOAD reads them again.
	// It does not go with Users, as in Redis.
	ACLFile string
	// ACLLogMaxLen is how many entries ACL LOG keeps; 0 means DefaultACLLogMaxLen,
	// negative none.
	ACLLogMaxLen int
	// ReplicaPriority is Sentinel's replica priority (INFO slave_priority): lower is
	// promoted first; 0 means Redis's default 100, a negative value 0 (never promoted).
	ReplicaPriority int

	// Engine, if set, is the policy engine (-limits) RL.POLICY decides by, on the
	// core's store: the caller of NewFront builds it and hands the same one to the
	// other fronts. Nil, and Policy nil: RL.POLICY and RL.LIMITS answer that no
	// policy is in force.
	Engine *engine.Engine
	// Policy, if set without Engine, is the policy the server builds its own engine
	// of, on its core's store: for NewServer, whose caller holds no core.
	// Server.Policy returns that engine.
	Policy *config.Policy

	// TracerProvider, if set, traces a random TraceSampling share (0 to 1) of the
	// commands, a span each (server_tracing.go). The share is drawn before anything is
	// built and the span started from a context of sampled.Mark: the provider's
	// sampler must keep those (internal/tracing's does). Nil: nothing traced, one comparison
	// a command.
	TracerProvider trace.TracerProvider
	TraceSampling  float64

	// Upstream, if set, decides the limiter calls it takes (a region's, from quota
	// taken of its home: package region); the others are the store's. Nil: all are.
	Upstream Upstream
}

// Errors returned by Server methods.
var (
	// ErrServerClosed is returned by Serve after Close, or when Serve is called twice.
	ErrServerClosed = errors.New("resp: server closed")
	// ErrNoTLS is returned by ServeTLS when Config has no certificate.
	ErrNoTLS = errors.New("resp: ServeTLS needs Config.TLSCertFile and TLSKeyFile")
)

// Server is the RESP front of an rlserver: the RESP listeners over a core.Core.
// Create it with NewServer (which builds its own core) or NewFront, start it with
// Serve, stop it with Close or SHUTDOWN.
type Server struct {
	cfg     Config
	log     *slog.Logger
	core    *core.Core
	ownCore bool // NewServer built core: Serve's end closes it
	store   *store.Store
	clock   *core.Clock
	rc      *redcon.Server
	rcTLS   *redcon.Server // the same callbacks as rc, for the TLS listener
	runID   string
	start   time.Time // for uptime, in real (monotonic) time whatever the debug clock says

	// tun are the settings CONFIG SET changes (server_config.go); tunMu orders the changes.
	tun   atomic.Pointer[tunables]
	tunMu sync.Mutex
	// statBase is INFO's counters at the last CONFIG RESETSTAT (server_info.go).
	statBase atomic.Pointer[statCounters]

	mu      sync.Mutex
	ln      net.Listener
	tlsLn   net.Listener
	closed  bool
	clients map[*client]struct{}
	conns   sync.WaitGroup // connections still running commands

	nextClientID atomic.Int64
	connected    atomic.Int64
	connections  atomic.Uint64 // accepted since start
	rejected     atomic.Uint64 // refused for maxclients
	// Counters of connections that have closed; live ones count in their client.
	closedCommands atomic.Uint64
	closedErrors   atomic.Uint64

	metrics metrics           // server_metrics.go
	repl    *replication.Node // repl_cmd.go
	ps      pubsub            // pubsub.go
	mon     monitors          // server_monitor.go
	slow    slowlog           // server_slowlog.go

	policy   *engine.Engine // Config.Policy's engine; nil without one (policy_cmd.go)
	refused  *topk.Window   // the keys RL.* commands refused lately, for RL.TOP
	errStats errorStats     // server_info_stats.go
	slices   sliceStats     // RL.SLICE by key family (limit_slice_stats.go)
	// slotLocks are cluster mode's slot locks: a call takes its slot's read side,
	// MIGRATE the write side while it moves the slot's keys (cluster_cmd.go).
	slotLocks *[cluster.Slots]sync.RWMutex
	peers     peerSet      // cluster_peers.go
	track     tracking     // conn_tracking.go
	trackers  atomic.Int32 // connections with CLIENT TRACKING ON
	pause     pauses       // CLIENT PAUSE (server_pause.go)
	trace     tracer       // server_tracing.go

	acl    *acl.Registry // the users (acl.go, acl_cmd.go)
	aclLog *acl.Log
	aclMu  sync.Mutex // orders ACL LOAD and SAVE
}

// UserDirective is one `user` line of a config file.
type UserDirective struct {
	Args  []string // the words after "user": the name, then the rules
	Where string   // "file:line", for errors
}

// Core is the embedded core.Config with the store partitioned by hash slot when
// Cluster is set, for core.New.
func (cfg Config) Core() core.Config {
	cc := cfg.Config
	cc.Partition = partition(cfg.Cluster)
	return cc
}

// partition is the store's grouping of keys: by hash slot in cluster mode, for
// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT; none standalone.
func partition(t *cluster.Topology) func([]byte) uint16 {
	if t == nil {
		return nil
	}
	return cluster.Slot
}

// NewServer validates cfg and returns a Server, not yet listening, over a core of
// its own (core.New(cfg.Core())): an empty store or the keys of Config.SnapshotPath.
// Serve's end closes that core, writing the final snapshot.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c, err := core.New(cfg.Core())
	if err != nil {
		return nil, err
	}
	s, err := NewFront(c, cfg)
	if err != nil {
		return nil, err
	}
	s.ownCore = true
	return s, nil
}

// NewFront validates cfg and returns a Server, not yet listening, over c, whose
// settings replace cfg's shared fields (those of core.Config). Its Serve starts c;
// the caller closes c (core.Core.Close, which writes the final snapshot) once Serve
// and the other fronts on c have returned.
func NewFront(c *core.Core, cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Config = c.Config()
	if cfg.ReplicaOf != "" && cfg.Cluster != nil && cfg.Cluster.Static() {
		return nil, errors.New("resp: ReplicaOf and a static Cluster (-cluster-nodes) do not go together: its nodes have no replicas; run -cluster-enabled nodes")
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.ProtoMaxBulkLen == 0 {
		cfg.ProtoMaxBulkLen = DefaultProtoMaxBulkLen
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		core:    c,
		store:   c.Store(),
		clock:   c.Clock(),
		repl:    c.Replication(),
		runID:   c.RunID(),
		start:   c.StartTime(),
		clients: make(map[*client]struct{}),
	}
	s.policy = cfg.Engine
	if s.policy == nil && cfg.Policy != nil {
		s.policy = engine.New(c.Store(), cfg.Policy)
	}
	if cfg.Cluster != nil && !cfg.Cluster.Static() {
		s.slotLocks = new([cluster.Slots]sync.RWMutex)
	}
	s.newExchange()
	s.refused = newRefused()
	s.trace = newTracer(cfg.TracerProvider, cfg.TraceSampling)
	s.tun.Store(initialTunables(cfg)) // before initACL, which reads acllog-max-len
	if err := s.initACL(); err != nil {
		return nil, err
	}
	s.statBase.Store(&statCounters{})
	// The address is unused: Serve hands redcon the caller's listener.
	s.rc = redcon.NewServerNetwork("tcp", "", s.serveCommand, s.accept, s.closeConn)
	s.rcTLS = redcon.NewServerNetwork("tcp", "", s.serveCommand, s.accept, s.closeConn)
	s.rc.SetIdleClose(cfg.IdleTimeout)
	s.rcTLS.SetIdleClose(cfg.IdleTimeout)
	s.metrics.latency = make([]latencyHistogram, len(allCommands))
	if err := c.Registry().Register(collector{s}); err != nil {
		return nil, fmt.Errorf("resp: a second RESP front on one core: %w", err)
	}
	return s, nil
}

// Policy is the engine RL.POLICY decides by: Config.Engine, or the one built of
// Config.Policy; nil without either.
func (s *Server) Policy() *engine.Engine { return s.policy }

// check validates the RESP front's own fields of cfg.
func (cfg Config) check() error {
	if cfg.MaxClients < 0 {
		return fmt.Errorf("resp: MaxClients must be 0 (default) or positive, got %d", cfg.MaxClients)
	}
	if cfg.IdleTimeout < 0 {
		return fmt.Errorf("resp: IdleTimeout must be 0 (none) or positive, got %v", cfg.IdleTimeout)
	}
	if cfg.ProtoMaxBulkLen < 0 {
		return fmt.Errorf("resp: ProtoMaxBulkLen must be 0 (default) or positive, got %d", cfg.ProtoMaxBulkLen)
	}
	if !(cfg.TraceSampling >= 0 && cfg.TraceSampling <= 1) {
		return fmt.Errorf("resp: TraceSampling must be between 0 and 1, got %v", cfg.TraceSampling)
	}
	return nil
}

// Core is the core the server stands on.
func (s *Server) Core() *core.Core { return s.core }

// Serve accepts connections on ln and serves them until Close or SHUTDOWN, then
// closes ln and every connection and waits for the commands under way. Over its own
// core (NewServer) it then closes the core, which writes the final snapshot
// (Config.SnapshotPath), and returns nil or the snapshot's error. It starts the core
// (core.Core.Start). It returns ErrServerClosed if the server was closed before, or
// is already serving.
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
	s.mu.Unlock()
	if slot == &s.ln {
		s.core.SetListenPort(s.listenPort())
		s.startPeers()
		defer s.stopPeers()
	}
	s.core.Start()
	s.warnIfExposed(ln.Addr())
	err := rc.Serve(&connListener{Listener: ln, s: s})
	s.Close()
	s.stopPubSub()
	s.conns.Wait()
	if slot == &s.ln && s.cfg.Cluster != nil {
		err = errors.Join(err, s.cfg.Cluster.Save()) // a change of the table not yet written
	}
	if s.ownCore {
		err = errors.Join(err, s.core.Close())
	}
	return err
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
	s.pause.end(nil) // the commands held up run, and their connections close
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

// listenPort is the port Serve listens on, 0 before: a replica announces it to its primary.
func (s *Server) listenPort() int {
	_, port := hostPort(s.Addr())
	p, _ := strconv.Atoi(port)
	return p
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
		authed:  !s.acl.AuthRequired(),
	}
	c.user.Store(s.acl.Default())
	c.proto.Store(2)
	c.multiLen.Store(-1)
	c.active.Store(c.created.UnixNano())
	c.fd = connFD(rc.NetConn())
	c.errStats = &s.errStats
	if la := rc.NetConn().LocalAddr(); la != nil {
		c.laddr = la.String()
	}
	if lc, ok := rc.NetConn().(*boundedConn); ok {
		lc.client = c
	}
	rc.SetContext(c)
	s.conns.Add(1)
	s.clients[c] = struct{}{}
	s.connections.Add(1) // connected was counted by connListener.Accept
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
