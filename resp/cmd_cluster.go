package resp

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
)

// Cluster mode's errors, in Redis's words.
const (
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
)

// clusterRedirect is the error that keeps a command with keys from running on this
// node in cluster mode, or "" when it runs here: CROSSSLOT when its keys hash to
// different slots, MOVED when their slot belongs to another node. Redis checks in
// this order too, after arity and authentication, before the arguments' values.
func (s *Server) clusterRedirect(cm *command, args [][]byte) string {
	slot, n := commandSlot(cm, args)
	switch {
	case n == 0:
		return ""
	case slot < 0:
		return errCrossSlot
	}
	return s.moved(uint16(slot))
}

// moved is the redirect for a slot of another node, or "" for one of this node's.
func (s *Server) moved(slot uint16) string {
	if s.cfg.Cluster.Owns(slot) {
		return ""
	}
	return "MOVED " + strconv.Itoa(int(slot)) + " " + s.cfg.Cluster.Owner(slot).Addr()
}

// commandSlot is the slot of a command's keys and how many it has; -1 when they hash
// to different slots.
func commandSlot(cm *command, args [][]byte) (slot int, n int) {
	var keys [][]byte
	step := 1
	if cm.keys != nil {
		keys = cm.keys(args)
	} else if cm.firstKey != 0 {
		last := cm.lastKey
		if last < 0 {
			last += len(args)
		}
		keys, step = args[cm.firstKey:last+1], cm.keyStep // within arity: TestKeyPositionsWithinArity
	}
	if len(keys) == 0 {
		return 0, 0
	}
	first := cluster.Slot(keys[0])
	for i := step; i < len(keys); i += step {
		if cluster.Slot(keys[i]) != first {
			return -1, len(keys)
		}
	}
	return int(first), len(keys)
}

// execRedirect is, in cluster mode, the error that keeps a transaction from running
// on this node, as Redis checks EXEC: every key of every queued command in one slot
// (else CROSSSLOT, even when this node owns both), and that slot this node's.
func (s *Server) execRedirect(list []queued) string {
	slot := -1
	for _, q := range list {
		qs, n := commandSlot(q.cm, q.args)
		switch {
		case n == 0:
			continue
		case qs < 0, slot >= 0 && qs != slot:
			return errCrossSlot
		}
		slot = qs
	}
	if slot < 0 {
		return ""
	}
	return s.moved(uint16(slot))
}

// allKeys finds RL.ALL's keys, one per rule. When the rules do not parse it finds
// none, and the command runs here to answer its own error. The log limit is not
// checked here: the command checks it against the server's.
func allKeys(args [][]byte) [][]byte {
	rules, err := ParseAll(args[1:], math.MaxInt64)
	if err != nil {
		return nil
	}
	keys := make([][]byte, len(rules))
	for i, r := range rules {
		keys[i] = r.Key
	}
	return keys
}

// needCluster answers Redis's error and returns false outside cluster mode.
func needCluster(s *Server, c *client) bool {
	if s.cfg.Cluster == nil {
		c.writeError(errClusterDisabled)
		return false
	}
	return true
}

// cmdReadWrite serves READONLY and READWRITE, which cluster clients send to choose
// replicas for reads: rlserver has none, so both only answer OK.
func cmdReadWrite(s *Server, c *client, _ [][]byte, _ int64) {
	if needCluster(s, c) {
		c.w.WriteString("OK")
	}
}

// cmdClusterKeySlot serves CLUSTER KEYSLOT key: the key's hash slot. Like every
// CLUSTER subcommand, Redis refuses it outside cluster mode, and so does rlserver.
func cmdClusterKeySlot(s *Server, c *client, args [][]byte, _ int64) {
	if needCluster(s, c) {
		c.w.WriteInt64(int64(cluster.Slot(args[2])))
	}
}

// cmdClusterMyID serves CLUSTER MYID: this node's id.
func cmdClusterMyID(s *Server, c *client, _ [][]byte, _ int64) {
	if needCluster(s, c) {
		c.w.WriteBulkString(s.cfg.Cluster.Self().ID)
	}
}

// bySlot is the nodes in the order of their slots, as CLUSTER SLOTS lists them.
func bySlot(t *cluster.Topology) []cluster.Node {
	nodes := t.Nodes()
	slices.SortFunc(nodes, func(a, b cluster.Node) int { return int(a.First) - int(b.First) })
	return nodes
}

// cmdClusterSlots serves CLUSTER SLOTS as Redis 7 does: for each range, its first
// and last slot and its master as [ip, port, id, networking metadata], the
// metadata an empty map (Redis puts the hostname there, when one is configured).
// go-redis's ClusterClient routes by this reply.
func cmdClusterSlots(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	nodes := bySlot(s.cfg.Cluster)
	c.w.WriteArray(len(nodes))
	for _, n := range nodes {
		c.w.WriteArray(3)
		c.w.WriteInt64(int64(n.First))
		c.w.WriteInt64(int64(n.Last))
		c.w.WriteArray(4)
		c.w.WriteBulkString(n.Host)
		c.w.WriteInt64(int64(n.Port))
		c.w.WriteBulkString(n.ID)
		c.writeMap(0)
	}
}

// cmdClusterShards serves CLUSTER SHARDS as Redis 7 does: for each node (a shard
// of one master, no replicas), a map of its slots, as flat start-end pairs, and its
// nodes, each a map of Redis's seven fields.
func cmdClusterShards(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	nodes := s.cfg.Cluster.Nodes()
	c.w.WriteArray(len(nodes))
	for _, n := range nodes {
		c.writeMap(2)
		c.w.WriteBulkString("slots")
		c.w.WriteArray(2)
		c.w.WriteInt64(int64(n.First))
		c.w.WriteInt64(int64(n.Last))
		c.w.WriteBulkString("nodes")
		c.w.WriteArray(1)
		c.writeMap(7)
		c.w.WriteBulkString("id")
		c.w.WriteBulkString(n.ID)
		c.w.WriteBulkString("port")
		c.w.WriteInt64(int64(n.Port))
		c.w.WriteBulkString("ip")
		c.w.WriteBulkString(n.Host)
		c.w.WriteBulkString("endpoint")
		c.w.WriteBulkString(n.Host)
		c.w.WriteBulkString("role")
		c.w.WriteBulkString("master")
		c.w.WriteBulkString("replication-offset")
		c.w.WriteInt64(0)
		c.w.WriteBulkString("health")
		c.w.WriteBulkString("online")
	}
}

// cmdClusterNodes serves CLUSTER NODES: one line per node in Redis's format,
// "id host:port@cport flags master ping_sent pong_recv config_epoch link slots",
// lines ending in "\n". The bus port is 0, as the nodes have no bus; node i's
// config epoch is i+1, distinct as Redis requires.
func cmdClusterNodes(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	self := s.cfg.Cluster.Self()
	var b strings.Builder
	for i, n := range s.cfg.Cluster.Nodes() {
		flags := "master"
		if n == self {
			flags = "myself,master"
		}
		b.WriteString(n.ID + " " + n.Addr() + "@0 " + flags + " - 0 0 " + strconv.Itoa(i+1) +
			" connected " + strconv.Itoa(int(n.First)))
		if n.Last != n.First {
			b.WriteString("-" + strconv.Itoa(int(n.Last)))
		}
		b.WriteByte('\n')
	}
	c.w.WriteBulkString(b.String())
}

// cmdClusterInfo serves CLUSTER INFO: Redis 7's fields for a healthy cluster
// whose slots are all assigned, as "key:value" lines. No bus, no messages.
func cmdClusterInfo(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	nodes := s.cfg.Cluster.Nodes()
	n := strconv.Itoa(len(nodes))
	slots := strconv.Itoa(cluster.Slots)
	myEpoch := slices.Index(nodes, s.cfg.Cluster.Self()) + 1 // as CLUSTER NODES numbers them
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", "ok"},
		{"cluster_slots_assigned", slots},
		{"cluster_slots_ok", slots},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", n},
		{"cluster_size", n},
		{"cluster_current_epoch", n},
		{"cluster_my_epoch", strconv.Itoa(myEpoch)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	c.w.WriteBulkString(b.String())
}

// redisMode is INFO's redis_mode: "cluster" in cluster mode, as Redis says.
func (s *Server) redisMode() string {
	if s.cfg.Cluster != nil {
		return "cluster"
	}
	return "standalone"
}

// boolDigit is INFO's 1 or 0.
func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
