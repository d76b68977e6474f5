package resp

import (
	"errors"
	"net"
	"time"
)

// Defaults and fixed bounds of the connections and their requests.
const (
	// DefaultMaxClients is the connection limit unless Config says otherwise, as Redis's maxclients.
	DefaultMaxClients = 10_000
	// DefaultProtoMaxBulkLen is the largest bulk string a request may announce unless
	// Config says otherwise: 512 MB, as Redis's proto-max-bulk-len.
	DefaultProtoMaxBulkLen = 512 << 20

	// maxMultibulkLen is the most arguments a request may announce. Redis allows
	// INT_MAX; no rlserver command takes more than a few dozen, and a cap of 2^20
	// keeps a request's argument slices (24 B each) under 25 MB.
	maxMultibulkLen = 1 << 20
	// maxInlineLen is the longest inline command, or length line, that may wait for
	// its newline: Redis's PROTO_INLINE_MAX_SIZE (64 KB).
	maxInlineLen = 64 << 10
	// unauthMaxArgs and unauthMaxBulk bound a request before the connection has
	// authenticated, when a password is required: Redis's limits, so that whoever can
	// reach the port cannot make the server parse 2^20 arguments or hold
	// proto-max-bulk-len bytes per argument without the password.
	unauthMaxArgs = 10
	unauthMaxBulk = 16 << 10
	// rejectTimeout bounds how long a refused connection may take to receive its
	// error (a TLS handshake included) before it is closed anyway.
	rejectTimeout = time.Second
)

// Errors of the request bounds, answered as Redis answers them. Each closes the
// connection that broke the bound, and only it.
var (
	errMaxClients       = errors.New("ERR max number of clients reached")
	errBulkLength       = errors.New("ERR Protocol error: invalid bulk length")
	errMultibulkLength  = errors.New("ERR Protocol error: invalid multibulk length")
	errInlineTooBig     = errors.New("ERR Protocol error: too big inline request")
	errMultibulkTooLong = errors.New("ERR Protocol error: too big mbulk count string")
	errBulkTooLong      = errors.New("ERR Protocol error: too big bulk count string")
	errUnauthMultibulk  = errors.New("ERR Protocol error: unauthenticated multibulk length")
	errUnauthBulk       = errors.New("ERR Protocol error: unauthenticated bulk length")
)

// connListener enforces maxclients at accept and wraps each connection in a
// boundedConn. It sits under redcon, so every listener (plain and TLS) shares it.
type connListener struct {
	net.Listener
	s *Server
}

// Accept returns the next connection within maxclients. One beyond the limit gets
// Redis's error and is closed by a goroutine of its own, so that a slow client (or
// its TLS handshake) cannot hold up the accept loop.
//
// Accept errors other than a closed listener (EMFILE when out of file descriptors)
// are retried here after a pause, 5 ms doubling to 1 s as net/http does: redcon
// v1.6.4 retries them at once, which spins a core until a descriptor frees.
func (l *connListener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			l.s.log.Warn("accept failed, retrying", "err", err, "in", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		// The slot is reserved here and given back by closeConn, so that two
		// listeners accepting at once cannot both take the last one.
		if l.s.connected.Add(1) > l.s.tun.Load().maxClients {
			l.s.connected.Add(-1)
			l.s.rejected.Add(1)
			go reject(conn, errMaxClients)
			continue
		}
		return &boundedConn{Conn: conn, s: l.s, maxBulk: l.s.cfg.ProtoMaxBulkLen}, nil
	}
}

// reject writes err as an error reply and closes conn.
func reject(conn net.Conn, err error) {
	conn.SetDeadline(time.Now().Add(rejectTimeout))
	conn.Write([]byte("-" + err.Error() + "\r\n"))
	conn.Close()
}

// boundedConn checks the lengths a request announces before redcon reads them.
//
// redcon v1.6.4 has no bounds: it keeps reading until a command is complete, so a
// client announcing "$9999999999" (or never sending a newline) makes it buffer
// without end. It does not allocate the announced size up front (its buffer grows
// by doubling as data arrives), so checking the announcements in the byte stream
// on the way in is enough, without forking redcon. The scan reads only the length
// lines and skips bulk payloads by count, so it costs O(1) per argument. It also
// makes redcon parse as Redis does (conn_scan.go): it blanks the requests Redis skips,
// and finds the length lines Redis refuses.
type boundedConn struct {
	net.Conn
	s       *Server
	maxBulk int64
	scan    requestScan
	broken  error   // a bound broken in the bytes of the last Read, reported by the next
	client  *client // set by accept: whether it has authenticated
	// held are bytes read past an unauthenticated bound, kept until the commands
	// before it have run: one of them may be the AUTH that lifts it.
	held    []byte
	heldErr error
	// carry is the start of a count line ("*-1") that the next Read completes: it
	// may be one to skip, which is blanked whole, before redcon sees any of it.
	carry []byte
	// in is set when the connection subscribed: its Reads mark when all it received
	// is served (conn_input.go); read counts the socket's bytes until then.
	in   *input
	read uint64
	free int // room left in redcon's read buffer after the last Read, for CLIENT INFO's qbuf-free
}

// Write holds the replies of a batch, under appendfsync always, until the writes the
// connection made in it are on disk (client.aofMark): redcon writes a batch's
// replies at once, after running its commands. The connections that reply at once
// share one fsync. A connection that wrote nothing replies at once, on a full disk
// too.
func (c *boundedConn) Write(p []byte) (int, error) {
	if c.client != nil {
		if mark := c.client.aofMark.Swap(0); mark > 0 {
			if l := c.s.core.AOF(); l != nil {
				l.WaitDurable(mark)
			}
		}
	}
	return c.Conn.Write(p)
}

// Read passes on the bytes up to a broken bound; the bad request is then incomplete
// for redcon, which runs the complete commands before it and reads again. That Read
// answers the error and fails, and redcon closes the connection, as Redis does.
func (c *boundedConn) Read(p []byte) (int, error) {
	if c.broken != nil {
		return 0, c.fail()
	}
	authed := c.client != nil && !c.s.authRequired(c.client)
	for {
		var n int
		var err error
		if len(c.held) > 0 {
			if !authed {
				c.broken = c.heldErr
				return 0, c.fail()
			}
			n = copy(p, c.held)
			c.held = c.held[n:]
		} else {
			n = copy(p, c.carry)
			c.carry = c.carry[:0]
			var m int
			if c.in != nil {
				c.in.enter()
			}
			m, err = c.Conn.Read(p[n:])
			c.free = len(p) - n - m
			if c.in != nil {
				c.in.leave(m)
			} else {
				c.read += uint64(m)
			}
			n += m
		}
		ok, bad := c.scan.feed(p[:n], c.maxBulk, authed)
		switch {
		case bad == nil && ok < n:
			// The scan stops before a count line still to complete (a few bytes).
			rest := p[ok:n]
			if len(c.held) > 0 {
				c.held = append(append([]byte(nil), rest...), c.held...)
			} else {
				c.carry = append(c.carry, rest...)
			}
			if ok == 0 && err == nil {
				continue // redcon wants bytes: read on
			}
			return ok, err
		case bad == nil:
			return n, err
		case ok > 0 && (bad == errUnauthMultibulk || bad == errUnauthBulk):
			c.held, c.heldErr = append([]byte(nil), p[ok:n]...), bad
			return ok, nil
		}
		c.broken = bad
		if ok > 0 {
			return ok, nil
		}
		return 0, c.fail()
	}
}

// fail answers the broken bound. Reads and writes of a connection both run in its
// redcon goroutine, after redcon flushed its replies, so the line goes out whole
// and in order.
func (c *boundedConn) fail() error {
	c.Conn.SetWriteDeadline(time.Now().Add(rejectTimeout))
	c.Conn.Write([]byte("-" + c.broken.Error() + "\r\n"))
	return c.broken
}
