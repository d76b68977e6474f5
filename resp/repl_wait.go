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
	timeout, ok := rlcmd.ParseInt(args[2])
	if !ok {
		c.writeError("ERR timeout is not an integer or out of range")
		return
	}
	if timeout < 0 {
		c.writeError("ERR timeout is negative")
		return
	}
	target := s.repl.Offset()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	for {
		acked := s.ackedReplicas(target)
		if acked >= want || !deadline.IsZero() && !time.Now().Before(deadline) {
			c.w.WriteInt(int(acked))
			return
		}
		time.Sleep(waitPoll)
	}
}

// ackedReplicas counts the replicas that acknowledged offset.
func (s *Server) ackedReplicas(offset int64) int64 {
	var n int64
	for _, r := range s.repl.Replicas() {
		if r.State == "online" && r.Offset >= offset {
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
