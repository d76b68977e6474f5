package resp

import (
	"math"
	"strconv"
	"sync"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Cluster mode's errors, in Redis's words.
const (
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	errTryAgain        = "TRYAGAIN Multiple keys request during rehashing of slot"
	errSlotNotServed   = "CLUSTERDOWN Hash slot not served"
	errClusterDown     = "CLUSTERDOWN The cluster is down"
)

// clusterRedirect is the error that keeps a command with keys from running on this
// node in cluster mode, or "" when it runs here: CROSSSLOT when its keys hash to
// different slots, else route's answer. Redis checks in this order too, after arity
// and authentication, before the arguments' values.
func (s *Server) clusterRedirect(c *client, cm *command, args [][]byte) string {
	keys, step := slotKeys(cm, args)
	slot := keysSlot(keys, step)
	switch {
	case len(keys) == 0:
		return ""
	case slot < 0:
		return errCrossSlot
	case s.peers.exchange.Rejoining():
		return errClusterDown
	}
	return s.route(c, cm, uint16(slot), keys, step)
}

// route is Redis's getNodeByQuery for keys of one slot: "" to run here, else the
// redirect. A slot being moved from this node runs the calls whose keys are all
// still here and sends the others to its new node with ASK (TRYAGAIN when some keys
// are here and some gone); a slot being moved here runs a call flagged ASKING;
// any other slot not this node's answers MOVED to its owner. execute holds the
// slot's lock, so that the keys found here are the keys the call runs on.
func (s *Server) route(c *client, cm *command, slot uint16, keys [][]byte, step int) string {
	t := s.cfg.Cluster
	mine := t.Owns(slot)
	to, migrating := t.Migrating(slot)
	importing := !mine && t.Importing(slot)
	if mine && !migrating || cm.locksSlots && (migrating || importing) {
		return ""
	}
	present, missing := 0, 0
	if migrating || importing {
		now := c.batchNow
		for i := 0; i < len(keys); i += step {
			if s.store.Exists(keys[i], now) {
				present++
			} else {
				missing++
			}
		}
	}
	switch {
	case mine && missing == 0:
		return ""
	case mine && present > 0:
		return errTryAgain
	case mine:
		return "ASK " + strconv.Itoa(int(slot)) + " " + to.Addr()
	case importing && (c.asking || cm.asking):
		if missing > 0 && present+missing > 1 {
			return errTryAgain
		}
		return ""
	}
	owner, ok := t.Owner(slot)
	if !ok {
		return errSlotNotServed
	}
	return "MOVED " + strconv.Itoa(int(slot)) + " " + owner.Addr()
}

// slotKeys are a command's keys and the step between them in that list.
func slotKeys(cm *command, args [][]byte) ([][]byte, int) {
	if cm.keys != nil {
		return cm.keys(args), 1
	}
	if cm.firstKey == 0 {
		return nil, 1
	}
	last := cm.lastKey
	if last < 0 {
		last += len(args)
	}
	return args[cm.firstKey : last+1], cm.keyStep // within arity: TestKeyPositionsWithinArity
}

// keysSlot is the slot of keys (every step-th), -1 when they hash to different
// slots, 0 for none.
func keysSlot(keys [][]byte, step int) int {
	if len(keys) == 0 {
		return 0
	}
	first := cluster.Slot(keys[0])
	for i := step; i < len(keys); i += step {
		if cluster.Slot(keys[i]) != first {
			return -1
		}
	}
	return int(first)
}

// commandSlot is the slot of a command's keys and how many it has; -1 when they hash
// to different slots.
func commandSlot(cm *command, args [][]byte) (slot int, n int) {
	keys, step := slotKeys(cm, args)
	return keysSlot(keys, step), len(keys)
}

// lockSlot takes, for a command of a -cluster-enabled node with keys of one slot,
// the read side of the slot's lock, which MIGRATE takes to move keys (cluster_migrate.go):
// a call never runs on a key half moved. It returns the lock to release, or nil.
func (s *Server) lockSlot(cm *command, args [][]byte) *sync.RWMutex {
	if s.cfg.Cluster == nil || s.cfg.Cluster.Static() || cm.firstKey == 0 && cm.keys == nil || cm.locksSlots {
		return nil
	}
	slot, n := commandSlot(cm, args)
	if n == 0 || slot < 0 {
		return nil
	}
	lk := &s.slotLocks[slot]
	lk.RLock()
	return lk
}

// execRedirect is, in cluster mode, the error that keeps a transaction from running
// on this node, as Redis checks EXEC: every key of every queued command in one slot
// (else CROSSSLOT, even when this node owns both), and that slot served here.
func (s *Server) execRedirect(c *client, list []queued) string {
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
	if s.peers.exchange.Rejoining() {
		return errClusterDown
	}
	for _, q := range list {
		if keys, step := slotKeys(q.cm, q.args); len(keys) > 0 {
			if msg := s.route(c, q.cm, uint16(slot), keys, step); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// rlAllKeys finds RL.ALL's keys, one per rule. When the rules do not parse it finds
// none, and the command runs here to answer its own error. The log limit is not
// checked here: the command checks it against the server's.
func rlAllKeys(args [][]byte) [][]byte {
	rules, err := rlcmd.ParseRLAll(args[1:], math.MaxInt64)
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
// replicas for reads: both only answer OK. Every RL.* call writes (a PEEK too is
// routed as one), so a replica answers MOVED to its master either way.
func cmdReadWrite(s *Server, c *client, _ [][]byte, _ int64) {
	if needCluster(s, c) {
		c.w.WriteString("OK")
	}
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
