package resp

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// monitorMaxQueue is how far a MONITOR connection may fall behind before it is
// closed: the lines wait in memory, so a watcher that stops reading must not hold
// them without bound (Redis closes it by client-output-buffer-limit).
const monitorMaxQueue = 32 << 20

// monitors are the connections that sent MONITOR. Commands read only the count when
// nobody watches; when some do, each command's line is queued for every watcher and
// written by the watcher's own goroutine, so a slow one holds up no command.
type monitors struct {
	n   atomic.Int32
	mu  sync.Mutex
	set map[*watcher]struct{}
	// maxQueue is monitorMaxQueue unless a test lowers it.
	maxQueue int
}

// watcher is one MONITOR connection's queue.
type watcher struct {
	sub  *subscriber
	mu   sync.Mutex
	buf  []byte
	wake chan struct{} // a line is queued
	done chan struct{} // closed when the connection ends
}

// cmdMonitor serves MONITOR: the connection leaves redcon's loop, as a subscriber's
// does, and from now on receives every command the server runs.
func cmdMonitor(s *Server, c *client, _ [][]byte, _ int64) {
	if c.inExec {
		// Queued in MULTI, as Redis queues it, and refused when EXEC runs it.
		c.writeError("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	sub, first := c.sub, c.sub == nil
	if first {
		sub = s.detach(c)
	}
	c.w.WriteString("OK")
	// The watcher is registered before the OK is sent (as Redis adds the client to
	// its monitors before replying): a command run as soon as the OK arrives is shown.
	if sub.watch == nil {
		w := &watcher{sub: sub, wake: make(chan struct{}, 1), done: make(chan struct{})}
		sub.watch = w
		s.mon.mu.Lock()
		if s.mon.set == nil {
			s.mon.set = map[*watcher]struct{}{}
		}
		s.mon.set[w] = struct{}{}
		s.mon.n.Add(1)
		s.mon.mu.Unlock()
		s.ps.wg.Add(1)
		go s.writeMonitor(w)
	}
	if first {
		// serveDetached flushes a detached connection's replies, holding its lock;
		// this one is not there yet.
		sub.wmu.Lock()
		s.handOff(sub)
	}
}

// unwatch stops feeding w; its connection has ended.
func (s *Server) unwatch(w *watcher) {
	s.mon.mu.Lock()
	delete(s.mon.set, w)
	s.mon.n.Add(-1)
	s.mon.mu.Unlock()
	close(w.done)
}

// writeMonitor writes w's queued lines until its connection ends.
func (s *Server) writeMonitor(w *watcher) {
	defer s.ps.wg.Done()
	var spare []byte
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		out := w.buf
		w.buf = spare[:0]
		w.mu.Unlock()
		w.sub.wmu.Lock()
		w.sub.dc.WriteRaw(out)
		err := w.sub.flush()
		w.sub.wmu.Unlock()
		if err != nil {
			w.sub.dc.NetConn().Close() // its reader sees it and cleans up
			return
		}
		spare = out
	}
}

// feedMonitors queues c's command for every watcher, in Redis's MONITOR format:
// +<unix s>.<µs> [0 <addr>] "name" "arg" ... Administrative commands are not shown.
func (s *Server) feedMonitors(c *client, cm *command, args [][]byte) {
	if slices.Contains(cm.flags, "admin") {
		return
	}
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000)+1_000_000, 10)
	line = append(line, us[1:]...) // six digits, leading zeros kept
	line = append(line, " [0 "...)
	line = append(line, c.addr...)
	line = append(line, ']')
	for _, a := range redact(cm, args) {
		line = append(line, ' ')
		line = appendRepr(line, a)
	}
	line = append(line, '\r', '\n')
	s.mon.mu.Lock()
	defer s.mon.mu.Unlock()
	for w := range s.mon.set {
		w.mu.Lock()
		full := len(w.buf)+len(line) > cmp.Or(s.mon.maxQueue, monitorMaxQueue)
		if !full {
			w.buf = append(w.buf, line...)
		}
		w.mu.Unlock()
		if full {
			w.sub.dc.NetConn().Close()
			continue
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// appendRepr quotes a as Redis's sdscatrepr: backslash escapes, \xHH for bytes
// that do not print.
func appendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch < ' ' || ch > '~' {
				b = append(b, '\\', 'x', "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			} else {
				b = append(b, ch)
			}
		}
	}
	return append(b, '"')
}
