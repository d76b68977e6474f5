package resp

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/tidwall/redcon"
)

// client is the state of one connection. Its own goroutine runs its commands;
// CLIENT LIST and INFO read it from others, hence the atomics and the mutex.
type client struct {
	// aofMark is the append-only log's offset its replies wait for (Write), set
	// after a command that wrote under appendfsync always; 0: none.
	aofMark atomic.Int64
	id      int64
	conn    redcon.Conn
	w       *redcon.Writer // conn's reply buffer, flushed by redcon after each batch
	addr    string
	laddr   string
	created time.Time
	scratch []byte // reused for reply headers

	// The time of the pipeline being run (see serveCommand), valid while batchOpen:
	// the server clock's, the real one when it began, and how long after that the
	// last command ended.
	batchNow   int64
	batchStart time.Time
	batchMark  time.Duration
	batchOpen  bool
	authed     bool // by AUTH or HELLO AUTH, or no password was required when it connected
	// CLIENT REPLY OFF: replies are dropped; SKIP: the next command's is (replySkip
	// until it starts, skipping while it runs, so that CLIENT REPLY ON can end it).
	replyOff, replySkip, skipping bool
	// silent while a command runs silenced: what it writes to w after silentFrom
	// is cut, but pushes, which Redis sends despite CLIENT REPLY (its
	// CLIENT_PUSHING), move silentFrom past themselves.
	silent     bool
	silentFrom int
	// deferred are pushes to the connection itself while a command runs (PUBLISH to a
	// channel it subscribed, a key it tracks written inside EXEC), sent once the
	// command's whole reply is, as Redis 7.2's pending_push_messages.
	deferred    []byte
	trackNoLoop bool // CLIENT TRACKING ON NOLOOP: not its own writes' invalidations
	// CLIENT TRACKING ON OPTIN or OPTOUT, and CLIENT CACHING given for the command or
	// transaction that follows (conn_tracking.go).
	trackOptIn, trackOptOut, caching, cachingNext bool
	asking                                        bool  // ASKING: the next command may use a slot being moved here
	verdict                                       uint8 // the limiters' answers while a traced command runs (decided)

	// MULTI (multi.go): the commands queued, and whether one was refused.
	inMulti, multiDirty bool
	multi               []queued
	// inExec is set while EXEC runs the queue; a SUBSCRIBE among it leaves its
	// detached connection in execSub, to be served once EXEC has answered.
	inExec  bool
	execSub *subscriber
	// sub is set once the connection subscribed and left redcon's loop (pubsub.go).
	sub *subscriber

	qbuf       int          // the bytes of the command under way, for its own CLIENT INFO's qbuf
	fd         int          // the socket's descriptor, for CLIENT LIST; -1 if unknown
	active     atomic.Int64 // when its last batch of commands began, Unix ns (CLIENT LIST's idle)
	multiLen   atomic.Int32 // commands queued in MULTI, -1 outside (CLIENT LIST's multi)
	trackingOn atomic.Bool  // CLIENT TRACKING ON (conn_tracking.go)
	noEvict    atomic.Bool  // CLIENT NO-EVICT ON: CLIENT LIST's flag e
	killed     atomic.Bool  // closed by CLIENT KILL: a later KILL does not count it again
	proto      atomic.Int32 // 2 or 3, set by HELLO
	errStats   *errorStats  // the server's, for INFO errorstats
	commands   atomic.Uint64
	errors     atomic.Uint64
	last       atomic.Pointer[command]
	user       atomic.Pointer[acl.User] // the default user until AUTH or HELLO AUTH

	mu      sync.Mutex // guards the fields below
	name    string
	libName string
	libVer  string
}

func (c *client) resp3() bool { return c.proto.Load() == 3 }

// unsilence ends a silenced command's run: its reply since silentFrom is cut.
func (c *client) unsilence() {
	if c.silent {
		c.w.SetBuffer(c.w.Buffer()[:c.silentFrom])
	}
	c.silent, c.skipping = false, false
}

// deferPush writes a push to c itself with write, to be sent after the reply of the
// command under way (writeDeferred).
func (c *client) deferPush(write func()) {
	silent := c.silent
	c.silent = false // the push is kept whole, not cut as a silenced reply
	start := len(c.w.Buffer())
	write()
	b := c.w.Buffer()
	c.deferred = append(c.deferred, b[start:]...)
	c.w.SetBuffer(b[:start])
	c.silent = silent
}

// writeDeferred sends the pushes deferPush kept, after a command's reply.
func (c *client) writeDeferred() {
	if c.silent {
		c.w.SetBuffer(c.w.Buffer()[:c.silentFrom])
	}
	c.w.WriteRaw(c.deferred)
	c.deferred = c.deferred[:0]
	c.pushed()
}

// writeError sends an error line and counts it for INFO.
func (c *client) writeError(msg string) {
	c.errors.Add(1)
	if c.errStats != nil {
		c.errStats.count(msg)
	}
	c.w.WriteError(msg)
}

// writeHeader writes a RESP aggregate header such as "%2\r\n".
func (c *client) writeHeader(kind byte, n int) {
	b := append(c.scratch[:0], kind)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	c.w.WriteRaw(b)
	c.scratch = b
}

// writeMap starts a map of n pairs: a RESP3 map, or in RESP2 a flat array of 2n
// elements, as Redis does.
func (c *client) writeMap(n int) {
	if c.resp3() {
		c.writeHeader('%', n)
		return
	}
	c.w.WriteArray(2 * n)
}

// writeSet starts a set of n elements (an array in RESP2).
func (c *client) writeSet(n int) {
	if c.resp3() {
		c.writeHeader('~', n)
		return
	}
	c.w.WriteArray(n)
}

// writeNull writes the null reply: "_" in RESP3, the null bulk string in RESP2.
func (c *client) writeNull() {
	if c.resp3() {
		c.w.WriteRaw([]byte("_\r\n"))
		return
	}
	c.w.WriteNull()
}

// writeStatuses writes a set of simple strings, as Redis writes command flags.
func (c *client) writeStatuses(ss []string) {
	c.writeSet(len(ss))
	for _, s := range ss {
		c.w.WriteString(s)
	}
}

// buffers are the query and reply buffer fields of CLIENT INFO, in bytes, as
// Redis's: the request under way (qbuf) and the room left after it in the read
// buffer, its arguments (argv), those queued in MULTI, the reply buffer (rbs).
type buffers struct{ qbuf, qbufFree, argv, multi, rbs int }

// ownBuffers are c's buffers, read by c's own goroutine while it runs args.
func (c *client) ownBuffers(args [][]byte) *buffers {
	b := &buffers{qbuf: c.qbuf, rbs: cap(c.w.Buffer())}
	if lc, ok := c.conn.NetConn().(*boundedConn); ok {
		b.qbufFree = lc.free
	}
	for _, a := range args {
		b.argv += len(a)
	}
	for _, q := range c.multi {
		for _, a := range q.args {
			b.multi += len(a)
		}
	}
	return b
}

// age is how long c has been connected, in whole seconds (CLIENT LIST's age).
func (c *client) age(now time.Time) int64 { return int64(now.Sub(c.created) / time.Second) }

// info is the line CLIENT INFO and CLIENT LIST show for c, in Redis 7.4's format
// and field order (redis-py's client_info() reads it, introspection.tcl matches it);
// sub and psub are its subscriptions, bufs its buffers if known (the caller's own),
// else zeros, as an idle Redis connection nearly shows. rlserver has no WATCH: watch=0.
func (c *client) info(now time.Time, sub, psub int, bufs *buffers) string {
	if bufs == nil {
		bufs = &buffers{}
	}
	c.mu.Lock()
	name, libName, libVer := c.name, c.libName, c.libVer
	c.mu.Unlock()
	cmd := "NULL"
	if last := c.last.Load(); last != nil {
		cmd = last.full
	}
	multi := c.multiLen.Load() // -1 outside MULTI
	flags := ""
	if sub+psub > 0 {
		flags += "P"
	}
	if multi >= 0 {
		flags += "x"
	}
	if c.noEvict.Load() {
		flags += "e"
	}
	if flags == "" {
		flags = "N"
	}
	idle := now.Sub(time.Unix(0, c.active.Load()))
	b := make([]byte, 0, 320)
	b = append(b, "id="...)
	b = strconv.AppendInt(b, c.id, 10)
	b = append(b, " addr="...)
	b = append(b, c.addr...)
	b = append(b, " laddr="...)
	b = append(b, c.laddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(c.fd), 10)
	b = append(b, " name="...)
	b = append(b, name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, c.age(now), 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, max(0, int64(idle/time.Second)), 10)
	b = append(b, " flags="...)
	b = append(b, flags...)
	b = append(b, " db=0 sub="...)
	b = strconv.AppendInt(b, int64(sub), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(psub), 10)
	b = append(b, " ssub=0 multi="...)
	b = strconv.AppendInt(b, int64(multi), 10)
	b = append(b, " watch=0 qbuf="...)
	b = strconv.AppendInt(b, int64(bufs.qbuf), 10)
	b = append(b, " qbuf-free="...)
	b = strconv.AppendInt(b, int64(bufs.qbufFree), 10)
	b = append(b, " argv-mem="...)
	b = strconv.AppendInt(b, int64(bufs.argv), 10)
	b = append(b, " multi-mem="...)
	b = strconv.AppendInt(b, int64(bufs.multi), 10)
	// The reply buffer keeps the size it grew to: its peak (rbp) is its size.
	b = append(b, " rbs="...)
	b = strconv.AppendInt(b, int64(bufs.rbs), 10)
	b = append(b, " rbp="...)
	b = strconv.AppendInt(b, int64(bufs.rbs), 10)
	b = append(b, " obl=0 oll=0 omem=0 tot-mem="...)
	b = strconv.AppendInt(b, int64(bufs.qbuf+bufs.qbufFree+bufs.argv+bufs.multi+bufs.rbs), 10)
	b = append(b, " events=r cmd="...)
	b = append(b, cmd...)
	b = append(b, " user="...)
	b = append(b, c.user.Load().Name()...)
	b = append(b, " redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(c.proto.Load()), 10)
	b = append(b, " lib-name="...)
	b = append(b, libName...)
	b = append(b, " lib-ver="...)
	b = append(b, libVer...)
	b = append(b, " tot-cmds="...)
	b = strconv.AppendUint(b, c.commands.Load(), 10)
	b = append(b, '\n')
	return string(b)
}
