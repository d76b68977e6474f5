package resp

import (
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// The CLUSTER subcommands that describe the table and the slots' keys: what
// cluster clients route by and what redis-cli --cluster reads.

// Errors of the slot arguments, in Redis's words.
const (
	errBadSlot        = "ERR Invalid or out of range slot"
	errBadCountSlot   = "ERR Invalid slot"
	errBadKeysInSlot  = "ERR Invalid slot or number of keys"
	errSetSlotUnknown = "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
)

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

// slotRange is one range of slots and its owner, as CLUSTER SLOTS lists them.
type slotRange struct {
	cluster.Range
	owner cluster.Node
}

// bySlot is the assigned slots in order, merged into ranges of one owner.
func bySlot(t *cluster.Topology) []slotRange {
	var rs []slotRange
	for s := range cluster.Slots {
		owner, ok := t.Owner(uint16(s))
		if !ok {
			continue
		}
		if n := len(rs); n > 0 && rs[n-1].owner == owner && int(rs[n-1].Last) == s-1 {
			rs[n-1].Last = uint16(s)
			continue
		}
		rs = append(rs, slotRange{cluster.Range{First: uint16(s), Last: uint16(s)}, owner})
	}
	return rs
}

// cmdClusterSlots serves CLUSTER SLOTS as Redis 7 does: for each range, its first
// and last slot, its master, then the master's replicas, each as [ip, port, id,
// networking metadata], the metadata an empty map (Redis puts the hostname there,
// when one is configured). go-redis's ClusterClient routes by this reply.
func cmdClusterSlots(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	replicas := map[string][]cluster.Node{}
	for _, shard := range s.cfg.Cluster.Shards() {
		replicas[shard[0].ID] = shard[1:]
	}
	rs := bySlot(s.cfg.Cluster)
	c.w.WriteArray(len(rs))
	for _, r := range rs {
		c.w.WriteArray(3 + len(replicas[r.owner.ID]))
		c.w.WriteInt64(int64(r.First))
		c.w.WriteInt64(int64(r.Last))
		for _, n := range append([]cluster.Node{r.owner}, replicas[r.owner.ID]...) {
			c.w.WriteArray(4)
			c.w.WriteBulkString(n.Host)
			c.w.WriteInt64(int64(n.Port))
			c.w.WriteBulkString(n.ID)
			c.writeMap(0)
		}
	}
}

// cmdClusterShards serves CLUSTER SHARDS as Redis 7 does: for each master, a map
// of its slots, as flat start-end pairs, and its nodes (the master, then its
// replicas), each a map of Redis's seven fields. The replication offset is 0: the
// nodes do not tell each other theirs.
func cmdClusterShards(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	shards := s.cfg.Cluster.Shards()
	c.w.WriteArray(len(shards))
	for _, shard := range shards {
		c.writeMap(2)
		c.w.WriteBulkString("slots")
		rs := s.cfg.Cluster.Ranges(shard[0].ID)
		c.w.WriteArray(2 * len(rs))
		for _, r := range rs {
			c.w.WriteInt64(int64(r.First))
			c.w.WriteInt64(int64(r.Last))
		}
		c.w.WriteBulkString("nodes")
		c.w.WriteArray(len(shard))
		for i, n := range shard {
			role := "master"
			if i > 0 {
				role = "replica"
			}
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
			c.w.WriteBulkString(role)
			c.w.WriteBulkString("replication-offset")
			c.w.WriteInt64(0)
			c.w.WriteBulkString("health")
			c.w.WriteBulkString("online")
		}
	}
}

// cmdClusterNodes serves CLUSTER NODES: one line per node in Redis's format,
// "id host:port@cport flags master ping_sent pong_recv config_epoch link slots",
// lines ending in "\n", this node's own with the slots being moved as
// [slot->-id] and [slot-<-id]. The bus port is 0: the nodes have no bus.
func cmdClusterNodes(s *Server, c *client, _ [][]byte, _ int64) {
	if needCluster(s, c) {
		c.w.WriteBulkString(s.cfg.Cluster.Describe())
	}
}

// cmdClusterInfo serves CLUSTER INFO: Redis 7's fields, as "key:value" lines; the
// state ok once every slot has an owner. No bus, no messages.
func cmdClusterInfo(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	in := s.cfg.Cluster.Info()
	state := "ok"
	if in.Assigned < cluster.Slots {
		state = "fail"
	}
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(in.Assigned)},
		{"cluster_slots_ok", strconv.Itoa(in.Assigned)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", strconv.Itoa(in.Known)},
		{"cluster_size", strconv.Itoa(in.Size)},
		{"cluster_current_epoch", strconv.FormatUint(in.Current, 10)},
		{"cluster_my_epoch", strconv.FormatUint(in.MyEpoch, 10)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	c.w.WriteBulkString(b.String())
}

// parseSlot reads a slot argument as Redis's getSlotOrReply.
func parseSlot(b []byte) (uint16, bool) {
	n, ok := rlcmd.ParseInt(b)
	if !ok || n < 0 || n >= cluster.Slots {
		return 0, false
	}
	return uint16(n), true
}

// cmdClusterCountKeysInSlot serves CLUSTER COUNTKEYSINSLOT slot.
func cmdClusterCountKeysInSlot(s *Server, c *client, args [][]byte, now int64) {
	if !needCluster(s, c) {
		return
	}
	n, ok := rlcmd.ParseInt(args[2])
	switch {
	case !ok:
		c.writeError(errNotInteger)
	case n < 0 || n >= cluster.Slots:
		c.writeError(errBadCountSlot)
	default:
		c.w.WriteInt64(int64(s.store.CountPartition(uint16(n), now)))
	}
}

// cmdClusterGetKeysInSlot serves CLUSTER GETKEYSINSLOT slot count: up to count
// keys of the slot, never one whose state is fresh again (gone in all but memory),
// which redis-cli would try to move forever.
func cmdClusterGetKeysInSlot(s *Server, c *client, args [][]byte, now int64) {
	if !needCluster(s, c) {
		return
	}
	slot, ok1 := rlcmd.ParseInt(args[2])
	count, ok2 := rlcmd.ParseInt(args[3])
	switch {
	case !ok1 || !ok2:
		c.writeError(errNotInteger)
		return
	case slot < 0 || slot >= cluster.Slots || count < 0:
		c.writeError(errBadKeysInSlot)
		return
	}
	keys := s.store.KeysInPartition(uint16(slot), int(min(count, 1<<30)), now)
	c.w.WriteArray(len(keys))
	for _, k := range keys {
		c.w.WriteBulk(k)
	}
}
