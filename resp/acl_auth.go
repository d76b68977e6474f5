package resp

import (
	"net"

	"github.com/rlserver/rlserver/acl"
)

// Replies of authentication, as Redis 7.0 words them.
const (
	errNoAuth      = "NOAUTH Authentication required."
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the " +
		"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP " +
		"protocol version at the same time"
)

// login authenticates c as user with pass, as Redis's ACLAuthenticateUser: the
// user must exist and be on, and pass be one of its passwords (or it has nopass).
// A failure is recorded in ACL LOG, the command (AUTH or HELLO, as typed) its
// object, and leaves the connection as it was.
func (s *Server) login(c *client, cmd, user, pass []byte) bool {
	u := s.acl.Authenticate(string(user), string(pass))
	if u == nil {
		s.aclDeniedAs(c, acl.ReasonAuth, string(cmd), string(user))
		return false
	}
	c.user.Store(u)
	c.authed = true
	return true
}

// authRequired says whether c must authenticate before its next command: the
// default user has a password or is off (requirepass, a user line, the aclfile or
// ACL SETUSER) and c has not logged in. As Redis asks it of each command, clearing
// the password lets in connections made while it was set.
func (s *Server) authRequired(c *client) bool {
	return !c.authed && s.acl.AuthRequired()
}

// cmdAuth serves AUTH [username] password. A failed AUTH leaves a connection that
// was authenticated authenticated, as in Redis.
func cmdAuth(s *Server, c *client, args [][]byte, _ int64) {
	user, pass := []byte("default"), args[len(args)-1]
	switch len(args) {
	case 2:
		if !s.acl.DefaultNeedsPassword() {
			c.writeError(errNoPassword)
			return
		}
	case 3:
		user = args[1]
	default:
		c.writeError(errSyntax)
		return
	}
	if !s.login(c, args[0], user, pass) {
		c.writeError(errWrongPass)
		return
	}
	c.w.WriteString("OK")
}

// warnIfExposed logs a warning when the server listens beyond loopback without a
// password: anyone who can reach the port could then drain or reset any limit.
func (s *Server) warnIfExposed(addr net.Addr) {
	if s.acl.DefaultNeedsPassword() {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		s.log.Warn("listening on a non-loopback address without a password: anyone who can reach it "+
			"can use and reset every limit; set -requirepass, or listen on 127.0.0.1",
			"addr", addr.String())
	}
}
