package resp

import (
	"bytes"
	"fmt"

	"github.com/rlserver/rlserver/internal/rlcmd"
)

const (
	errNoPassword = "ERR AUTH <password> called without any password configured for the default user. " +
		"Are you sure your configuration is correct?"
	errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	errBadName   = "ERR Client names cannot contain spaces, newlines or special characters."
)

func cmdPing(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) <= 2 && s.subscribedPing(c, args) {
		return
	}
	switch len(args) {
	case 1:
		c.w.WriteString("PONG")
	case 2:
		c.w.WriteBulk(args[1])
	default:
		c.writeError("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(_ *Server, c *client, args [][]byte, _ int64) {
	c.w.WriteBulk(args[1])
}

// cmdQuit answers OK and closes the connection. Commands pipelined after QUIT are
// dropped, as Redis drops them.
func cmdQuit(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteString("OK")
	c.conn.ReadPipeline()
	c.conn.Close()
}

// cmdReset serves RESET as Redis's clearClientConnectionState: the transaction is
// discarded, every subscription dropped without a confirmation, MONITOR and CLIENT
// TRACKING end, CLIENT REPLY is ON, the protocol RESP2, the user default
// (authenticated only if default needs no password) and the name cleared; the id,
// address and library name stay. A subscribed connection stays in its goroutine,
// which serves it as any other from then on.
func cmdReset(s *Server, c *client, _ [][]byte, _ int64) {
	c.inMulti, c.multiDirty, c.multi = false, false, nil
	c.multiLen.Store(-1)
	if sub := c.sub; sub != nil {
		s.ps.mu.Lock()
		for ch := range sub.channels {
			s.unsubscribeLocked(s.ps.channels, ch, sub)
		}
		for p := range sub.patterns {
			s.unsubscribeLocked(s.ps.patterns, p, sub)
		}
		clear(sub.channels)
		clear(sub.patterns)
		s.ps.mu.Unlock()
		if sub.watch != nil {
			s.unwatch(sub.watch)
			sub.watch = nil
		}
		s.untrack(sub)
	}
	if c.trackingOn.Swap(false) {
		s.trackers.Add(-1)
	}
	c.trackNoLoop, c.trackOptIn, c.trackOptOut, c.caching = false, false, false, false
	c.noEvict.Store(false)
	// Redis clears OFF and a SKIP still to come; a SKIP under way drops this reply.
	c.replyOff, c.replySkip = false, false
	c.silent = c.skipping
	c.proto.Store(2)
	c.user.Store(s.acl.Default())
	c.authed = !s.acl.AuthRequired()
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.w.WriteString("RESET")
}

// cmdHello serves HELLO [protover [AUTH username password] [SETNAME clientname]]:
// switch protocol, then answer the server's details as a map in the new protocol.
// Every option is parsed before anything changes, and the protocol and name change
// only if all checks pass; a right AUTH holds even when SETNAME is then refused.
func cmdHello(s *Server, c *client, args [][]byte, _ int64) {
	proto := c.proto.Load()
	var name []byte
	setName := false
	if len(args) > 1 {
		v, ok := rlcmd.ParseInt(args[1])
		if !ok {
			c.writeError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.writeError("NOPROTO unsupported protocol version")
			return
		}
		proto = int32(v)
	}
	var user, pass []byte
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case bytes.EqualFold(args[i], []byte("auth")) && more >= 2:
			user, pass = args[i+1], args[i+2]
			i += 2
		case bytes.EqualFold(args[i], []byte("setname")) && more >= 1:
			name, setName = args[i+1], true
			i++
		default:
			c.writeError(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", args[i]))
			return
		}
	}
	if user != nil {
		if !s.login(c, args[0], user, pass) {
			c.writeError(errWrongPass)
			return
		}
	}
	if !c.authed { // as Redis: its flag, though the password was cleared since
		c.writeError(errHelloNoAuth)
		return
	}
	if setName {
		if !validName(name) {
			c.writeError(errBadName)
			return
		}
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.proto.Store(proto)
	c.writeMap(7)
	c.w.WriteBulkString("server")
	c.w.WriteBulkString("redis")
	c.w.WriteBulkString("version")
	c.w.WriteBulkString(redisVersion)
	c.w.WriteBulkString("proto")
	c.w.WriteInt64(int64(proto))
	c.w.WriteBulkString("id")
	c.w.WriteInt64(c.id)
	c.w.WriteBulkString("mode")
	c.w.WriteBulkString(s.redisMode())
	c.w.WriteBulkString("role")
	if s.repl.ReadOnly() {
		c.w.WriteBulkString("replica") // HELLO's word; INFO and ROLE say "slave"
	} else {
		c.w.WriteBulkString("master")
	}
	c.w.WriteBulkString("modules")
	c.w.WriteArray(0)
}

func cmdSelect(_ *Server, c *client, args [][]byte, _ int64) {
	db, ok := rlcmd.ParseInt(args[1])
	switch {
	case !ok:
		c.writeError(errNotInteger)
	case db != 0:
		c.writeError("ERR DB index is out of range")
	default:
		c.w.WriteString("OK")
	}
}

// validName reports whether a client name or library attribute is printable ASCII
// without spaces, as Redis requires, so that CLIENT LIST stays parseable.
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientSetName(_ *Server, c *client, args [][]byte, _ int64) {
	if !validName(args[2]) {
		c.writeError(errBadName)
		return
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.w.WriteString("OK")
}

func cmdClientGetName(_ *Server, c *client, _ [][]byte, _ int64) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.writeNull()
		return
	}
	c.w.WriteBulkString(name)
}

func cmdClientID(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteInt64(c.id)
}

// cmdClientSetInfo serves CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2), which
// go-redis sends on every new connection.
func cmdClientSetInfo(_ *Server, c *client, args [][]byte, _ int64) {
	attr, val := args[2], args[3]
	var dst *string
	switch {
	case bytes.EqualFold(attr, []byte("lib-name")):
		dst = &c.libName
	case bytes.EqualFold(attr, []byte("lib-ver")):
		dst = &c.libVer
	default:
		c.writeError(fmt.Sprintf("ERR Unrecognized option '%s'", attr))
		return
	}
	if !validName(val) {
		c.writeError(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr))
		return
	}
	c.mu.Lock()
	*dst = string(val)
	c.mu.Unlock()
	c.w.WriteString("OK")
}
