package cluster

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Node is one rlserver of the cluster as its table holds it.
type Node struct {
	Host string // what MOVED, ASK and CLUSTER SLOTS send clients to
	Port int    // the client port
	// ID is the node's name in CLUSTER NODES, SLOTS and SHARDS: 40 hex digits. In a
	// -cluster-nodes topology it is SHA-1("host:port"), so that every node names
	// every other one the same way without talking to it; a -cluster-enabled node
	// draws its own at first start and keeps it in its config file.
	ID string
}

// Addr is the node's address as MOVED and CLUSTER NODES write it: host:port.
func (n Node) Addr() string { return n.Host + ":" + strconv.Itoa(n.Port) }

// peer is a node of the table. Its Node never changes; epoch is guarded by the
// Topology's mu. Slots point at peers, so a slot's owner is one atomic load.
type peer struct {
	Node
	epoch  uint64 // the config epoch: of two claims on a slot, the higher wins
	master *peer  // the master of a replica; nil for a master
}

// Topology is the cluster as this node sees it: every node, who owns each slot,
// the slots being moved, and the epochs. Routing reads it with one atomic load
// per slot; changes (CLUSTER ADDSLOTS, SETSLOT, a peer's table) take mu.
//
// A -cluster-nodes topology (New) is static: every node derives the same one from
// the same list and it never changes. A -cluster-enabled one (Open) starts empty or
// from its config file, changes by redis-cli's commands and by the tables its
// peers send (exchange.go), and is saved to the file at each change.
type Topology struct {
	mu      sync.Mutex
	static  bool
	self    *peer
	peers   []*peer // self included, in the order met (CLUSTER NODES lists them so)
	current uint64  // the cluster's current epoch: the highest seen
	// forgotten are CLUSTER FORGET's node ids, not re-added from a peer's table
	// until the time (unix s), as Redis's blacklist.
	forgotten map[string]int64
	path      string // the config file; "" for none
	changes   atomic.Uint64
	// saveMu orders the writes of the file, the later table last; unsaved (a
	// change not yet written) and saveErr (the last write's) are guarded by mu.
	saveMu  sync.Mutex
	unsaved bool
	saveErr error

	owner     [Slots]atomic.Pointer[peer]
	migrating [Slots]atomic.Pointer[peer] // MIGRATING to that node
	importing [Slots]atomic.Pointer[peer] // IMPORTING from that node
	// unclaimed are the slots whose owner's own table no longer claims them
	// (merge.go), guarded by mu.
	unclaimed [Slots]bool
}

// New builds the static topology of the nodes at addrs, this node being
// addrs[self]. Each address is host:port, or host:port@first-last to give the
// node's slots explicitly; then every node must have a range, and the ranges must
// cover the 16384 slots exactly once. Without ranges the slots are split evenly in
// order: node i of n gets slots i·16384/n to (i+1)·16384/n − 1. Node i's config
// epoch is i+1, distinct as Redis requires.
func New(addrs []string, self int) (*Topology, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cluster: no nodes: give every node's host:port, this one's included")
	}
	if len(addrs) > Slots {
		return nil, fmt.Errorf("cluster: %d nodes, at most %d (one slot each)", len(addrs), Slots)
	}
	if self < 0 || self >= len(addrs) {
		return nil, fmt.Errorf("cluster: self is %d, must be this node's index in the list of %d nodes, 0 to %d",
			self, len(addrs), len(addrs)-1)
	}
	ranges := make([]Range, len(addrs))
	t := &Topology{static: true, current: uint64(len(addrs))}
	ranged := 0
	seen := make(map[string]bool, len(addrs))
	for i, a := range addrs {
		n, r, hasRange, err := parseNode(a)
		if err != nil {
			return nil, err
		}
		if seen[n.Addr()] {
			return nil, fmt.Errorf("cluster: node %s is listed twice", n.Addr())
		}
		seen[n.Addr()] = true
		if hasRange {
			ranged++
		} else {
			r = Range{uint16(i * Slots / len(addrs)), uint16((i+1)*Slots/len(addrs) - 1)}
		}
		ranges[i] = r
		t.peers = append(t.peers, &peer{Node: n, epoch: uint64(i + 1)})
	}
	if ranged != 0 && ranged != len(addrs) {
		return nil, fmt.Errorf("cluster: %d of %d nodes have a slot range: give one to every node (host:port@first-last) or to none",
			ranged, len(addrs))
	}
	if err := checkCoverage(t.peers, ranges); err != nil {
		return nil, err
	}
	for i, r := range ranges {
		for s := int(r.First); s <= int(r.Last); s++ {
			t.owner[s].Store(t.peers[i])
		}
	}
	t.self = t.peers[self]
	return t, nil
}

// parseNode reads host:port or host:port@first-last.
func parseNode(s string) (n Node, r Range, hasRange bool, err error) {
	addr, slots, hasRange := strings.Cut(s, "@")
	host, portText, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return n, r, false, fmt.Errorf("cluster: node %q: the address must be host:port", s)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return n, r, false, fmt.Errorf("cluster: node %q: the port must be a number from 1 to 65535", s)
	}
	n = Node{Host: host, Port: port}
	sum := sha1.Sum([]byte(n.Addr()))
	n.ID = hex.EncodeToString(sum[:])
	if hasRange {
		firstText, lastText, _ := strings.Cut(slots, "-")
		first, err1 := strconv.Atoi(firstText)
		last, err2 := strconv.Atoi(lastText)
		if err1 != nil || err2 != nil || first < 0 || first > last || last >= Slots {
			return n, r, false, fmt.Errorf("cluster: node %q: the slots must be first-last with 0 <= first <= last <= %d",
				s, Slots-1)
		}
		r = Range{uint16(first), uint16(last)}
	}
	return n, r, hasRange, nil
}

// checkCoverage requires the nodes' ranges to cover every slot exactly once.
func checkCoverage(peers []*peer, ranges []Range) error {
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ranges[a].First, ranges[b].First) })
	next := 0 // the first slot not yet covered
	for k, i := range order {
		r := ranges[i]
		switch {
		case int(r.First) > next:
			return fmt.Errorf("cluster: slots %d-%d belong to no node", next, r.First-1)
		case int(r.First) < next:
			prev := order[k-1]
			return fmt.Errorf("cluster: nodes %s and %s both claim slots %d-%d",
				peers[prev].Addr(), peers[i].Addr(), r.First, min(r.Last, ranges[prev].Last))
		}
		next = int(r.Last) + 1
	}
	if next < Slots {
		return fmt.Errorf("cluster: slots %d-%d belong to no node", next, Slots-1)
	}
	return nil
}

// Range is the slots First to Last, both included.
type Range struct{ First, Last uint16 }

// Static reports whether the topology is -cluster-nodes' fixed one.
func (t *Topology) Static() bool { return t.static }

// Nodes are the cluster's nodes, in the order given to New or met.
func (t *Topology) Nodes() []Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	nodes := make([]Node, len(t.peers))
	for i, p := range t.peers {
		nodes[i] = p.Node
	}
	return nodes
}

// Self is this node.
func (t *Topology) Self() Node { return t.self.Node }

// Owns reports whether this node owns slot.
func (t *Topology) Owns(slot uint16) bool { return t.owner[slot].Load() == t.self }

// Owner is the node that owns slot (slot < Slots), and false if none does.
func (t *Topology) Owner(slot uint16) (Node, bool) {
	if p := t.owner[slot].Load(); p != nil {
		return p.Node, true
	}
	return Node{}, false
}

// Migrating is the node slot is being moved to from this one, if any.
func (t *Topology) Migrating(slot uint16) (Node, bool) {
	if p := t.migrating[slot].Load(); p != nil {
		return p.Node, true
	}
	return Node{}, false
}

// Importing reports whether slot is being moved to this node.
func (t *Topology) Importing(slot uint16) bool { return t.importing[slot].Load() != nil }

// Ranges are the slots of the node id, in order, merged into ranges.
func (t *Topology) Ranges(id string) []Range {
	var rs []Range
	for s := range Slots {
		p := t.owner[s].Load()
		if p == nil || p.ID != id {
			continue
		}
		if n := len(rs); n > 0 && int(rs[n-1].Last) == s-1 {
			rs[n-1].Last = uint16(s)
		} else {
			rs = append(rs, Range{uint16(s), uint16(s)})
		}
	}
	return rs
}

// Changes counts the changes to the table since start: a peer exchange sends its
// table when it has changed since the last one it sent.
func (t *Topology) Changes() uint64 { return t.changes.Load() }
