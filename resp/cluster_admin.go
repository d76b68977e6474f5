package resp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// The CLUSTER subcommands that change the table, as redis-cli --cluster sends
// them: each checked as Redis's clusterCommand, in its words.

// changeCluster answers a change's outcome: OK, or its error after "ERR ".
func changeCluster(c *client, err error) {
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	c.w.WriteString("OK")
}

// cmdClusterAddSlots serves CLUSTER ADDSLOTS and DELSLOTS slot...: the slots become
// this node's, or nobody's; none changes unless all can.
func cmdClusterAddSlots(del bool) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, _ int64) {
		if !needCluster(s, c) {
			return
		}
		ranges := make([]cluster.Range, 0, len(args)-2)
		for _, a := range args[2:] {
			slot, ok := parseSlot(a)
			if !ok {
				c.writeError(errBadSlot)
				return
			}
			ranges = append(ranges, cluster.Range{First: slot, Last: slot})
		}
		changeCluster(c, s.cfg.Cluster.AssignSlots(ranges, del))
	}
}

// cmdClusterAddSlotsRange serves CLUSTER ADDSLOTSRANGE and DELSLOTSRANGE first
// last...: as ADDSLOTS and DELSLOTS, by ranges.
func cmdClusterAddSlotsRange(del bool) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, _ int64) {
		if !needCluster(s, c) {
			return
		}
		if len(args)%2 == 1 {
			c.writeError("ERR wrong number of arguments for 'cluster|" + strings.ToLower(string(args[1])) + "' command")
			return
		}
		var ranges []cluster.Range
		for j := 2; j < len(args); j += 2 {
			first, ok1 := parseSlot(args[j])
			last, ok2 := parseSlot(args[j+1])
			if !ok1 || !ok2 {
				c.writeError(errBadSlot)
				return
			}
			if first > last {
				c.writeError(fmt.Sprintf("ERR start slot number %d is greater than end slot number %d", first, last))
				return
			}
			ranges = append(ranges, cluster.Range{First: first, Last: last})
		}
		changeCluster(c, s.cfg.Cluster.AssignSlots(ranges, del))
	}
}

// cmdClusterSetSlot serves CLUSTER SETSLOT slot IMPORTING|MIGRATING id, STABLE,
// NODE id.
func cmdClusterSetSlot(s *Server, c *client, args [][]byte, now int64) {
	if !needCluster(s, c) {
		return
	}
	slot, ok := parseSlot(args[2])
	if !ok {
		c.writeError(errBadSlot)
		return
	}
	t := s.cfg.Cluster
	action := string(bytes.ToLower(args[3]))
	switch {
	case action == "migrating" && len(args) == 5:
		changeCluster(c, t.SetMigrating(slot, string(args[4])))
	case action == "importing" && len(args) == 5:
		changeCluster(c, t.SetImporting(slot, string(args[4])))
	case action == "stable" && len(args) == 4:
		changeCluster(c, t.SetStable(slot))
	case action == "node" && len(args) == 5 && t.Static():
		changeCluster(c, cluster.ErrStatic)
	case action == "node" && len(args) == 5:
		// Counted under the slot's lock: no MIGRATE is half done.
		lk := &s.slotLocks[slot]
		lk.Lock()
		defer lk.Unlock()
		changeCluster(c, t.SetNode(slot, string(args[4]), s.store.CountPartition(slot, now)))
	default:
		c.writeError(errSetSlotUnknown)
	}
}

// cmdClusterBumpEpoch serves CLUSTER BUMPEPOCH: "BUMPED n" or "STILL n".
func cmdClusterBumpEpoch(s *Server, c *client, _ [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	bumped, epoch, err := s.cfg.Cluster.BumpEpoch()
	switch {
	case err != nil:
		c.writeError("ERR " + err.Error())
	case bumped:
		c.w.WriteString("BUMPED " + strconv.FormatUint(epoch, 10))
	default:
		c.w.WriteString("STILL " + strconv.FormatUint(epoch, 10))
	}
}

// cmdClusterSetConfigEpoch serves CLUSTER SET-CONFIG-EPOCH epoch.
func cmdClusterSetConfigEpoch(s *Server, c *client, args [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	epoch, ok := rlcmd.ParseInt(args[2])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	changeCluster(c, s.cfg.Cluster.SetConfigEpoch(epoch))
}

// cmdClusterForget serves CLUSTER FORGET id.
func cmdClusterForget(s *Server, c *client, args [][]byte, _ int64) {
	if needCluster(s, c) {
		changeCluster(c, s.cfg.Cluster.Forget(string(args[2])))
	}
}

// cmdClusterReset serves CLUSTER RESET [SOFT|HARD], refused while a master holds keys.
func cmdClusterReset(s *Server, c *client, args [][]byte, now int64) {
	if !needCluster(s, c) {
		return
	}
	hard := false
	if len(args) == 3 {
		switch string(bytes.ToLower(args[2])) {
		case "hard":
			hard = true
		case "soft":
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if len(args) > 3 {
		c.writeError(errSyntax)
		return
	}
	if _, replica := s.cfg.Cluster.Master(); replica {
		// As Redis's clusterReset: a replica becomes an empty master.
		s.repl.BecomePrimary()
		s.store.Flush()
	} else if s.store.Len(now) != 0 {
		c.writeError("ERR CLUSTER RESET can't be called with master nodes containing keys")
		return
	}
	id := make([]byte, 20)
	rand.Read(id)
	changeCluster(c, s.cfg.Cluster.Reset(hard, hex.EncodeToString(id)))
}

// cmdClusterMeet serves CLUSTER MEET ip port [cport]: this node and the one at
// ip:port exchange their tables at once (cluster_peers.go), and each then tells the
// nodes it knows. The bus port is checked and unused. As in Redis, a node that does
// not answer as a cluster node is not an error: it is never added.
func cmdClusterMeet(s *Server, c *client, args [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	port, ok := rlcmd.ParseInt(args[3])
	if !ok {
		c.writeError(fmt.Sprintf("ERR Invalid TCP base port specified: %s", args[3]))
		return
	}
	cport := port + 10000 // Redis's CLUSTER_PORT_INCR
	if len(args) == 5 {
		if cport, ok = rlcmd.ParseInt(args[4]); !ok {
			c.writeError(fmt.Sprintf("ERR Invalid TCP bus port specified: %s", args[4]))
			return
		}
	}
	if len(args) > 5 {
		c.writeError("ERR wrong number of arguments for 'cluster|meet' command")
		return
	}
	// As Redis's clusterStartHandshake: an IP, and both ports from 1 to 65535.
	if net.ParseIP(string(args[2])) == nil || port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		c.writeError(fmt.Sprintf("ERR Invalid node address specified: %s:%s", args[2], args[3]))
		return
	}
	if s.cfg.Cluster.Static() {
		c.writeError("ERR " + cluster.ErrStatic.Error())
		return
	}
	addr := net.JoinHostPort(string(args[2]), strconv.Itoa(int(port)))
	if err := s.exchange(addr); err != nil {
		s.log.Warn("CLUSTER MEET: no table from the node: it is not added", "addr", addr, "err", err)
	}
	c.w.WriteString("OK")
}

// cmdClusterTable serves CLUSTER RLTABLE table, rlserver's own: a peer's table
// (cluster.Topology.Table) is merged into this node's, and this node's is the
// reply. It is how -cluster-enabled nodes learn of each other and of each other's
// slots, over the client port (cluster/merge.go).
func cmdClusterTable(s *Server, c *client, args [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	changed, err := s.cfg.Cluster.Merge(string(args[2]))
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	if changed {
		s.followMaster()
	}
	c.w.WriteBulkString(s.cfg.Cluster.Table())
}

// cmdAsking serves ASKING: the next command may use a slot being moved here.
func cmdAsking(s *Server, c *client, _ [][]byte, _ int64) {
	if needCluster(s, c) {
		c.asking = true
		c.w.WriteString("OK")
	}
}
