package resp

import (
	"bytes"

	"cmp"
	"fmt"
	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"net"
	"slices"
	"strings"
	"time"
)

// clientView is one connection as CLIENT LIST and CLIENT KILL see it.
type clientView struct {
	c         *client
	sub, psub int         // its subscriptions
	detached  *subscriber // set when it left redcon's loop (pubsub.go)
}

// pubsub reports whether the connection is of CLIENT LIST's type pubsub.
func (v clientView) pubsub() bool { return v.sub+v.psub > 0 }

// close closes the connection's socket: its goroutine then ends it.
func (v clientView) close() {
	if v.detached != nil {
		v.detached.dc.NetConn().Close()
		return
	}
	v.c.conn.NetConn().Close()
}

// clientViews lists every client connection, in the order of their ids: those in
// redcon's loop, and those detached for Pub/Sub.
func (s *Server) clientViews() []clientView {
	seen := map[*client]int{}
	var views []clientView
	s.mu.Lock()
	for cl := range s.clients {
		seen[cl] = len(views)
		views = append(views, clientView{c: cl})
	}
	s.mu.Unlock()
	s.ps.mu.Lock()
	for sub := range s.ps.subs {
		v := clientView{c: sub.c, sub: len(sub.channels), psub: len(sub.patterns), detached: sub}
		if i, ok := seen[sub.c]; ok {
			views[i] = v // detaching just now: not yet unregistered by closeConn
			continue
		}
		views = append(views, v)
	}
	s.ps.mu.Unlock()
	slices.SortFunc(views, func(a, b clientView) int { return cmp.Compare(a.c.id, b.c.id) })
	return views
}

// ownView is the caller's own connection as CLIENT INFO shows it.
func (s *Server) ownView(c *client) clientView {
	v := clientView{c: c, detached: c.sub}
	if c.sub != nil {
		s.ps.mu.Lock()
		v.sub, v.psub = len(c.sub.channels), len(c.sub.patterns)
		s.ps.mu.Unlock()
	}
	return v
}

// connFD is the socket descriptor under conn (TLS and boundedConn unwrapped), or -1.
func connFD(conn net.Conn) int {
	fd := -1
	if raw := socketOf(conn); raw != nil {
		raw.Control(func(d uintptr) { fd = int(d) })
	}
	return fd
}

func cmdClientInfo(s *Server, c *client, args [][]byte, _ int64) {
	v := s.ownView(c)
	c.w.WriteBulkString(c.info(time.Now(), v.sub, v.psub, c.ownBuffers(args)))
}

// cmdClientList serves CLIENT LIST [TYPE type] [ID id [id ...]].
func cmdClientList(s *Server, c *client, args [][]byte, _ int64) {
	var ids []int64
	typ := ""
	for i := 2; i < len(args); i++ {
		switch {
		case bytes.EqualFold(args[i], []byte("type")) && i+1 < len(args):
			i++
			switch typ = strings.ToLower(string(args[i])); typ {
			case "normal", "pubsub", "master", "replica":
			case "slave":
				typ = "replica"
			default:
				c.writeError(fmt.Sprintf("ERR Unknown client type '%s'", args[i]))
				return
			}
		case bytes.EqualFold(args[i], []byte("id")) && i+1 < len(args):
			for i++; i < len(args); i++ {
				id, ok := rlcmd.ParseInt(args[i])
				if !ok || id < 1 {
					c.writeError("ERR Invalid client ID")
					return
				}
				ids = append(ids, id)
			}
		default:
			c.writeError(errSyntax)
			return
		}
	}
	var b strings.Builder
	now := time.Now()
	for _, v := range s.clientViews() {
		var bufs *buffers
		if v.c == c {
			v, bufs = s.ownView(c), c.ownBuffers(args)
		}
		if typeMatches(typ, v) && (ids == nil || slices.Contains(ids, v.c.id)) {
			b.WriteString(v.c.info(now, v.sub, v.psub, bufs))
		}
	}
	c.w.WriteBulkString(b.String())
}

// typeMatches reports whether a client connection is of the CLIENT type typ ("" any).
// Replication links are not client connections here: master and replica match none.
func typeMatches(typ string, v clientView) bool {
	switch typ {
	case "":
		return true
	case "normal":
		return !v.pubsub()
	case "pubsub":
		return v.pubsub()
	}
	return false
}

// killFilter is what CLIENT KILL closes.
type killFilter struct {
	typ, addr, laddr string
	id               int64
	skipMe           bool
	user             *acl.User // USER: connections logged in as it; nil: any
	maxAge           int64     // MAXAGE: connections at least that many seconds old; 0: any
}

// cmdClientKill serves CLIENT KILL addr (the old form: OK, or an error if no such
// connection; it may be the caller's own) and CLIENT KILL filter value ... with TYPE
// normal|pubsub|replica|slave|master, ID, ADDR, LADDR, USER, MAXAGE (Redis 7.4's)
// and SKIPME yes|no: the
// number of connections closed. The caller's own connection is closed after its reply.
func cmdClientKill(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) == 3 {
		n, self := s.killClients(c, killFilter{addr: string(args[2])})
		if n == 0 {
			c.writeError("ERR No such client")
			return
		}
		c.w.WriteString("OK")
		closeAfterReply(c, self)
		return
	}
	f := killFilter{skipMe: true}
	if len(args)%2 != 0 {
		c.writeError(errSyntax)
		return
	}
	for i := 2; i < len(args); i += 2 {
		val := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "type":
			switch f.typ = strings.ToLower(val); f.typ {
			case "normal", "pubsub", "master", "replica":
			case "slave":
				f.typ = "replica"
			default:
				c.writeError(fmt.Sprintf("ERR Unknown client type '%s'", val))
				return
			}
		case "id":
			n, ok := rlcmd.ParseInt(args[i+1])
			if !ok || n < 1 {
				c.writeError("ERR client-id should be greater than 0")
				return
			}
			f.id = n
		case "addr":
			f.addr = val
		case "laddr":
			f.laddr = val
		case "user":
			if f.user = s.acl.User(val); f.user == nil {
				c.writeError(fmt.Sprintf("ERR No such user '%s'", val))
				return
			}
		case "maxage":
			n, ok := rlcmd.ParseInt(args[i+1])
			if !ok {
				c.writeError("ERR maxage is not an integer or out of range")
				return
			}
			if n <= 0 {
				c.writeError("ERR maxage should be greater than 0")
				return
			}
			f.maxAge = n
		case "skipme":
			switch strings.ToLower(val) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				c.writeError(errSyntax)
				return
			}
		default:
			c.writeError(errSyntax)
			return
		}
	}
	n, self := s.killClients(c, f)
	c.w.WriteInt64(int64(n))
	closeAfterReply(c, self)
}

// closeAfterReply closes the caller's connection, its reply written, if it killed
// itself; the commands pipelined after are dropped, as after QUIT.
func closeAfterReply(c *client, self bool) {
	if self {
		c.conn.ReadPipeline()
		c.conn.Close()
	}
}

// killClients closes the connections f matches, but the caller c's own, which it
// only reports (self) for the caller to close after its reply, and returns how many.
func (s *Server) killClients(c *client, f killFilter) (n int, self bool) {
	if f.typ != "master" && f.typ != "replica" {
		now := time.Now()
		for _, v := range s.clientViews() {
			if !typeMatches(f.typ, v) || f.id != 0 && v.c.id != f.id || f.addr != "" && v.c.addr != f.addr ||
				f.laddr != "" && v.c.laddr != f.laddr || v.c == c && f.skipMe ||
				f.user != nil && v.c.user.Load() != f.user || f.maxAge != 0 && v.c.age(now) < f.maxAge {
				continue
			}
			if v.c == c {
				n++
				self = true
				continue
			}
			if !v.c.killed.CompareAndSwap(false, true) {
				continue // killed already, its goroutine not yet done closing it
			}
			n++
			v.close()
		}
		return n, self
	}
	if f.id != 0 || f.addr != "" || f.laddr != "" {
		return 0, false
	}
	if f.typ == "replica" {
		return s.repl.DropReplicas(), false
	}
	if s.repl.CloseLink() {
		n++
	}
	return n, false
}

// cmdClientNoEvict serves CLIENT NO-EVICT ON|OFF: CLIENT LIST's flag e.
func cmdClientNoEvict(_ *Server, c *client, args [][]byte, _ int64) {
	switch strings.ToLower(string(args[2])) {
	case "on":
		c.noEvict.Store(true)
	case "off":
		c.noEvict.Store(false)
	default:
		c.writeError(errSyntax)
		return
	}
	c.w.WriteString("OK")
}

// cmdClientReply serves CLIENT REPLY ON|OFF|SKIP: OFF drops the replies of the
// commands that follow until ON, SKIP the next one's; only ON is answered.
func cmdClientReply(_ *Server, c *client, args [][]byte, _ int64) {
	switch strings.ToLower(string(args[2])) {
	case "on":
		c.replyOff, c.replySkip, c.skipping = false, false, false
		c.silent = false // as Redis: ON's own OK is sent
		c.w.WriteString("OK")
	case "off":
		c.replyOff = true
	case "skip":
		if !c.replyOff {
			c.replySkip = true
		}
	default:
		c.writeError(errSyntax)
	}
}
