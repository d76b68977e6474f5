package resp

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Bounds of a slow log entry's arguments, Redis's SLOWLOG_ENTRY_MAX_ARGC and
// SLOWLOG_ENTRY_MAX_STRING.
const (
	slowlogMaxArgs   = 32
	slowlogMaxString = 128
)

// slowlog is SLOWLOG's entries. The hot path only compares a command's run time with
// slowlog-log-slower-than; the lock is taken for commands that passed it.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry // oldest first
	nextID  int64
}

// slowEntry is one logged command, its arguments copied and cut as Redis cuts them.
type slowEntry struct {
	id, unix, us int64
	args         []string
	addr, name   string
}

// add logs a command that took d, keeping the newest maxLen entries.
func (l *slowlog) add(c *client, cm *command, args [][]byte, d time.Duration, maxLen int) {
	if maxLen == 0 {
		return
	}
	n := min(len(args), slowlogMaxArgs)
	e := slowEntry{unix: time.Now().Unix(), us: d.Microseconds(), args: make([]string, n), addr: c.addr}
	for i, a := range redact(cm, args)[:n] {
		switch {
		case n < len(args) && i == n-1:
			e.args[i] = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		case len(a) > slowlogMaxString:
			e.args[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		default:
			e.args[i] = string(a)
		}
	}
	c.mu.Lock()
	e.name = c.name
	c.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trimLocked(maxLen)
}

// trim drops the oldest entries beyond maxLen, after CONFIG SET slowlog-max-len.
func (l *slowlog) trim(maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trimLocked(maxLen)
}

func (l *slowlog) trimLocked(maxLen int) {
	if over := len(l.entries) - maxLen; over > 0 {
		l.entries = slices.Delete(l.entries, 0, over)
	}
}

// redacted stands for a credential in SLOWLOG and MONITOR, as in Redis.
var redacted = []byte("(redacted)")

// redact returns args with AUTH's and HELLO AUTH's credentials and CONFIG SET
// requirepass's value replaced; args itself when there are none.
func redact(cm *command, args [][]byte) [][]byte {
	var hide []int
	switch cm.full {
	case "auth":
		for i := 1; i < len(args); i++ {
			hide = append(hide, i)
		}
	case "hello":
		for i := 2; i+2 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("auth")) {
				hide = append(hide, i+1, i+2)
			}
		}
	case "config|set":
		for i := 2; i+1 < len(args); i += 2 {
			if bytes.EqualFold(args[i], []byte("requirepass")) || bytes.EqualFold(args[i], []byte("masterauth")) {
				hide = append(hide, i+1)
			}
		}
	}
	if hide == nil {
		return args
	}
	out := slices.Clone(args)
	for _, i := range hide {
		out[i] = redacted
	}
	return out
}

// cmdSlowlogGet serves SLOWLOG GET [count]: the newest count entries, 10 by
// default, all with -1.
func cmdSlowlogGet(s *Server, c *client, args [][]byte, _ int64) {
	count := int64(10)
	if len(args) > 3 {
		c.writeError(errSyntax)
		return
	}
	if len(args) == 3 {
		n, ok := rlcmd.ParseInt(args[2])
		if !ok || n < -1 {
			c.writeError("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	s.slow.mu.Lock()
	list := slices.Clone(s.slow.entries)
	s.slow.mu.Unlock()
	if count >= 0 && int64(len(list)) > count {
		list = list[int64(len(list))-count:]
	}
	c.w.WriteArray(len(list))
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		c.w.WriteArray(6)
		c.w.WriteInt64(e.id)
		c.w.WriteInt64(e.unix)
		c.w.WriteInt64(e.us)
		c.w.WriteArray(len(e.args))
		for _, a := range e.args {
			c.w.WriteBulkString(a)
		}
		c.w.WriteBulkString(e.addr)
		c.w.WriteBulkString(e.name)
	}
}

// cmdSlowlogLen serves SLOWLOG LEN.
func cmdSlowlogLen(s *Server, c *client, _ [][]byte, _ int64) {
	s.slow.mu.Lock()
	n := len(s.slow.entries)
	s.slow.mu.Unlock()
	c.w.WriteInt64(int64(n))
}

// cmdSlowlogReset serves SLOWLOG RESET.
func cmdSlowlogReset(s *Server, c *client, _ [][]byte, _ int64) {
	s.slow.mu.Lock()
	s.slow.entries = nil
	s.slow.mu.Unlock()
	c.w.WriteString("OK")
}
