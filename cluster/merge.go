package cluster

import (
	"time"
)

// How nodes learn of each other without Redis's bus: each sends its table
// (Describe) to every node it knows, over the client port, and merges the table
// it gets back (package resp does the sending). A node is authoritative about its
// own slots only: a table's other lines add nodes and raise epochs, its sender's
// own line claims slots, and a claim wins over the slot's owner when the owner
// has a lower config epoch or no longer claims the slot itself, as Redis's
// clusterUpdateSlotsConfigWith and owner_not_claiming_slot. Every node talks to
// every other one, so each hears each claim from its claimant.

// Merge folds a peer's table (its Table, or Describe) into this one and reports whether
// anything changed; the change is saved.
func (t *Topology) Merge(text string) (bool, error) {
	lines, current, err := parseTable(text)
	if err != nil {
		return false, err
	}
	var sender *line
	for i := range lines {
		if lines[i].myself {
			sender = &lines[i]
		}
	}
	if sender == nil {
		return false, ErrNotCluster
	}
	if t.static {
		return false, ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now().Unix()
	changed := false
	for id, until := range t.forgotten {
		if until <= now {
			delete(t.forgotten, id)
		}
	}
	if current > t.current {
		t.current, changed = current, true
	}
	var added []line
	for _, ln := range lines {
		if ln.node.ID == t.self.ID || t.forgotten[ln.node.ID] != 0 {
			continue
		}
		p := t.lookup(ln.node.ID)
		if p == nil {
			if t.byAddr(ln.node.Addr()) != nil && !ln.myself {
				continue // a node that changed its id (RESET HARD): its own table says so
			}
			if old := t.byAddr(ln.node.Addr()); old != nil {
				t.drop(old)
			}
			p = &peer{Node: ln.node}
			t.peers = append(t.peers, p)
			added = append(added, ln)
			changed = true
		}
		if ln.epoch > p.epoch && ln.master == "" {
			p.epoch, changed = ln.epoch, true
		}
		if ln.epoch > t.current {
			t.current, changed = ln.epoch, true
		}
	}
	// A node's role comes from its own line, or from the line that added it.
	for _, ln := range added {
		t.lookup(ln.node.ID).master = t.lookup(ln.master)
	}
	if p := t.lookup(sender.node.ID); p != nil {
		changed = t.mergeSender(p, sender) || changed
		for i := range lines {
			if lines[i].node.ID == t.self.ID && p.master == t.self && t.self.master == nil {
				changed = t.adopt(p, &lines[i]) || changed
			}
		}
	}
	if !changed {
		return false, nil
	}
	return true, t.changed()
}

// mergeSender applies the sender p's own line: its role, its claim on slots, and
// Redis's epoch collision rule. t.mu is held.
func (t *Topology) mergeSender(p *peer, ln *line) bool {
	changed, was := false, p.master
	if m := t.lookup(ln.master); m != p.master && (m != nil || ln.master == "") {
		p.master, changed = m, true
	}
	// cur is the master whose slots this node serves or replicates. A replica of
	// it that now claims slots as a master was promoted.
	cur := t.self
	if t.self.master != nil {
		cur = t.self.master
	}
	failover := p.master == nil && was == cur && t.slotsOf(cur) > 0
	changed = t.claim(p, ln.slots) || changed
	if failover && t.slotsOf(cur) == 0 {
		// As Redis's clusterUpdateSlotsConfigWith: the master that lost its last
		// slot to its own promoted replica (or this node, its replica) follows it.
		t.self.master, changed = p, true
	}
	// Two masters of one epoch: the one of the lower id keeps it, the other
	// bumps, as Redis's clusterHandleConfigEpochCollision.
	if p.master == nil && t.self.master == nil && p.epoch == t.self.epoch && p.epoch != 0 && p.ID < t.self.ID {
		t.current = t.maxEpoch() + 1
		t.self.epoch, changed = t.current, true
	}
	return changed
}

// claim applies p's own claim to the slots of ranges. t.mu is held.
func (t *Topology) claim(p *peer, ranges []Range) bool {
	var claims [Slots]bool
	for _, r := range ranges {
		for s := int(r.First); s <= int(r.Last); s++ {
			claims[s] = true
		}
	}
	changed := false
	for s := range Slots {
		cur := t.owner[s].Load()
		switch {
		case cur == p:
			// p gave the slot away when it stops claiming it: whoever claims it
			// next wins, whatever its epoch. Until then p stays its owner, whose
			// MOVED or ASK sends clients on.
			t.unclaimed[s] = !claims[s]
		case !claims[s]:
		case t.importing[s].Load() != nil:
			// redis-cli closes the move with SETSLOT NODE; a claim meanwhile would
			// take the slot from under it.
		case cur == nil || t.unclaimed[s] || cur.epoch < p.epoch:
			t.owner[s].Store(p)
			t.unclaimed[s] = false
			changed = true
		}
	}
	return changed
}

// slotsOf counts p's slots. t.mu is held.
func (t *Topology) slotsOf(p *peer) int {
	n := 0
	for s := range Slots {
		if t.owner[s].Load() == p {
			n++
		}
	}
	return n
}

// byAddr is the peer at addr, or nil. t.mu is held.
func (t *Topology) byAddr(addr string) *peer {
	for _, p := range t.peers {
		if p.Addr() == addr {
			return p
		}
	}
	return nil
}

// Peers are the addresses of the other nodes, to send the table to.
func (t *Topology) Peers() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var addrs []string
	for _, p := range t.peers {
		if p != t.self {
			addrs = append(addrs, p.Addr())
		}
	}
	return addrs
}
