package cluster

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// The changes redis-cli --cluster makes, each checked as Redis's clusterCommand
// checks it, with its error texts (resp writes them after "ERR "), and saved.

// forgetFor is how long a forgotten node stays out of the table, as Redis's
// CLUSTER_BLACKLIST_TTL: long enough for every node to be told to forget it.
const forgetFor = 60 * time.Second

// lookup is the peer of id, or nil. t.mu is held.
func (t *Topology) lookup(id string) *peer {
	for _, p := range t.peers {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// changed records a change made under t.mu: the exchange sends the table on
// (Changes), and a goroutine writes it to the config file, coalescing the changes
// made meanwhile. A file write and rename takes 0.2–0.5 ms on the project's
// machine, and redis-cli's reshard makes four changes a slot: written in line,
// they were 60% of a slot's move. It returns the last write's error, so that a
// failing disk shows on the commands that change the table.
func (t *Topology) changed() error {
	t.changes.Add(1)
	if t.path != "" && !t.unsaved {
		t.unsaved = true
		go t.Save()
	}
	return t.saveErr
}

// AssignSlots is CLUSTER ADDSLOTS, ADDSLOTSRANGE (del false) and DELSLOTS,
// DELSLOTSRANGE (del true): the slots of ranges become this node's, or nobody's.
// Nothing changes unless every slot can.
func (t *Topology) AssignSlots(ranges []Range, del bool) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var seen [Slots]bool
	for _, r := range ranges {
		for s := int(r.First); s <= int(r.Last); s++ {
			switch owned := t.owner[s].Load() != nil; {
			case del && !owned:
				return fmt.Errorf("Slot %d is already unassigned", s)
			case !del && owned:
				return fmt.Errorf("Slot %d is already busy", s)
			case seen[s]:
				return fmt.Errorf("Slot %d specified multiple times", s)
			}
			seen[s] = true
		}
	}
	for s := range seen {
		if !seen[s] {
			continue
		}
		t.unclaimed[s] = false
		if del {
			t.owner[s].Store(nil)
		} else {
			t.owner[s].Store(t.self)
			t.importing[s].Store(nil) // now the real owner, as Redis's clusterUpdateSlots
		}
	}
	return t.changed()
}

// SetMigrating is CLUSTER SETSLOT slot MIGRATING id.
func (t *Topology) SetMigrating(slot uint16, id string) error {
	return t.setMoving(slot, id, true)
}

// SetImporting is CLUSTER SETSLOT slot IMPORTING id.
func (t *Topology) SetImporting(slot uint16, id string) error {
	return t.setMoving(slot, id, false)
}

func (t *Topology) setMoving(slot uint16, id string, migrating bool) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.owner[slot].Load() == t.self
	switch {
	case migrating && !mine:
		return fmt.Errorf("I'm not the owner of hash slot %d", slot)
	case !migrating && mine:
		return fmt.Errorf("I'm already the owner of hash slot %d", slot)
	}
	p := t.lookup(id)
	if p == nil {
		return fmt.Errorf("I don't know about node %s", id)
	}
	if migrating {
		t.migrating[slot].Store(p)
	} else {
		t.importing[slot].Store(p)
	}
	return t.changed()
}

// SetStable is CLUSTER SETSLOT slot STABLE: the slot is no longer being moved.
func (t *Topology) SetStable(slot uint16) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.migrating[slot].Store(nil)
	t.importing[slot].Store(nil)
	return t.changed()
}

// SetNode is CLUSTER SETSLOT slot NODE id: slot becomes id's. keys is how many keys
// of the slot this node holds: it may not give away a slot it still has keys of.
// Taking a slot it was importing bumps this node's epoch, so that its claim wins
// over the old owner's everywhere.
func (t *Topology) SetNode(slot uint16, id string, keys int) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.lookup(id)
	if p == nil {
		return fmt.Errorf("Unknown node %s", id)
	}
	if t.owner[slot].Load() == t.self && p != t.self && keys != 0 {
		return fmt.Errorf("Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot)
	}
	if keys == 0 {
		t.migrating[slot].Store(nil)
	}
	t.owner[slot].Store(p)
	t.unclaimed[slot] = false
	if p == t.self && t.importing[slot].Load() != nil {
		t.bump()
		t.importing[slot].Store(nil)
	}
	return t.changed()
}

// bump is Redis's clusterBumpConfigEpochWithoutConsensus: unless this node's epoch
// is already the highest (and not 0), it takes a new current epoch. t.mu is held.
func (t *Topology) bump() bool {
	if m := t.maxEpoch(); t.self.epoch == 0 || t.self.epoch != m {
		t.current = m + 1
		t.self.epoch = t.current
		return true
	}
	return false
}

// BumpEpoch is CLUSTER BUMPEPOCH: whether the epoch was bumped, and this node's epoch.
func (t *Topology) BumpEpoch() (bool, uint64, error) {
	if t.static {
		return false, 0, ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	bumped := t.bump()
	return bumped, t.self.epoch, t.changed()
}

// SetConfigEpoch is CLUSTER SET-CONFIG-EPOCH: only on a node that knows no other
// and has epoch 0, as at cluster creation.
func (t *Topology) SetConfigEpoch(epoch int64) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case epoch < 0:
		return fmt.Errorf("Invalid config epoch specified: %d", epoch)
	case len(t.peers) > 1:
		return errors.New("The user can assign a config epoch only when the node does not know any other node.")
	case t.self.epoch != 0:
		return errors.New("Node config epoch is already non-zero")
	}
	t.self.epoch = uint64(epoch)
	t.current = max(t.current, uint64(epoch))
	return t.changed()
}

// Forget is CLUSTER FORGET id: the node leaves the table, with its slots, and its
// peers' tables do not bring it back for a minute.
func (t *Topology) Forget(id string) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.lookup(id)
	switch {
	case p == nil:
		return fmt.Errorf("Unknown node %s", id)
	case p == t.self:
		return errors.New("I tried hard but I can't forget myself...")
	case p == t.self.master:
		return errors.New("Can't forget my master!")
	}
	t.forgotten[id] = time.Now().Add(forgetFor).Unix()
	t.drop(p)
	return t.changed()
}

// drop removes p from the table: its slots become nobody's. t.mu is held.
func (t *Topology) drop(p *peer) {
	for s := range Slots {
		t.owner[s].CompareAndSwap(p, nil)
		t.migrating[s].CompareAndSwap(p, nil)
		t.importing[s].CompareAndSwap(p, nil)
	}
	for i, q := range t.peers {
		if q == p {
			t.peers = append(t.peers[:i], t.peers[i+1:]...)
			break
		}
	}
}

// Reset is CLUSTER RESET: every slot unassigned and closed, every other node
// forgotten, a replica made a master; hard also zeroes the epochs and draws a new
// id. The caller checks that a master holds no keys, and empties a replica.
func (t *Topology) Reset(hard bool, newID string) error {
	if t.static {
		return ErrStatic
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range Slots {
		t.owner[s].Store(nil)
		t.migrating[s].Store(nil)
		t.importing[s].Store(nil)
	}
	for _, p := range slices.Clone(t.peers) {
		if p != t.self {
			t.drop(p)
		}
	}
	t.self.master = nil
	if hard {
		t.current = 0
		t.self = &peer{Node: Node{Host: t.self.Host, Port: t.self.Port, ID: newID}}
		t.peers = []*peer{t.self}
	}
	return t.changed()
}

// Info is what CLUSTER INFO reports.
type Info struct {
	Assigned int    // slots with an owner
	Known    int    // nodes in the table
	Size     int    // nodes owning a slot
	Current  uint64 // the current epoch
	MyEpoch  uint64
}

// Info summarises the table for CLUSTER INFO.
func (t *Topology) Info() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := Info{Known: len(t.peers), Current: t.current, MyEpoch: t.self.epoch}
	owners := map[*peer]bool{}
	for s := range Slots {
		if p := t.owner[s].Load(); p != nil {
			in.Assigned++
			owners[p] = true
		}
	}
	in.Size = len(owners)
	return in
}
