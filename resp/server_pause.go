package resp

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/internal/rlcmd"
)

// CLIENT PAUSE, as Redis's: until its end (or CLIENT UNPAUSE) the commands of every
// client connection wait before they run or are queued, all of them (ALL, CLIENT
// UNPAUSE among them) or those that write or publish (WRITE). A replica's link
// is not a client connection here, so it is never paused, as in Redis.

// pauseState is a pause in force.
type pauseState struct {
	end    time.Time
	writes bool          // WRITE: only writes and PUBLISH wait
	done   chan struct{} // closed when this pause ends or another replaces it
}

// pauses is the server's pause; state is nil when none is in force, so that a
// command pays one atomic load.
type pauses struct {
	mu    sync.Mutex // orders PAUSE, UNPAUSE and the end timer
	state atomic.Pointer[pauseState]
	timer *time.Timer
}

// set starts a pause until end, or extends the one in force: the later end and the
// stricter mode hold, as Redis's pauseActions.
func (p *pauses) set(end time.Time, writes bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := &pauseState{end: end, writes: writes, done: make(chan struct{})}
	if old := p.state.Load(); old != nil {
		next.writes = writes && old.writes
		if old.end.After(end) {
			next.end = old.end
		}
		close(old.done)
		p.timer.Stop()
	}
	p.state.Store(next)
	p.timer = time.AfterFunc(time.Until(next.end), func() { p.end(next) })
}

// end ends the pause st, if still in force (nil: whichever is).
func (p *pauses) end(st *pauseState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.state.Load()
	if cur == nil || st != nil && cur != st {
		return
	}
	p.state.Store(nil)
	p.timer.Stop()
	close(cur.done)
}

// holds reports whether the pause st holds up cm on c.
func (st *pauseState) holds(c *client, cm *command) bool {
	if !st.writes {
		return true
	}
	if cm.write || cm.name == "publish" {
		return true
	}
	if cm.name == "exec" {
		for _, q := range c.multi {
			if q.cm.write || q.cm.name == "publish" {
				return true
			}
		}
	}
	return false
}

// waitPause holds up cm on c while a pause holds it; the commands after it then
// read the clock again.
func (s *Server) waitPause(c *client, cm *command) {
	waited := false
	for {
		st := s.pause.state.Load()
		if st == nil || !st.holds(c, cm) {
			break
		}
		if !waited {
			// The replies before it go out now, as Redis writes them while it waits.
			c.w.Flush()
			if c.silent {
				c.silentFrom = 0
			}
			waited = true
		}
		<-st.done
	}
	if waited {
		c.batchStart = time.Now()
		c.batchNow = s.clock.At(c.batchStart)
		c.batchMark = 0
	}
}

// cmdClientPause serves CLIENT PAUSE timeout [WRITE|ALL], timeout in ms.
func cmdClientPause(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 4 {
		c.writeError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try CLIENT HELP.", args[1]))
		return
	}
	writes := false
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "write":
			writes = true
		case "all":
		default:
			c.writeError("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := rlcmd.ParseInt(args[2])
	switch {
	case !ok:
		c.writeError("ERR timeout is not an integer or out of range")
		return
	case ms < 0:
		c.writeError("ERR timeout is negative")
		return
	}
	now := time.Now().UnixMilli()
	if ms > math.MaxInt64-now { // Redis 7.2's check; 7.0's end overflowed, and it did not pause

		c.writeError("ERR timeout is out of range")
		return
	}
	if ms > 0 {
		s.pause.set(time.UnixMilli(now+ms), writes)
	}
	c.w.WriteString("OK")
}

// cmdClientUnpause serves CLIENT UNPAUSE.
func cmdClientUnpause(s *Server, c *client, _ [][]byte, _ int64) {
	s.pause.end(nil)
	c.w.WriteString("OK")
}
