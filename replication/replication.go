// Package replication is rlserver's replication, for any front: a primary streams
// its store to replicas, which serve reads and refuse writes, and Redis Sentinel
// promotes one (REPLICAOF NO ONE) when the primary dies. A Node is one server's
// side: its role, its link to a primary, its replicas. The RESP commands over it
// (REPLICAOF, ROLE, RLSYNC, INFO replication) are package resp's.
//
// The link, opened by the replica, on one TCP connection:
//
//	replica → primary   [AUTH <masterauth>]
//	                    RLSYNC <replid> <offset> <listening-port>   ("?" -1: no history)
//	primary → replica   +CONTINUE <replid>                           (partial resync)
//	                    or +FULLRESYNC <replid> <offset>, then the store's snapshot
//	                    (store.WriteSnapshot, checksummed) cut in chunks: length
//	                    uint32 LE, bytes; a chunk of length 0 ends it
//	                    then frames forever: length uint32, offset of the body's
//	                    first byte uint64, xxh3 of the body uint64 (all LE), body: the
//	                    backlog's effect records from that offset; an empty frame is
//	                    a heartbeat, sent after a second without effects
//	replica → primary   REPLCONF ACK <offset> [FACK <synced>], as commands, every
//	                    100 ms when either moved and every second anyway; FACK, with
//	                    an append-only log, is the offset the log synced (Redis's)
//
// The snapshot is streamed shard by shard from the live store (no copy of it in
// memory), and the frames start at the backlog's end before the snapshot began: a
// write made meanwhile is in both, and effects being whole states, applying one again
// is harmless. A replica checks each frame's checksum and offset before applying any
// of it, and drops the link on any mismatch; it then reconnects, with backoff, and
// asks to continue from the last record it applied. The primary continues if its
// backlog still holds that offset under the same replication id, else it sends a full
// sync. A replica restarted from its own files asks to continue from where they
// stand (Config.Resume), as a Redis replica's PSYNC does with its cached replication
// id. A plain Redis on the other side answers RLSYNC with "unknown command": the
// replica logs that it is not an rlserver and retries later, having changed nothing.
package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
)

// Replication defaults and bounds.
const (
	// DefaultBacklogSize is the backlog's size when Config.BacklogSize is 0:
	// at ~50 bytes an effect, 600k writes, a second or two of a loaded primary, for a
	// replica to reconnect and continue without a full sync.
	DefaultBacklogSize = 32 << 20

	// replTimeout drops a link that carried nothing for that long: the primary sends a
	// heartbeat every replPing.
	replTimeout = 10 * time.Second
	replPing    = time.Second
	// replAckEvery is how often a replica tells its primary how far it has applied.
	replAckEvery = 100 * time.Millisecond
	// Reconnection backoff after a failed link: doubling from the first to the last.
	replRetryFirst = 100 * time.Millisecond
	replRetryLast  = 5 * time.Second
	// A frame smaller than replBatchBytes is followed by a pause of replBatchDelay,
	// for the next one to carry more: at most ~1000 frames a second per replica, for
	// up to a millisecond of lag.
	replBatchBytes = 64 << 10
	replBatchDelay = time.Millisecond
	// frameHead is a frame's length, offset and checksum; frameMax bounds a body.
	frameHead = 4 + 8 + 8
	frameMax  = 1 << 20
	// chunkMax bounds a snapshot chunk.
	chunkMax = 1 << 20
)

// Errors of Node methods.
var (
	// ErrReplica refuses a replica's sync on a server that is itself a replica:
	// chained replication is not supported.
	ErrReplica = errors.New("replication: this server is a replica")
	// ErrStopped refuses a replica's sync once Stop has begun.
	ErrStopped = errors.New("replication: stopped")
)

// Config configures a Node.
type Config struct {
	// Store is the store replicated: streamed from it as a primary, loaded into it
	// and changed by the primary's effects as a replica.
	Store *store.Store
	// Now is the server clock, µs since the Unix epoch.
	Now func() int64
	// Logger receives the links' ups and downs; nil means slog.Default().
	Logger *slog.Logger
	// ReplicaOf, if set ("host:port" or "host port"), starts the node as a replica of
	// that primary; empty: a primary.
	ReplicaOf string
	// MasterAuth is the password a replica gives its primary.
	MasterAuth string
	// MasterUser, if set, is the ACL user a replica logs in as, with MasterAuth.
	MasterUser string
	// BacklogSize is the bytes of recent effects a primary keeps for replicas to
	// continue from after a disconnection; 0 means DefaultBacklogSize.
	BacklogSize int
	// ListenPort, if set, is the port a replica announces to its primary (the
	// primary's INFO slaveN, which Sentinel reads), read at each sync; nil announces 0.
	ListenPort func() int
	// OnRoleChange, if set, is called after each change of role with whether the node
	// is now a primary, from the goroutine that changed it; it must not block.
	OnRoleChange func(primary bool)
	// OnFullSync, if set, is called once a replica has loaded its primary's snapshot,
	// before it applies the stream: the snapshot's keys went into the store without
	// effects, so an append-only log must be rewritten to hold them.
	OnFullSync func()
	// BeforeFullSync, if set, is called before a replica empties its store for a full
	// sync: a record of where its files stood in the stream no longer holds.
	BeforeFullSync func()
	// Resume, if its ReplID is set, is where the store a replica loaded from its own
	// files stands in its primary's stream: its first RLSYNC asks to continue from
	// there, as Redis 7's replica restarted from its files does with PSYNC.
	Resume Position
	// Synced, if set, is the offset of the primary's stream up to which a replica's
	// own append-only log is synced, and false without a log: the replica reports it
	// with each ack (REPLCONF ACK <offset> FACK <synced>, Redis's), for WAITAOF.
	Synced func() (int64, bool)
	// OnApplied, if set, is called after a replica loaded a full sync and after each
	// frame it applied, with where its store stands then, from the link's goroutine;
	// it must not block.
	OnApplied func(Position)
}

// Position is a place in a primary's stream: a replica's store holds every effect
// before Offset of the stream of ReplID, whose records are of snapshot format
// Format (store.NewApplier's version).
type Position struct {
	ReplID string
	Offset int64
	Format uint32
}

// Node is a server's role and links. A server is a primary (masterHost empty) or a
// replica of masterHost:masterPort. Create it with New, start the link with Start.
type Node struct {
	cfg     Config
	store   *store.Store
	now     func() int64
	log     *slog.Logger
	applied replicaOffset

	mu         sync.Mutex
	started    bool // Start ran: a replica's link runs
	stopped    bool // Stop ran: no link, no replica, ever again
	masterHost string
	masterPort int
	link       *link
	replID     string         // this server's replication id as a primary
	backlog    *store.Backlog // created when the first replica connects
	// history is a replica's copy of the stream it applied, at its primary's offsets:
	// promoted, it becomes the backlog, and replicas of the same old primary that
	// are not ahead of it continue from it (their replID2 and secondOffset), as
	// Redis's PSYNC2 lets them.
	history      *store.Backlog
	replID2      string // the old primary's id, after a promotion; "" if none
	secondOffset int64  // how far this server had applied the old primary's stream
	baseOffset   int64  // the offset a new backlog starts at: a promoted replica's
	replicas     map[*replicaConn]struct{}
	feeders      sync.WaitGroup

	// Syncs served as a primary, as Redis's INFO stats counts them.
	syncFull, syncPartialOK, syncPartialErr atomic.Uint64

	readOnly atomic.Bool // a replica: writes answer READONLY
	loading  atomic.Bool // a full sync is loading: only "loading" commands run
}

// link is a replica's connection to its primary, kept up by one goroutine.
type link struct {
	host string
	port int
	stop chan struct{} // closed to end the link
	done chan struct{} // closed when its goroutine has returned

	mu   sync.Mutex
	conn net.Conn // the current connection, closed by stopLink

	state     atomic.Value // "connect", "connecting", "sync" or "connected", as ROLE says
	up        atomic.Bool
	lastIO    atomic.Int64 // Unix ns of the last byte from the primary, 0 if never
	downSince atomic.Int64 // Unix ns the link went down (or was made), 0 while up
}

// replicaConn is a replica as its primary sees it.
type replicaConn struct {
	ip     string
	port   int
	conn   net.Conn
	gone   chan struct{} // closed by drop
	once   sync.Once
	online atomic.Bool  // the snapshot is sent: frames flow
	ack    atomic.Int64 // the offset it last said it applied
	ackAt  atomic.Int64 // Unix ns of that ack
	fack   atomic.Int64 // the offset it last said its log synced, -1 if it never did
}

// drop closes the replica's connection and ends its feed.
func (r *replicaConn) drop() {
	r.once.Do(func() {
		close(r.gone)
		r.conn.Close()
	})
}

// newReplID is a new 40-hex-digit replication id, as Redis's.
func newReplID() string {
	id := make([]byte, 20)
	rand.Read(id)
	return hex.EncodeToString(id)
}

// replicaOffset is what a replica has applied, kept by the node across links so
// that a new link can ask to continue, with the primary's id it came from.
type replicaOffset struct {
	mu     sync.Mutex
	replID string
	offset int64
	format uint32 // the snapshot format version of the last full sync: the primary's records
}

// New validates cfg and returns a Node, a primary or (Config.ReplicaOf) a replica
// whose link starts with Start.
func New(cfg Config) (*Node, error) {
	if cfg.BacklogSize < 0 {
		return nil, fmt.Errorf("replication: BacklogSize must be 0 (default) or positive, got %d", cfg.BacklogSize)
	}
	if cfg.Store == nil || cfg.Now == nil {
		return nil, errors.New("replication: Config needs Store and Now")
	}
	var host string
	var port int
	if cfg.ReplicaOf != "" {
		var err error
		if host, port, err = ParseReplicaOf(cfg.ReplicaOf); err != nil {
			return nil, err
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{cfg: cfg, store: cfg.Store, now: cfg.Now, log: cfg.Logger,
		replID: newReplID(), masterHost: host, masterPort: port}
	n.readOnly.Store(host != "")
	if host != "" && cfg.Resume.ReplID != "" {
		n.applied.replID, n.applied.offset, n.applied.format = cfg.Resume.ReplID, cfg.Resume.Offset, cfg.Resume.Format
	}
	return n, nil
}

// Start starts the link of a node configured as a replica. Calling it again, or
// after Stop, does nothing.
func (n *Node) Start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started || n.stopped {
		return
	}
	n.started = true
	if n.masterHost != "" && n.link == nil {
		n.link = n.startLink(n.masterHost, n.masterPort)
	}
}

// Stop ends the link and every replica's feed, and waits for their goroutines; the
// server is closing.
func (n *Node) Stop() {
	n.mu.Lock()
	n.stopped = true
	l := n.link
	n.link = nil
	n.dropReplicasLocked()
	n.mu.Unlock()
	if l != nil {
		stopLink(l)
	}
	n.feeders.Wait()
}

// ReadOnly reports whether the node is a replica, whose writes answer READONLY.
func (n *Node) ReadOnly() bool { return n.readOnly.Load() }

// Loading reports whether a full sync is loading the store: only commands that do
// not read it may run.
func (n *Node) Loading() bool { return n.loading.Load() }

// DropReplicas closes every replica's connection and returns how many there were.
func (n *Node) DropReplicas() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropReplicasLocked()
}

// dropReplicasLocked is DropReplicas with n.mu held.
func (n *Node) dropReplicasLocked() int {
	for r := range n.replicas {
		r.drop()
	}
	return len(n.replicas)
}

// CloseLink closes a replica's current connection to its primary, which the link
// then opens again, and reports whether there was one.
func (n *Node) CloseLink() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.link
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return false
	}
	l.conn.Close()
	return true
}

// roleChanged tells Config.OnRoleChange.
func (n *Node) roleChanged(primary bool) {
	if n.cfg.OnRoleChange != nil {
		n.cfg.OnRoleChange(primary)
	}
}

// BecomeReplica makes the node a replica of host:port: its replicas are dropped,
// its backlog too, and the link starts (once Start has run). It reports false if it
// already is one of it.
func (n *Node) BecomeReplica(host string, port int) bool {
	n.mu.Lock()
	if n.masterHost == host && n.masterPort == port {
		n.mu.Unlock()
		return false
	}
	old := n.link
	wasPrimary := !n.readOnly.Swap(true)
	n.masterHost, n.masterPort = host, port
	n.store.SetBacklog(nil)
	n.backlog = nil
	n.replID2 = ""
	n.dropReplicasLocked()
	n.link = nil
	n.mu.Unlock()
	if old != nil {
		stopLink(old)
	}
	n.mu.Lock()
	if n.started && !n.stopped && n.masterHost == host && n.masterPort == port && n.link == nil {
		n.link = n.startLink(host, port)
	}
	n.mu.Unlock()
	n.log.Info("replicating", "primary", net.JoinHostPort(host, strconv.Itoa(port)))
	if wasPrimary {
		n.roleChanged(false)
	}
	return true
}

// BecomePrimary ends the link and makes the node a primary with a new replication
// id, whose offsets continue from what it applied. It reports false if it was one.
func (n *Node) BecomePrimary() bool {
	n.mu.Lock()
	if n.masterHost == "" {
		n.mu.Unlock()
		return false
	}
	l := n.link
	n.link = nil
	n.mu.Unlock()
	if l != nil {
		stopLink(l) // no effect is applied after this
	}
	n.mu.Lock()
	n.applied.mu.Lock()
	n.baseOffset = n.applied.offset
	n.replID2, n.secondOffset = n.applied.replID, n.applied.offset
	n.applied.replID = "" // writes here from now on: this history ends, no partial resync into it
	n.applied.mu.Unlock()
	if h := n.history; h != nil {
		if _, end := h.Offsets(); end == n.baseOffset {
			n.backlog = h
			n.store.SetBacklog(h)
		}
	}
	n.history = nil
	n.masterHost, n.masterPort = "", 0
	n.replID = newReplID()
	n.loading.Store(false)
	n.readOnly.Store(false)
	n.mu.Unlock()
	n.log.Info("replication: now a primary")
	n.roleChanged(true)
	return true
}

// Primary is a replica's primary, "" and 0 on a primary.
func (n *Node) Primary() (host string, port int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.masterHost, n.masterPort
}

// ParseReplicaOf reads a primary's address, "host:port" or "host port".
func ParseReplicaOf(v string) (string, int, error) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		f := strings.Fields(v)
		if len(f) != 2 {
			return "", 0, fmt.Errorf("replication: ReplicaOf must be host:port or \"host port\", got %q", v)
		}
		host, port = f[0], f[1]
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || host == "" {
		return "", 0, fmt.Errorf("replication: ReplicaOf must be host:port with a port from 1 to 65535, got %q", v)
	}
	return host, p, nil
}
