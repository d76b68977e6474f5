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
)

// Node is one rlserver of the cluster and the slots it owns.
type Node struct {
	Host string // as written in -cluster-nodes: what MOVED and CLUSTER SLOTS send clients to
	Port int    // the client port, as written in -cluster-nodes
	// ID is the node's name in CLUSTER NODES, SLOTS and SHARDS: 40 hex digits of
	// SHA-1("host:port"), so that every node names every other one the same way
	// without talking to it.
	ID string
	// First and Last are the node's slots, both included: one range per node.
	First, Last uint16
}

// Addr is the node's address as MOVED and CLUSTER NODES write it: host:port.
func (n Node) Addr() string { return n.Host + ":" + strconv.Itoa(n.Port) }

// Topology is a static cluster: every node, its slots, and which node this is.
// It never changes after New; resharding is a restart with a new topology.
type Topology struct {
	nodes []Node
	self  int
	// This node's slots, copied out of nodes so that Owns is two comparisons.
	first, last uint16
}

// New builds the topology of the nodes at addrs, this node being addrs[self].
// Each address is host:port, or host:port@first-last to give the node's slots
// explicitly; then every node must have a range, and the ranges must cover the
// 16384 slots exactly once. Without ranges the slots are split evenly in order:
// node i of n gets slots i·16384/n to (i+1)·16384/n − 1.
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
	nodes := make([]Node, len(addrs))
	ranged := 0
	seen := make(map[string]bool, len(addrs))
	for i, a := range addrs {
		n, hasRange, err := parseNode(a)
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
			n.First = uint16(i * Slots / len(addrs))
			n.Last = uint16((i+1)*Slots/len(addrs) - 1)
		}
		nodes[i] = n
	}
	if ranged != 0 && ranged != len(nodes) {
		return nil, fmt.Errorf("cluster: %d of %d nodes have a slot range: give one to every node (host:port@first-last) or to none",
			ranged, len(nodes))
	}
	if err := checkCoverage(nodes); err != nil {
		return nil, err
	}
	return &Topology{nodes: nodes, self: self, first: nodes[self].First, last: nodes[self].Last}, nil
}

// parseNode reads host:port or host:port@first-last.
func parseNode(s string) (n Node, hasRange bool, err error) {
	addr, slots, hasRange := strings.Cut(s, "@")
	host, portText, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return n, false, fmt.Errorf("cluster: node %q: the address must be host:port", s)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return n, false, fmt.Errorf("cluster: node %q: the port must be a number from 1 to 65535", s)
	}
	n = Node{Host: host, Port: port}
	sum := sha1.Sum([]byte(n.Addr()))
	n.ID = hex.EncodeToString(sum[:])
	if hasRange {
		firstText, lastText, _ := strings.Cut(slots, "-")
		first, err1 := strconv.Atoi(firstText)
		last, err2 := strconv.Atoi(lastText)
		if err1 != nil || err2 != nil || first < 0 || first > last || last >= Slots {
			return n, false, fmt.Errorf("cluster: node %q: the slots must be first-last with 0 <= first <= last <= %d",
				s, Slots-1)
		}
		n.First, n.Last = uint16(first), uint16(last)
	}
	return n, hasRange, nil
}

// checkCoverage requires the nodes' ranges to cover every slot exactly once.
func checkCoverage(nodes []Node) error {
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b Node) int { return cmp.Compare(a.First, b.First) })
	next := 0 // the first slot not yet covered
	for i, n := range sorted {
		switch {
		case int(n.First) > next:
			return fmt.Errorf("cluster: slots %d-%d belong to no node", next, n.First-1)
		case int(n.First) < next:
			return fmt.Errorf("cluster: nodes %s and %s both claim slots %d-%d",
				sorted[i-1].Addr(), n.Addr(), n.First, min(n.Last, sorted[i-1].Last))
		}
		next = int(n.Last) + 1
	}
	if next < Slots {
		return fmt.Errorf("cluster: slots %d-%d belong to no node", next, Slots-1)
	}
	return nil
}

// Nodes are the cluster's nodes in the order given to New.
func (t *Topology) Nodes() []Node { return slices.Clone(t.nodes) }

// Self is this node.
func (t *Topology) Self() Node { return t.nodes[t.self] }

// Owns reports whether this node owns slot.
func (t *Topology) Owns(slot uint16) bool { return t.first <= slot && slot <= t.last }

// Owner is the node that owns slot (slot < Slots).
func (t *Topology) Owner(slot uint16) Node {
	for _, n := range t.nodes {
		if n.First <= slot && slot <= n.Last {
			return n
		}
	}
	panic(fmt.Sprintf("cluster: slot %d out of range", slot)) // New checked the coverage
}
