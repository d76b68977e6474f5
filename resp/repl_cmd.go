package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/replication"
)

// The RESP commands of replication, over package replication's Node.

// DefaultReplBacklogSize is the backlog's size when Config.ReplBacklogSize is 0.
const DefaultReplBacklogSize = replication.DefaultBacklogSize

// Replies of replication.
const (
	errReadOnly     = "READONLY You can't write against a read only replica."
	errLoading      = "LOADING rlserver is loading the dataset in memory"
	errChained      = "ERR this rlserver is a replica: replicate from its primary (chained replication is not supported)"
	errRedisReplica = "ERR rlserver streams its own format to rlserver replicas (RLSYNC): a Redis server cannot replicate from it"
)

// cmdReplicaOf serves REPLICAOF (and SLAVEOF) host port | NO ONE.
func cmdReplicaOf(s *Server, c *client, args [][]byte, _ int64) {
	if s.cfg.Cluster != nil && s.cfg.Cluster.Static() {
		c.writeError("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	noOne := bytes.EqualFold(args[1], []byte("no")) && bytes.EqualFold(args[2], []byte("one"))
	port, ok := rlcmd.ParseInt(args[2])
	if !noOne && (!ok || port < 1 || port > 65535) {
		c.writeError("ERR Invalid master port")
		return
	}
	switch {
	case s.cfg.Cluster != nil:
		clusterReplicaOf(s, c, noOne, string(args[1]), int(port))
	case noOne:
		s.repl.BecomePrimary()
		c.w.WriteString("OK")
	case !s.repl.BecomeReplica(string(args[1]), int(port)):
		c.w.WriteString("OK Already connected to specified master")
	default:
		c.w.WriteString("OK")
	}
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

// cmdRLSync serves RLSYNC replid offset listening-port: the connection becomes a
// replica's link, fed by its own goroutine.
func cmdRLSync(s *Server, c *client, args [][]byte, _ int64) {
	port, ok := rlcmd.ParseInt(args[3])
	reqOff, ok2 := rlcmd.ParseInt(args[2])
	if !ok || !ok2 || port < 0 || port > 65535 {
		c.writeError(errSyntax)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	err := s.repl.Sync(c.conn, string(args[1]), reqOff, int(port))
	if errors.Is(err, replication.ErrReplica) {
		c.writeError(errChained)
	}
}

// replicationInfo is INFO's replication section, with the fields Sentinel reads.
func (s *Server) replicationInfo() [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	kv := [][2]string{{"role", s.roleName()}}
	st := s.repl.Status()
	replID2, second := st.ReplID2, st.SecondOffset+1 // Redis's: the first offset of the new history
	if replID2 == "" {
		replID2, second = strings.Repeat("0", 40), -1
	}
	if st.MasterHost != "" {
		status, lastIO := "down", int64(-1)
		if st.LinkUp {
			status = "up"
		}
		if !st.LastIO.IsZero() {
			lastIO = int64(time.Since(st.LastIO) / time.Second)
		}
		kv = append(kv,
			[2]string{"master_host", st.MasterHost},
			[2]string{"master_port", strconv.Itoa(st.MasterPort)},
			[2]string{"master_link_status", status},
			[2]string{"master_last_io_seconds_ago", itoa(lastIO)},
			[2]string{"master_sync_in_progress", boolDigit(s.repl.Loading())},
			[2]string{"slave_read_repl_offset", itoa(st.Applied)},
			[2]string{"slave_repl_offset", itoa(st.Applied)})
		if status == "down" && st.Linked {
			since := int64(-1)
			if !st.DownSince.IsZero() {
				since = int64(time.Since(st.DownSince) / time.Second)
			}
			kv = append(kv, [2]string{"master_link_down_since_seconds", itoa(since)})
		}
		kv = append(kv,
			[2]string{"slave_priority", strconv.Itoa(s.replicaPriority())},
			[2]string{"slave_read_only", "1"},
			[2]string{"replica_announced", "1"})
	}
	views := s.repl.Replicas()
	kv = append(kv, [2]string{"connected_slaves", strconv.Itoa(len(views))})
	if t := s.tun.Load(); t.minReplicas > 0 {
		kv = append(kv, [2]string{"min_slaves_good_slaves", strconv.Itoa(goodReplicas(views, t.minReplicasLag))})
	}
	for i, v := range views {
		kv = append(kv, [2]string{"slave" + strconv.Itoa(i), fmt.Sprintf("ip=%s,port=%d,state=%s,offset=%d,lag=%d",
			v.IP, v.Port, v.State, v.Offset, v.LagSeconds)})
	}
	kv = append(kv,
		[2]string{"master_failover_state", "no-failover"},
		[2]string{"master_replid", st.ReplID},
		[2]string{"master_replid2", replID2},
		[2]string{"master_repl_offset", itoa(s.repl.Offset())},
		[2]string{"second_repl_offset", itoa(second)},
		[2]string{"repl_backlog_active", boolDigit(st.BacklogActive)},
		[2]string{"repl_backlog_size", itoa(st.BacklogSize)},
		[2]string{"repl_backlog_first_byte_offset", itoa(st.BacklogFirst)},
		[2]string{"repl_backlog_histlen", itoa(st.BacklogLen)})
	return kv
}

// roleName is "master" or "slave", as INFO, ROLE and HELLO say it.
func (s *Server) roleName() string {
	if s.repl.ReadOnly() {
		return "slave"
	}
	return "master"
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
	if st := s.repl.Status(); st.MasterHost != "" {
		state := "connect"
		if st.Linked {
			state = st.LinkState
		}
		c.w.WriteArray(5)
		c.w.WriteBulkString("slave")
		c.w.WriteBulkString(st.MasterHost)
		c.w.WriteInt64(int64(st.MasterPort))
		c.w.WriteBulkString(state)
		c.w.WriteInt64(st.Applied)
		return
	}
	views := s.repl.Replicas()
	c.w.WriteArray(3)
	c.w.WriteBulkString("master")
	c.w.WriteInt64(s.repl.Offset())
	c.w.WriteArray(len(views))
	for _, v := range views {
		c.w.WriteArray(3)
		c.w.WriteBulkString(v.IP)
		c.w.WriteBulkString(strconv.Itoa(v.Port))
		c.w.WriteBulkString(strconv.FormatInt(v.Offset, 10))
	}
}
