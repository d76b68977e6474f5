package resp

import (
	"fmt"
	"net"
	"strconv"

	"github.com/rlserver/rlserver/replication"
)

// Replicas of a -cluster-enabled node: the table says whom this node replicates
// (cluster/replica.go), package replication does it. CLUSTER REPLICATE, REPLICAOF
// (Sentinel's), -replicaof and the tables' exchange change the table; followMaster
// then points the replication at the table's master.

// cmdClusterReplicate serves CLUSTER REPLICATE node-id.
func cmdClusterReplicate(s *Server, c *client, args [][]byte, now int64) {
	if !needCluster(s, c) {
		return
	}
	m, err := s.cfg.Cluster.Replicate(string(args[2]), s.store.Len(now))
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	s.repl.BecomeReplica(m.Host, m.Port)
	c.w.WriteString("OK")
}

// cmdClusterReplicas serves CLUSTER REPLICAS (and SLAVES) node-id.
func cmdClusterReplicas(s *Server, c *client, args [][]byte, _ int64) {
	if !needCluster(s, c) {
		return
	}
	lines, err := s.cfg.Cluster.DescribeReplicas(string(args[2]))
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	c.w.WriteArray(len(lines))
	for _, l := range lines {
		c.w.WriteBulkString(l)
	}
}

// clusterReplicaOf serves REPLICAOF on a -cluster-enabled node. NO ONE promotes
// this node: it takes writes, then its old master's slots with a new, highest
// epoch. host port makes it a replica of the cluster's node there, met first if
// the table lacks it.
func clusterReplicaOf(s *Server, c *client, noOne bool, host string, port int) {
	if noOne {
		s.repl.BecomePrimary()
		if _, err := s.cfg.Cluster.Promote(); err != nil {
			c.writeError("ERR " + err.Error())
			return
		}
		c.w.WriteString("OK")
		return
	}
	if err := s.followAddr(net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	c.w.WriteString("OK")
}

// followAddr makes this node a replica of the cluster's node at addr, after an
// exchange of tables with it if the table does not hold it yet.
func (s *Server) followAddr(addr string) error {
	t := s.cfg.Cluster
	m, known, err := t.Follow(addr)
	if !known {
		if xerr := s.exchange(addr); xerr != nil {
			return fmt.Errorf("no cluster node at %s: %v", addr, xerr)
		}
		m, known, err = t.Follow(addr)
	}
	switch {
	case !known:
		return fmt.Errorf("no cluster node at %s", addr)
	case err != nil:
		return err
	}
	s.repl.BecomeReplica(m.Host, m.Port)
	return nil
}

// followMaster points the replication at the master the table gives this node,
// after the table changed on its own: a master that lost its slots to its promoted
// replica follows it (cluster/merge.go).
func (s *Server) followMaster() {
	m, ok := s.cfg.Cluster.Master()
	if !ok {
		return
	}
	if host, port := s.repl.Primary(); host != m.Host || port != m.Port {
		s.repl.BecomeReplica(m.Host, m.Port)
	}
}

// startReplica starts a -cluster-enabled node's replication as configured: the
// table's master, or -replicaof's node, which the exchange loop resolves (the
// table may learn of it only from the node itself). A node whose config file gives
// it slots was promoted since its -replicaof was written: the file wins, or the
// slots would go to its old master.
func (s *Server) startReplica() {
	t := s.cfg.Cluster
	if s.cfg.ReplicaOf == "" {
		s.followMaster()
		return
	}
	if len(t.Ranges(t.Self().ID)) > 0 {
		s.log.Warn("-replicaof ignored: the cluster config file gives this node slots; REPLICAOF or CLUSTER REPLICATE make it a replica",
			"replicaof", s.cfg.ReplicaOf)
		s.repl.BecomePrimary()
		return
	}
	host, port, err := replication.ParseReplicaOf(s.cfg.ReplicaOf)
	if err == nil {
		s.peers.pendingMaster = net.JoinHostPort(host, strconv.Itoa(port))
	}
}

// resolveReplicaOf makes this node a replica of -replicaof's node in the table, once
// it can; the table exchange calls it at each round until then.
func (s *Server) resolveReplicaOf() {
	addr := s.peers.pendingMaster
	if addr == "" {
		return
	}
	if err := s.followAddr(addr); err != nil {
		s.log.Debug("-replicaof: the node is not in the cluster table yet", "addr", addr, "err", err)
		return
	}
	s.peers.pendingMaster = ""
}
