package resp

import (
	"time"

	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/replication"
)

// waitPoll is how often WAIT counts the replicas' acknowledgements. Replicas
// acknowledge every 100 ms (replication's replAckEvery), so a finer poll gains
// nothing.
const waitPoll = 5 * time.Millisecond

// cmdWait serves WAIT numreplicas timeout as Redis answers it: the number of replicas
// that acknowledged every write made before the call (the primary's offset then),
// once numreplicas did or after timeout ms (0: no bound); on a replica, an error.
func cmdWait(s *Server, c *client, args [][]byte, _ int64) {
	if s.repl.ReadOnly() {
		c.writeError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	want, ok := rlcmd.ParseInt(args[1])
	if !ok {
		c.writeError("ERR value is not an integer or out of range")
		return
	}
	deadline, ok := waitDeadline(c, args[2])
	if !ok {
		return
	}
	target := s.repl.Offset()
	for {
		acked := s.ackedReplicas(target)
		if acked >= want || !deadline.IsZero() && !time.Now().Before(deadline) {
			c.w.WriteInt(int(acked))
			return
		}
		time.Sleep(waitPoll)
	}
}

// waitDeadline parses WAIT's and WAITAOF's timeout in ms: the time the wait ends,
// zero for no bound (0). A timeout that is no integer or negative is answered with
// Redis's error, and ok is false.
func waitDeadline(c *client, arg []byte) (deadline time.Time, ok bool) {
	timeout, ok := rlcmd.ParseInt(arg)
	switch {
	case !ok:
		c.writeError("ERR timeout is not an integer or out of range")
		return time.Time{}, false
	case timeout < 0:
		c.writeError("ERR timeout is negative")
		return time.Time{}, false
	case timeout > 0:
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	return deadline, true
}

// ackedReplicas counts the replicas that acknowledged offset.
func (s *Server) ackedReplicas(offset int64) int64 {
	return s.onlineReplicas(func(r replication.Replica) bool { return r.Offset >= offset })
}

// syncedReplicas counts the replicas whose log synced offset (FACK).
func (s *Server) syncedReplicas(offset int64) int64 {
	return s.onlineReplicas(func(r replication.Replica) bool { return r.AOFOffset >= offset })
}

// onlineReplicas counts the online replicas for which reached is true.
func (s *Server) onlineReplicas(reached func(replication.Replica) bool) int64 {
	var n int64
	for _, r := range s.repl.Replicas() {
		if r.State == "online" && reached(r) {
			n++
		}
	}
	return n
}

// errNoReplicas refuses a write on a primary with fewer good replicas than
// min-replicas-to-write, Redis's words.
const errNoReplicas = "NOREPLICAS Not enough good replicas to write."

// DefaultMinReplicasMaxLag is min-replicas-max-lag's default, Redis's: seconds.
const DefaultMinReplicasMaxLag = 10

// replicasRefusal is errNoReplicas when min-replicas-to-write is set and fewer
// replicas than it acknowledged within min-replicas-max-lag seconds: a primary cut off
// from its replicas stops admitting within that time, so that it does not spend
// limits beside the replica promoted in its place. "" otherwise.
func (s *Server) replicasRefusal() string {
	t := s.tun.Load()
	if t.minReplicas == 0 || goodReplicas(s.repl.Replicas(), t.minReplicasLag) >= t.minReplicas {
		return ""
	}
	return errNoReplicas
}

// goodReplicas counts the online replicas that acknowledged within maxLag seconds.
func goodReplicas(views []replication.Replica, maxLag int) int {
	n := 0
	for _, v := range views {
		if v.State == "online" && v.LagSeconds <= int64(maxLag) {
			n++
		}
	}
	return n
}

// cmdWaitAOF serves WAITAOF numlocal numreplicas timeout as Redis 7.2 answers it:
// [1 if this server's log synced every write made before the call else 0, the
// replicas whose own log synced them (their FACK reached the replication offset at
// the call)], once numlocal (0 or 1) and numreplicas are met or after timeout ms (0:
// no bound). A replica without appendonly reports no FACK and never counts, as in
// Redis.
func cmdWaitAOF(s *Server, c *client, args [][]byte, _ int64) {
	numLocal, ok := rlcmd.ParseInt(args[1])
	if !ok {
		c.writeError("ERR value is not an integer or out of range")
		return
	}
	if numLocal < 0 || numLocal > 1 {
		c.writeError("ERR value is out of range, value must between 0 and 1")
		return
	}
	numReplicas, ok := rlcmd.ParseInt(args[2])
	if !ok {
		c.writeError("ERR value is not an integer or out of range")
		return
	}
	if numReplicas < 0 {
		c.writeError("ERR value is out of range, must be positive")
		return
	}
	deadline, ok := waitDeadline(c, args[3])
	if !ok {
		return
	}
	if s.repl.ReadOnly() {
		c.writeError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
		return
	}
	l := s.core.AOF()
	if numLocal > 0 && l == nil {
		c.writeError(errWaitAOFOff)
		return
	}
	var target int64
	if l != nil {
		target = l.End()
	}
	replTarget := s.repl.Offset()
	for {
		var local int64
		if l != nil && l.Durable() >= target {
			local = 1
		}
		replicas := s.syncedReplicas(replTarget)
		if local >= numLocal && replicas >= numReplicas ||
			!deadline.IsZero() && !time.Now().Before(deadline) {
			c.w.WriteArray(2)
			c.w.WriteInt64(local)
			c.w.WriteInt64(replicas)
			return
		}
		time.Sleep(waitPoll)
		if l = s.core.AOF(); numLocal > 0 && l == nil {
			c.writeError(errWaitAOFOff) // CONFIG SET appendonly no while waiting, as Redis
			return
		}
	}
}

// errWaitAOFOff refuses WAITAOF numlocal 1 without a log, Redis's words.
const errWaitAOFOff = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
