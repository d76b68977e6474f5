package resp

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
)

// Replies of authentication, as Redis 7.0 words them.
const (
	errNoAuth      = "NOAUTH Authentication required."
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the " +
		"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP " +
		"protocol version at the same time"
)

// checkAuth answers whether user/pass log in as Redis's default user, the only
// one: with Config.RequirePass, user "default" and that password; without it, the
// default user has nopass and any password is accepted.
//
// The password is compared by its SHA-256, in constant time, as Redis compares
// them: neither the time taken nor its length tells how much of a guess was right.
func (s *Server) checkAuth(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	t := s.tun.Load()
	if t.requirePass == "" {
		return true
	}
	sum := sha256.Sum256(pass)
	return subtle.ConstantTimeCompare(sum[:], t.passHash[:]) == 1
}

// authRequired says whether c must authenticate before its next command: a password
// is set now and c has not logged in. As Redis asks it of each command, clearing the
// password lets in connections made while it was set.
func (s *Server) authRequired(c *client) bool {
	return !c.authed && s.tun.Load().requirePass != ""
}

// cmdAuth serves AUTH [username] password. A failed AUTH leaves a connection that
// was authenticated authenticated, as in Redis.
func cmdAuth(s *Server, c *client, args [][]byte, _ int64) {
	user, pass := []byte("default"), args[len(args)-1]
	switch len(args) {
	case 2:
		if s.tun.Load().requirePass == "" {
			c.writeError(errNoPassword)
			return
		}
	case 3:
		user = args[1]
	default:
		c.writeError(errSyntax)
		return
	}
	if !s.checkAuth(user, pass) {
		c.writeError(errWrongPass)
		return
	}
	c.authed = true
	c.w.WriteString("OK")
}

// warnIfExposed logs a warning when the server listens beyond loopback without a
// password: anyone who can reach the port could then drain or reset any limit.
func (s *Server) warnIfExposed(addr net.Addr) {
	if s.tun.Load().requirePass != "" {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		s.log.Warn("listening on a non-loopback address without a password: anyone who can reach it "+
			"can use and reset every limit; set -requirepass, or listen on 127.0.0.1",
			"addr", addr.String())
	}
}
