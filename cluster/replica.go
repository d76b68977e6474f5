package cluster

import (
	"errors"
	"strings"
)

// Replicas, as Redis Cluster has them: a replica owns no slot, names its master in
// the table, and takes its master's slots with a new, highest epoch when promoted
// (REPLICAOF NO ONE, which Sentinel sends); the higher epoch wins the slots on every
// node (merge.go). Package resp runs the replication itself.

// Replicate is CLUSTER REPLICATE id, checked as Redis checks it: this node becomes a
// replica of the master id. keys is how many keys this node holds: a master must
// have none, and no slot. It returns the master, whose address to replicate.
func (t *Topology) Replicate(id string, keys int) (Node, error) {
	if t.static {
		return Node{}, ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.lookup(id)
	switch {
	case p == nil:
		return Node{}, errors.New("Unknown node " + id)
	case p == t.self:
		return Node{}, errors.New("Can't replicate myself")
	case p.master != nil:
		return Node{}, errors.New("I can only replicate a master, not a replica.")
	case t.self.master == nil && (keys != 0 || t.slotsOf(t.self) != 0):
		return Node{}, errors.New("To set a master the node must be empty and without assigned slots.")
	}
	t.setMaster(p)
	return p.Node, t.changed()
}

// Follow is REPLICAOF host port in cluster mode, which Sentinel sends: this node
// becomes a replica of the node at addr (host:port), whatever role this table
// gives it (an old master learns of its replica's promotion from Sentinel as well
// as from the tables). A master hands its slots to its new master, which takes
// them when it hears of it (adopt): Sentinel may name as a shard's master a node
// that holds no slot (two replicas promoted at once). It reports false when no
// node of the table is at addr.
func (t *Topology) Follow(addr string) (Node, bool, error) {
	if t.static {
		return Node{}, false, ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byAddr(addr)
	switch {
	case p == nil:
		return Node{}, false, nil
	case p == t.self:
		return Node{}, true, errors.New("Can't replicate myself")
	case t.self.master == p:
		return p.Node, true, nil
	}
	t.setMaster(p)
	if p.master == t.self {
		p.master = nil // promoted: its own table will say so too
	}
	return p.Node, true, t.changed()
}

// setMaster makes this node a replica of p: a master's slots are p's in this
// table, and its slots being moved are closed. t.mu is held.
func (t *Topology) setMaster(p *peer) {
	if t.self.master == nil {
		for s := range Slots {
			t.owner[s].CompareAndSwap(t.self, p)
			t.migrating[s].Store(nil)
			t.importing[s].Store(nil)
		}
	}
	t.self.master = p
}

// adopt takes the slots this node's replica p, in its table ln, gives it and still
// owns in this one: those it held when it was made a replica (Follow). A new,
// highest epoch makes this node's claim on them win everywhere. t.mu is held.
func (t *Topology) adopt(p *peer, ln *line) bool {
	n := 0
	for _, r := range ln.slots {
		for s := int(r.First); s <= int(r.Last); s++ {
			if t.owner[s].Load() == p {
				t.owner[s].Store(t.self)
				t.unclaimed[s] = false
				n++
			}
		}
	}
	if n == 0 {
		return false
	}
	t.current = t.maxEpoch() + 1
	t.self.epoch = t.current
	return true
}

// Promote is REPLICAOF NO ONE on a replica: this node becomes a master and takes
// its master's slots with a new config epoch, higher than any (as a Redis replica's
// failover), so that its claim wins everywhere. It reports false if it was a master.
func (t *Topology) Promote() (bool, error) {
	if t.static {
		return false, ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.self.master
	if m == nil {
		return false, nil
	}
	t.self.master = nil
	for s := range Slots {
		if t.owner[s].Load() == m {
			t.owner[s].Store(t.self)
			t.unclaimed[s] = false
		}
	}
	t.current = t.maxEpoch() + 1
	t.self.epoch = t.current
	return true, t.changed()
}

// Master is this node's master, and false if it is a master.
func (t *Topology) Master() (Node, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.self.master; m != nil {
		return m.Node, true
	}
	return Node{}, false
}

// Shards are the table's masters, each followed by its replicas, in the order met:
// CLUSTER SHARDS's and SLOTS's groups.
func (t *Topology) Shards() [][]Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	var shards [][]Node
	for _, m := range t.peers {
		if m.master != nil {
			continue
		}
		shard := []Node{m.Node}
		for _, r := range t.peers {
			if r.master == m {
				shard = append(shard, r.Node)
			}
		}
		shards = append(shards, shard)
	}
	return shards
}

// DescribeReplicas is CLUSTER REPLICAS id: the CLUSTER NODES lines of the master
// id's replicas, checked as Redis checks it.
func (t *Topology) DescribeReplicas(id string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.lookup(id)
	switch {
	case m == nil:
		return nil, errors.New("Unknown node " + id)
	case m.master != nil:
		return nil, errors.New("The specified node is not a master")
	}
	var lines []string
	for _, p := range t.peers {
		if p.master == m {
			var b strings.Builder
			t.describeNode(&b, p)
			lines = append(lines, b.String())
		}
	}
	return lines, nil
}
