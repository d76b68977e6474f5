package resp

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlserver/rlserver/store"
	"github.com/tidwall/redcon"
)

// Pub/Sub, as Redis's, on this server only: Sentinels find each other by publishing
// on every server they watch and subscribing to "__sentinel__:hello". A connection
// that subscribes leaves redcon's loop (redcon.Conn.Detach) for a goroutine of its
// own, so that messages published by other connections can be written to it between
// its own commands; it keeps serving every command there. In RESP2 a connection with
// subscriptions may only (un)subscribe, PING, QUIT or RESET, as in Redis; in RESP3
// messages are push replies and any command goes.

// pubsub is the server's subscriptions.
type pubsub struct {
	mu       sync.Mutex
	channels map[string]map[*subscriber]struct{}
	patterns map[string]map[*subscriber]struct{}
	subs     map[*subscriber]struct{} // every detached connection
	wg       sync.WaitGroup
}

// subscriber is a detached connection.
type subscriber struct {
	c  *client
	dc redcon.DetachedConn
	// wmu orders the connection's replies with messages from publishers.
	wmu      sync.Mutex
	channels map[string]struct{} // guarded by pubsub.mu
	patterns map[string]struct{} // guarded by pubsub.mu
	watch    *watcher            // set by MONITOR (server_monitor.go)
	tracked  map[string]struct{} // keys read under CLIENT TRACKING; guarded by pubsub.mu
	in       *input              // what it received and has not served (conn_input.go); nil if unknown
}

// count is how many channels and patterns sub has; pubsub.mu is held.
func (sub *subscriber) count() int { return len(sub.channels) + len(sub.patterns) }

// allowedSubscribed are the commands a RESP2 connection with subscriptions may send.
var allowedSubscribed = map[string]bool{"subscribe": true, "unsubscribe": true, "psubscribe": true,
	"punsubscribe": true, "ping": true, "quit": true, "reset": true}

// subscribedRefusal is the error for cm on c in RESP2 with subscriptions, if cm is
// not allowedSubscribed there; else "". Redis names a subcommand "client|reply".
func (s *Server) subscribedRefusal(c *client, cm *command) string {
	if c.sub == nil || c.resp3() || allowedSubscribed[cm.full] {
		return ""
	}
	s.ps.mu.Lock()
	n := c.sub.count()
	s.ps.mu.Unlock()
	if n == 0 {
		return ""
	}
	return "ERR Can't execute '" + cm.full + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// flush sends what the connection's buffer holds; wmu is held. A command running
// silenced (CLIENT REPLY OFF) has what it writes next cut from the empty buffer.
func (sub *subscriber) flush() error {
	err := sub.dc.Flush()
	if sub.c.silent {
		sub.c.silentFrom = 0
	}
	return err
}

// detach moves c's connection out of redcon's loop into a goroutine of its own.
func (s *Server) detach(c *client) *subscriber {
	dc := c.conn.Detach()
	dc.NetConn().SetReadDeadline(time.Time{}) // no idle timeout for subscribers, as in Redis
	sub := &subscriber{c: c, dc: dc, channels: map[string]struct{}{}, patterns: map[string]struct{}{}}
	if lc, ok := dc.NetConn().(*boundedConn); ok {
		// Read from this goroutine until serveDetached starts, then from that one only.
		sub.in = newInput(lc, lc.read)
		lc.in = sub.in
	}
	c.sub = sub
	c.conn = dc
	s.ps.mu.Lock()
	if s.ps.subs == nil {
		s.ps.subs = map[*subscriber]struct{}{}
		s.ps.channels = map[string]map[*subscriber]struct{}{}
		s.ps.patterns = map[string]map[*subscriber]struct{}{}
	}
	s.ps.subs[sub] = struct{}{}
	s.ps.wg.Add(1)
	s.ps.mu.Unlock()
	return sub
}

// handOff starts the goroutine of a connection that detach moved, its wmu held by
// the command that detached it: that command's reply (cut if it ran silenced) is
// sent first, and the goroutine owns c from then on.
func (s *Server) handOff(sub *subscriber) {
	sub.c.unsilence()
	sub.flush()
	sub.wmu.Unlock()
	go s.serveDetached(sub)
}

// serveDetached runs a detached connection's commands until it closes.
func (s *Server) serveDetached(sub *subscriber) {
	defer s.ps.wg.Done()
	defer func() {
		s.ps.mu.Lock()
		for ch := range sub.channels {
			s.unsubscribeLocked(s.ps.channels, ch, sub)
		}
		for p := range sub.patterns {
			s.unsubscribeLocked(s.ps.patterns, p, sub)
		}
		delete(s.ps.subs, sub)
		s.ps.mu.Unlock()
		s.untrack(sub)
		if sub.c.trackingOn.Swap(false) {
			s.trackers.Add(-1)
		}
		if sub.watch != nil {
			s.unwatch(sub.watch)
		}
		sub.wmu.Lock() // Close flushes: not while a publisher writes
		sub.dc.Close()
		sub.wmu.Unlock()
	}()
	for {
		cmd, err := sub.dc.ReadCommand()
		if err != nil {
			return
		}
		sub.wmu.Lock()
		s.serveCommand(sub.dc, cmd)
		err = sub.flush()
		sub.wmu.Unlock()
		if err != nil {
			return
		}
	}
}

// stopPubSub closes every detached connection and waits for their goroutines.
func (s *Server) stopPubSub() {
	s.ps.mu.Lock()
	for sub := range s.ps.subs {
		sub.dc.NetConn().Close()
	}
	s.ps.mu.Unlock()
	s.ps.wg.Wait()
}

func (s *Server) unsubscribeLocked(m map[string]map[*subscriber]struct{}, name string, sub *subscriber) {
	set := m[name]
	delete(set, sub)
	if len(set) == 0 {
		delete(m, name)
	}
}

// writePush starts a message or confirmation: a push in RESP3, an array in RESP2;
// pushed ends it. Under CLIENT REPLY OFF or SKIP, the reply written before it is cut
// and the push is kept, as Redis sends them.
func (c *client) writePush(n int) {
	if c.silent {
		c.w.SetBuffer(c.w.Buffer()[:c.silentFrom])
	}
	if c.resp3() {
		c.writeHeader('>', n)
		return
	}
	c.w.WriteArray(n)
}

// pushed ends the push writePush began: a silenced command's cut begins after it.
func (c *client) pushed() {
	if c.silent {
		c.silentFrom = len(c.w.Buffer())
	}
}

// subscribeCmd serves SUBSCRIBE and PSUBSCRIBE (pattern): each name is confirmed
// with the connection's count of subscriptions after it.
func subscribeCmd(pattern bool) func(s *Server, c *client, args [][]byte, _ int64) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	return func(s *Server, c *client, args [][]byte, _ int64) {
		sub := c.sub
		first := sub == nil
		if first {
			sub = s.detach(c)
			sub.wmu.Lock()
		}
		for _, a := range args[1:] {
			name := string(a)
			s.ps.mu.Lock()
			own, all := sub.channels, s.ps.channels
			if pattern {
				own, all = sub.patterns, s.ps.patterns
			}
			own[name] = struct{}{}
			if all[name] == nil {
				all[name] = map[*subscriber]struct{}{}
			}
			all[name][sub] = struct{}{}
			n := sub.count()
			s.ps.mu.Unlock()
			c.writePush(3)
			c.w.WriteBulkString(kind)
			c.w.WriteBulkString(name)
			c.w.WriteInt64(int64(n))
			c.pushed()
		}
		switch {
		case first && c.inExec:
			c.execSub = sub // cmdExec serves it
		case first:
			s.handOff(sub)
		}
	}
}

// unsubscribeCmd serves UNSUBSCRIBE and PUNSUBSCRIBE: the names given, or all.
func unsubscribeCmd(pattern bool) func(s *Server, c *client, args [][]byte, _ int64) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	return func(s *Server, c *client, args [][]byte, _ int64) {
		sub := c.sub
		var names []string
		s.ps.mu.Lock()
		if sub != nil {
			own := sub.channels
			if pattern {
				own = sub.patterns
			}
			for _, a := range args[1:] {
				names = append(names, string(a))
			}
			if len(args) == 1 {
				for name := range own {
					names = append(names, name)
				}
			}
		} else {
			for _, a := range args[1:] {
				names = append(names, string(a))
			}
		}
		s.ps.mu.Unlock()
		if len(names) == 0 {
			c.writePush(3)
			c.w.WriteBulkString(kind)
			c.writeNull()
			c.w.WriteInt64(0)
			c.pushed()
			return
		}
		for _, name := range names {
			n := 0
			if sub != nil {
				s.ps.mu.Lock()
				own, all := sub.channels, s.ps.channels
				if pattern {
					own, all = sub.patterns, s.ps.patterns
				}
				if _, ok := own[name]; ok {
					delete(own, name)
					s.unsubscribeLocked(all, name, sub)
				}
				n = sub.count()
				s.ps.mu.Unlock()
			}
			c.writePush(3)
			c.w.WriteBulkString(kind)
			c.w.WriteBulkString(name)
			c.w.WriteInt64(int64(n))
			c.pushed()
		}
	}
}

// cmdPublish serves PUBLISH channel message: the message goes to every subscriber of
// the channel and of a matching pattern; the reply is how many received it.
func cmdPublish(s *Server, c *client, args [][]byte, _ int64) {
	channel, msg := args[1], args[2]
	type target struct {
		sub     *subscriber
		pattern string // "" for a channel subscription
	}
	var targets []target
	s.ps.mu.Lock()
	for sub := range s.ps.channels[string(channel)] {
		targets = append(targets, target{sub: sub})
	}
	for p, set := range s.ps.patterns {
		if store.Match([]byte(p), channel, false) {
			for sub := range set {
				targets = append(targets, target{sub: sub, pattern: p})
			}
		}
	}
	s.ps.mu.Unlock()
	delivered := 0
	others := targets[:0]
	for _, t := range targets {
		if t.sub != c.sub {
			others = append(others, t)
			continue
		}
		// To itself: after PUBLISH's reply (or EXEC's), as Redis 7.2. Its UNSUBSCRIBE
		// cannot run meanwhile: it is this connection's own next command.
		delivered++
		c.deferPush(func() { writeMessage(c, t.pattern, channel, msg) })
	}
	if c.sub != nil {
		// A detached connection runs its commands holding its own writer's lock: let it
		// go meanwhile, or two of them publishing to each other would wait for each other.
		c.sub.wmu.Unlock()
	}
	deadline := time.Now().Add(publishWait)
	for _, t := range others {
		if t.sub.in != nil {
			t.sub.in.settle(deadline) // what it received before this PUBLISH first, as Redis
		}
		t.sub.wmu.Lock()
		// Still subscribed? Its UNSUBSCRIBE may have run since the targets were
		// read: it holds wmu while it runs, so what is seen here holds until the
		// message is written, and no message follows the confirmation.
		s.ps.mu.Lock()
		_, still := t.sub.channels[string(channel)]
		if t.pattern != "" {
			_, still = t.sub.patterns[t.pattern]
		}
		s.ps.mu.Unlock()
		if !still {
			t.sub.wmu.Unlock()
			continue
		}
		delivered++
		writeMessage(t.sub.c, t.pattern, channel, msg)
		t.sub.dc.NetConn().SetWriteDeadline(time.Now().Add(5 * time.Second))
		if t.sub.flush() != nil {
			t.sub.dc.NetConn().Close()
		}
		t.sub.wmu.Unlock()
	}
	if c.sub != nil {
		c.sub.wmu.Lock()
	}
	c.w.WriteInt64(int64(delivered))
}

// writeMessage writes one published message to c: message, or pmessage with the pattern.
func writeMessage(c *client, pattern string, channel, msg []byte) {
	if pattern == "" {
		c.writePush(3)
		c.w.WriteBulkString("message")
	} else {
		c.writePush(4)
		c.w.WriteBulkString("pmessage")
		c.w.WriteBulkString(pattern)
	}
	c.w.WriteBulk(channel)
	c.w.WriteBulk(msg)
	c.pushed()
}

// subscribedPing is PING's reply on a RESP2 connection with subscriptions, as Redis's:
// ["pong", message].
func (s *Server) subscribedPing(c *client, args [][]byte) bool {
	if c.sub == nil || c.resp3() {
		return false
	}
	s.ps.mu.Lock()
	n := c.sub.count()
	s.ps.mu.Unlock()
	if n == 0 {
		return false
	}
	c.w.WriteArray(2)
	c.w.WriteBulkString("pong")
	if len(args) > 1 {
		c.w.WriteBulk(args[1])
	} else {
		c.w.WriteBulkString("")
	}
	return true
}

// cmdPubsubChannels serves PUBSUB CHANNELS [pattern], and SHARDCHANNELS (shard: none).
func cmdPubsubChannels(shard bool) func(s *Server, c *client, args [][]byte, _ int64) {
	return func(s *Server, c *client, args [][]byte, _ int64) {
		if len(args) > 3 {
			c.writeError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try PUBSUB HELP.", args[1]))
			return
		}
		var names []string
		if !shard {
			s.ps.mu.Lock()
			for ch := range s.ps.channels {
				if len(args) < 3 || store.Match(args[2], []byte(ch), false) {
					names = append(names, ch)
				}
			}
			s.ps.mu.Unlock()
		}
		slices.Sort(names)
		c.w.WriteArray(len(names))
		for _, n := range names {
			c.w.WriteBulkString(n)
		}
	}
}

// cmdPubsubNumsub serves PUBSUB NUMSUB [channel ...], and SHARDNUMSUB (shard: 0 each).
func cmdPubsubNumsub(shard bool) func(s *Server, c *client, args [][]byte, _ int64) {
	return func(s *Server, c *client, args [][]byte, _ int64) {
		c.w.WriteArray(2 * (len(args) - 2))
		for _, ch := range args[2:] {
			n := 0
			if !shard {
				s.ps.mu.Lock()
				n = len(s.ps.channels[string(ch)])
				s.ps.mu.Unlock()
			}
			c.w.WriteBulk(ch)
			c.w.WriteInt64(int64(n))
		}
	}
}

// cmdPubsubNumpat serves PUBSUB NUMPAT: the patterns with subscribers.
func cmdPubsubNumpat(s *Server, c *client, _ [][]byte, _ int64) {
	s.ps.mu.Lock()
	n := len(s.ps.patterns)
	s.ps.mu.Unlock()
	c.w.WriteInt64(int64(n))
}
