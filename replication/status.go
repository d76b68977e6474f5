package replication

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Replica is one replica as its primary sees it, for INFO and ROLE.
type Replica struct {
	IP   string
	Port int
	// State is "wait_bgsave" until the snapshot is sent, then "online".
	State string
	// Offset is the offset it last acknowledged; LagSeconds the seconds since.
	Offset, LagSeconds int64
	// AOFOffset is the offset it last said its append-only log synced (FACK), -1 if
	// it never did: it has no log.
	AOFOffset int64
}

// Replicas lists the connected replicas by address, so that INFO's slaveN stay put.
func (n *Node) Replicas() []Replica {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Replica
	now := time.Now().UnixNano()
	for r := range n.replicas {
		state := "wait_bgsave"
		if r.online.Load() {
			state = "online"
		}
		out = append(out, Replica{IP: r.ip, Port: r.port, State: state, Offset: r.ack.Load(),
			LagSeconds: (now - r.ackAt.Load()) / int64(time.Second), AOFOffset: r.fack.Load()})
	}
	slices.SortFunc(out, func(a, b Replica) int { return cmp.Or(strings.Compare(a.IP, b.IP), cmp.Compare(a.Port, b.Port)) })
	return out
}

// Offset is the replication offset: a primary's backlog end, a replica's applied offset.
func (n *Node) Offset() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.backlog != nil {
		_, end := n.backlog.Offsets()
		return end
	}
	if n.masterHost != "" {
		n.applied.mu.Lock()
		defer n.applied.mu.Unlock()
		return n.applied.offset
	}
	return n.baseOffset
}

// Status is a node's replication state, as INFO replication and ROLE show it.
type Status struct {
	// MasterHost and MasterPort are a replica's primary; "" on a primary.
	MasterHost string
	MasterPort int
	// Linked reports that a replica's link exists (it is made by Start); LinkState is
	// "connect", "connecting", "sync" or "connected", as ROLE says.
	Linked    bool
	LinkState string
	LinkUp    bool
	// LastIO is when a replica last heard from its primary, zero if never; DownSince
	// when its link went down, zero while up or if unknown.
	LastIO, DownSince time.Time
	// Applied is how far a replica applied its primary's stream.
	Applied int64
	// ReplID is the replication id: a primary's own, or a replica's primary's once known.
	ReplID string
	// ReplID2 is the old primary's id after a promotion, "" if none; SecondOffset how
	// far this node had applied its stream.
	ReplID2      string
	SecondOffset int64
	// Offset is Offset().
	Offset int64
	// BacklogActive reports a backlog (a primary's, or a replica's history); its
	// first offset, capacity in bytes and length follow.
	BacklogActive                         bool
	BacklogFirst, BacklogSize, BacklogLen int64
	// Syncs served as a primary, as Redis's INFO stats counts them.
	SyncFull, SyncPartialOK, SyncPartialErr uint64
}

// Status reads the node's state.
func (n *Node) Status() Status {
	n.mu.Lock()
	st := Status{MasterHost: n.masterHost, MasterPort: n.masterPort, ReplID: n.replID,
		ReplID2: n.replID2, SecondOffset: n.secondOffset}
	l, bl := n.link, n.backlog
	if bl == nil {
		bl = n.history
	}
	n.mu.Unlock()
	if l != nil {
		st.Linked = true
		st.LinkState = l.state.Load().(string)
		st.LinkUp = l.up.Load()
		if t := l.lastIO.Load(); t != 0 {
			st.LastIO = time.Unix(0, t)
		}
		if t := l.downSince.Load(); t != 0 {
			st.DownSince = time.Unix(0, t)
		}
	}
	if st.MasterHost != "" {
		n.applied.mu.Lock()
		st.Applied = n.applied.offset
		if n.applied.replID != "" {
			st.ReplID = n.applied.replID
		}
		n.applied.mu.Unlock()
	}
	if bl != nil {
		f, end := bl.Offsets()
		st.BacklogActive, st.BacklogFirst, st.BacklogSize, st.BacklogLen = true, f, int64(bl.Size()), end-f
	}
	st.Offset = n.Offset()
	st.SyncFull, st.SyncPartialOK, st.SyncPartialErr = n.syncFull.Load(), n.syncPartialOK.Load(), n.syncPartialErr.Load()
	return st
}
