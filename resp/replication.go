package resp

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
)

// Replication: a primary streams its store to replicas, which serve reads and refuse
// writes, and Redis Sentinel promotes one (REPLICAOF NO ONE) when the primary dies.
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
//	replica → primary   REPLCONF ACK <offset>, as commands, every 100 ms when the
//	                    offset moved and every second anyway
//
// The snapshot is streamed shard by shard from the live store (no copy of it in
// memory), and the frames start at the backlog's end before the snapshot began: a
// write made meanwhile is in both, and effects being whole states, applying one again
// is harmless. A replica checks each frame's checksum and offset before applying any
// of it, and drops the link on any mismatch; it then reconnects, with backoff, and
// asks to continue from the last record it applied. The primary continues if its
// backlog still holds that offset under the same replication id, else it sends a full
// sync. A plain Redis on the other side answers RLSYNC with "unknown command": the
// replica logs that it is not an rlserver and retries later, having changed nothing.

// Replication defaults and bounds.
const (
	// DefaultReplBacklogSize is the backlog's size when Config.ReplBacklogSize is 0:
	// at ~50 bytes an effect, 600k writes, a second or two of a loaded primary, for a
	// replica to reconnect and continue without a full sync.
	DefaultReplBacklogSize = 32 << 20

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

// Replies of replication.
const (
	errReadOnly     = "READONLY You can't write against a read only replica."
	errLoading      = "LOADING rlserver is loading the dataset in memory"
	errChained      = "ERR this rlserver is a replica: replicate from its primary (chained replication is not supported)"
	errRedisReplica = "ERR rlserver streams its own format to rlserver replicas (RLSYNC): a Redis server cannot replicate from it"
)

// replication is a server's role and links. A server is a primary (masterHost empty)
// or a replica of masterHost:masterPort.
type replication struct {
	mu         sync.Mutex
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
}

// drop closes the replica's connection and ends its feed.
func (r *replicaConn) drop() {
	r.once.Do(func() {
		close(r.gone)
		r.conn.Close()
	})
}

// newReplID is a fresh 40-hex-digit replication id, as Redis's.
func newReplID() string {
	id := make([]byte, 20)
	rand.Read(id)
	return hex.EncodeToString(id)
}

// replicaOffset is what a replica has applied, kept by the server across links so
// that a new link can ask to continue, with the primary's id it came from.
type replicaOffset struct {
	mu     sync.Mutex
	replID string
	offset int64
	format uint32 // the snapshot format version of the last full sync: the primary's records
}

// startReplication starts the link of a server configured as a replica; Serve calls it.
func (s *Server) startReplication() {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if s.repl.masterHost != "" && s.repl.link == nil {
		s.repl.link = s.startLink(s.repl.masterHost, s.repl.masterPort)
	}
}

// stopReplication ends the link and every replica's feed; the server is closing.
func (s *Server) stopReplication() {
	s.repl.mu.Lock()
	l := s.repl.link
	s.repl.link = nil
	s.dropReplicasLocked()
	s.repl.mu.Unlock()
	if l != nil {
		stopLink(l)
	}
	s.repl.feeders.Wait()
}

// dropReplicasLocked closes every replica's connection and returns how many there
// were; repl.mu is held.
func (s *Server) dropReplicasLocked() int {
	for r := range s.repl.replicas {
		r.drop()
	}
	return len(s.repl.replicas)
}

// becomeReplica makes the server a replica of host:port: its replicas are dropped,
// its backlog too, and the link starts. It reports false if it already is one of it.
func (s *Server) becomeReplica(host string, port int) bool {
	s.repl.mu.Lock()
	if s.repl.masterHost == host && s.repl.masterPort == port {
		s.repl.mu.Unlock()
		return false
	}
	old := s.repl.link
	s.repl.readOnly.Store(true)
	s.repl.masterHost, s.repl.masterPort = host, port
	s.store.SetBacklog(nil)
	s.repl.backlog = nil
	s.repl.replID2 = ""
	s.dropReplicasLocked()
	s.repl.link = nil
	s.repl.mu.Unlock()
	if old != nil {
		stopLink(old)
	}
	s.mu.Lock()
	serving := s.serving && !s.closed
	s.mu.Unlock()
	s.repl.mu.Lock()
	if serving && s.repl.masterHost == host && s.repl.masterPort == port && s.repl.link == nil {
		s.repl.link = s.startLink(host, port)
	}
	s.repl.mu.Unlock()
	s.log.Info("replicating", "primary", net.JoinHostPort(host, strconv.Itoa(port)))
	return true
}

// becomePrimary ends the link and makes the server a primary with a new replication
// id, whose offsets continue from what it applied. It reports false if it was one.
func (s *Server) becomePrimary() bool {
	s.repl.mu.Lock()
	if s.repl.masterHost == "" {
		s.repl.mu.Unlock()
		return false
	}
	l := s.repl.link
	s.repl.link = nil
	s.repl.mu.Unlock()
	if l != nil {
		stopLink(l) // no effect is applied after this
	}
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	s.applied.mu.Lock()
	s.repl.baseOffset = s.applied.offset
	s.repl.replID2, s.repl.secondOffset = s.applied.replID, s.applied.offset
	s.applied.replID = "" // writes here from now on: this history ends, no partial resync into it
	s.applied.mu.Unlock()
	if h := s.repl.history; h != nil {
		if _, end := h.Offsets(); end == s.repl.baseOffset {
			s.repl.backlog = h
			s.store.SetBacklog(h)
		}
	}
	s.repl.history = nil
	s.repl.masterHost, s.repl.masterPort = "", 0
	s.repl.replID = newReplID()
	s.repl.loading.Store(false)
	s.repl.readOnly.Store(false)
	s.log.Info("replication: now a primary")
	return true
}

// cmdReplicaOf serves REPLICAOF (and SLAVEOF) host port | NO ONE.
func cmdReplicaOf(s *Server, c *client, args [][]byte, _ int64) {
	if s.cfg.Cluster != nil {
		c.writeError("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	if bytes.EqualFold(args[1], []byte("no")) && bytes.EqualFold(args[2], []byte("one")) {
		s.becomePrimary()
		c.w.WriteString("OK")
		return
	}
	port, ok := parseInt(args[2])
	if !ok || port < 1 || port > 65535 {
		c.writeError("ERR Invalid master port")
		return
	}
	if !s.becomeReplica(string(args[1]), int(port)) {
		c.w.WriteString("OK Already connected to specified master")
		return
	}
	c.w.WriteString("OK")
}

// cmdReplConf serves REPLCONF: options a replica announces (Redis's replicas send
// listening-port and capa) are accepted and ignored; RLSYNC carries what rlserver needs.
func cmdReplConf(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteString("OK")
}

// cmdPSync serves PSYNC and SYNC, which a Redis replica sends: rlserver's stream is
// not Redis's.
func cmdPSync(_ *Server, c *client, _ [][]byte, _ int64) {
	c.writeError(errRedisReplica)
}

// replicaView is one replica as INFO and ROLE show it.
type replicaView struct {
	ip           string
	port         int
	state        string
	offset, lagS int64
}

// replicaViews lists the connected replicas by address, so that INFO's slaveN stay put.
func (s *Server) replicaViews() []replicaView {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	var out []replicaView
	now := time.Now().UnixNano()
	for r := range s.repl.replicas {
		state := "wait_bgsave"
		if r.online.Load() {
			state = "online"
		}
		out = append(out, replicaView{ip: r.ip, port: r.port, state: state, offset: r.ack.Load(),
			lagS: (now - r.ackAt.Load()) / int64(time.Second)})
	}
	slices.SortFunc(out, func(a, b replicaView) int { return cmp.Or(strings.Compare(a.ip, b.ip), cmp.Compare(a.port, b.port)) })
	return out
}

// masterOffset is a primary's replication offset: the end of its backlog.
func (s *Server) masterOffset() int64 {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if s.repl.backlog != nil {
		_, end := s.repl.backlog.Offsets()
		return end
	}
	if s.repl.masterHost != "" {
		s.applied.mu.Lock()
		defer s.applied.mu.Unlock()
		return s.applied.offset
	}
	return s.repl.baseOffset
}

// roleName is "master" or "slave", as INFO, ROLE and HELLO say it.
func (s *Server) roleName() string {
	if s.repl.readOnly.Load() {
		return "slave"
	}
	return "master"
}

// replicationInfo is INFO's replication section, with the fields Sentinel reads.
func (s *Server) replicationInfo() [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	kv := [][2]string{{"role", s.roleName()}}
	s.repl.mu.Lock()
	host, port, l := s.repl.masterHost, s.repl.masterPort, s.repl.link
	replID, bl := s.repl.replID, s.repl.backlog
	replID2, second := s.repl.replID2, s.repl.secondOffset+1 // Redis's: the first offset of the new history
	if bl == nil {
		bl = s.repl.history
	}
	s.repl.mu.Unlock()
	if replID2 == "" {
		replID2, second = strings.Repeat("0", 40), -1
	}
	if host != "" {
		status, lastIO := "down", int64(-1)
		if l != nil && l.up.Load() {
			status = "up"
		}
		if l != nil && l.lastIO.Load() != 0 {
			lastIO = (time.Now().UnixNano() - l.lastIO.Load()) / int64(time.Second)
		}
		s.applied.mu.Lock()
		off := s.applied.offset
		if s.applied.replID != "" {
			replID = s.applied.replID
		}
		s.applied.mu.Unlock()
		kv = append(kv,
			[2]string{"master_host", host},
			[2]string{"master_port", strconv.Itoa(port)},
			[2]string{"master_link_status", status},
			[2]string{"master_last_io_seconds_ago", itoa(lastIO)},
			[2]string{"master_sync_in_progress", boolDigit(s.repl.loading.Load())},
			[2]string{"slave_read_repl_offset", itoa(off)},
			[2]string{"slave_repl_offset", itoa(off)})
		if status == "down" && l != nil {
			since := int64(-1)
			if d := l.downSince.Load(); d != 0 {
				since = (time.Now().UnixNano() - d) / int64(time.Second)
			}
			kv = append(kv, [2]string{"master_link_down_since_seconds", itoa(since)})
		}
		kv = append(kv,
			[2]string{"slave_priority", strconv.Itoa(s.replicaPriority())},
			[2]string{"slave_read_only", "1"},
			[2]string{"replica_announced", "1"})
	}
	views := s.replicaViews()
	kv = append(kv, [2]string{"connected_slaves", strconv.Itoa(len(views))})
	for i, v := range views {
		kv = append(kv, [2]string{"slave" + strconv.Itoa(i), fmt.Sprintf("ip=%s,port=%d,state=%s,offset=%d,lag=%d",
			v.ip, v.port, v.state, v.offset, v.lagS)})
	}
	first, size, hist := int64(0), int64(0), int64(0)
	if bl != nil {
		f, end := bl.Offsets()
		first, size, hist = f, int64(bl.Size()), end-f
	}
	kv = append(kv,
		[2]string{"master_failover_state", "no-failover"},
		[2]string{"master_replid", replID},
		[2]string{"master_replid2", replID2},
		[2]string{"master_repl_offset", itoa(s.masterOffset())},
		[2]string{"second_repl_offset", itoa(second)},
		[2]string{"repl_backlog_active", boolDigit(bl != nil)},
		[2]string{"repl_backlog_size", itoa(size)},
		[2]string{"repl_backlog_first_byte_offset", itoa(first)},
		[2]string{"repl_backlog_histlen", itoa(hist)})
	return kv
}

// replicaPriority is Config.ReplicaPriority, Redis's default 100 when 0; negative
// means 0, never promoted.
func (s *Server) replicaPriority() int {
	switch p := s.cfg.ReplicaPriority; {
	case p == 0:
		return 100
	case p < 0:
		return 0
	default:
		return p
	}
}

// cmdRole serves ROLE: ["master", offset, [[ip, port, offset] ...]] or ["slave", host,
// port, state, offset].
func cmdRole(s *Server, c *client, _ [][]byte, _ int64) {
	s.repl.mu.Lock()
	host, port, l := s.repl.masterHost, s.repl.masterPort, s.repl.link
	s.repl.mu.Unlock()
	if host != "" {
		state := "connect"
		if l != nil {
			state = l.state.Load().(string)
		}
		s.applied.mu.Lock()
		off := s.applied.offset
		s.applied.mu.Unlock()
		c.w.WriteArray(5)
		c.w.WriteBulkString("slave")
		c.w.WriteBulkString(host)
		c.w.WriteInt64(int64(port))
		c.w.WriteBulkString(state)
		c.w.WriteInt64(off)
		return
	}
	views := s.replicaViews()
	c.w.WriteArray(3)
	c.w.WriteBulkString("master")
	c.w.WriteInt64(s.masterOffset())
	c.w.WriteArray(len(views))
	for _, v := range views {
		c.w.WriteArray(3)
		c.w.WriteBulkString(v.ip)
		c.w.WriteBulkString(strconv.Itoa(v.port))
		c.w.WriteBulkString(strconv.FormatInt(v.offset, 10))
	}
}

// parseReplicaOf reads Config.ReplicaOf, "host:port" or "host port".
func parseReplicaOf(v string) (string, int, error) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		f := strings.Fields(v)
		if len(f) != 2 {
			return "", 0, fmt.Errorf("resp: ReplicaOf must be host:port or \"host port\", got %q", v)
		}
		host, port = f[0], f[1]
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || host == "" {
		return "", 0, fmt.Errorf("resp: ReplicaOf must be host:port with a port from 1 to 65535, got %q", v)
	}
	return host, p, nil
}
