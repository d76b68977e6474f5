package acl

import (
	"sync"
	"time"
)

// Why a command was refused, in ACL LOG's words.
const (
	ReasonCommand = "command"
	ReasonKey     = "key"
	ReasonChannel = "channel"
	ReasonAuth    = "auth"
)

// Where the refused command was: at top level or queued in MULTI.
const (
	ContextToplevel = "toplevel"
	ContextMulti    = "multi"
)

// LogEntry is one line of ACL LOG, with Redis 7.2's fields.
type LogEntry struct {
	Count      int64
	Reason     string
	Context    string
	Object     string // the command, key or channel refused; AUTH for a failed login
	Username   string
	ClientInfo string // CLIENT INFO of the last client refused so
	ID         int64
	Created    time.Time
	Updated    time.Time
}

// groupWithin is how close in time two alike refusals must be to share an entry.
const groupWithin = 60 * time.Second

// Log is the ACL LOG: newest first, alike refusals counted in one entry as Redis
// groups them (same reason, context, object and user, within a minute, among the
// ten newest), at most max entries.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry
	nextID  int64
	max     int
}

// NewLog keeps up to max entries (Redis's acllog-max-len, 128 by default).
func NewLog(max int) *Log { return &Log{max: max} }

// Add records a refusal at now.
func (l *Log) Add(e LogEntry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.entries[:min(10, len(l.entries))] {
		d := now.Sub(old.Updated)
		if old.Reason == e.Reason && old.Context == e.Context && old.Object == e.Object &&
			old.Username == e.Username && d <= groupWithin && d >= -groupWithin {
			old.Count++
			old.ClientInfo, old.Updated = e.ClientInfo, now
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	e.Count, e.ID, e.Created, e.Updated = 1, l.nextID, now, now
	l.nextID++
	l.entries = append([]*LogEntry{&e}, l.entries...)
	if len(l.entries) > l.max {
		l.entries = l.entries[:l.max]
	}
}

// Entries are up to n of the newest entries, copied.
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(0, min(n, len(l.entries)))
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// SetMax keeps up to max entries from now on, dropping the oldest beyond
// (CONFIG SET acllog-max-len).
func (l *Log) SetMax(max int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max = max
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

// Reset empties the log (ACL LOG RESET).
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}
