package resp

import (
	"bytes"
	"strings"
	"time"
)

// Client-side caching (CLIENT TRACKING ON), Redis's default mode over RESP3: the
// server remembers the keys a tracking connection read, and when a command that
// writes one runs, it pushes ["invalidate", [key]] to that connection, once, then
// forgets it; FLUSHALL pushes ["invalidate", null]. A tracking connection leaves
// redcon's loop, as a subscriber does (pubsub.go), so pushes reach it between its
// own commands. Not done: BCAST, PREFIX, OPTIN, OPTOUT and REDIRECT (refused), nor
// an invalidation when a key disappears by itself, its state fresh again (its
// EXISTS may then stay cached as 1 until the key is next written).

// errTrackingOption refuses the options rlserver does not implement.
const errTrackingOption = "ERR rlserver supports CLIENT TRACKING ON|OFF [NOLOOP] only: " +
	"no REDIRECT, BCAST, PREFIX, OPTIN or OPTOUT"

// tracking is the server's table of tracked keys.
type tracking struct {
	keys map[string]map[*subscriber]struct{} // guarded by pubsub.mu, as the subscribers' own sets
}

// tracksAny reports whether a command must go through trackCommand: c tracks, or
// some connection does (a write may invalidate its keys).
func (s *Server) tracksAny(c *client) bool {
	return s.trackers.Load() > 0 || c.trackingOn.Load()
}

// cmdClientTracking serves CLIENT TRACKING ON|OFF [NOLOOP].
func cmdClientTracking(s *Server, c *client, args [][]byte, _ int64) {
	on := bytes.EqualFold(args[2], []byte("on"))
	if !on && !bytes.EqualFold(args[2], []byte("off")) {
		c.writeError(errSyntax)
		return
	}
	noLoop := false
	for _, a := range args[3:] {
		switch strings.ToLower(string(a)) {
		case "noloop":
			noLoop = true
		case "redirect", "bcast", "prefix", "optin", "optout":
			c.writeError(errTrackingOption)
			return
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if !on {
		if c.sub != nil {
			s.untrack(c.sub)
		}
		if c.trackingOn.Swap(false) {
			s.trackers.Add(-1)
		}
		c.w.WriteString("OK")
		return
	}
	c.trackNoLoop = noLoop
	if !c.trackingOn.Swap(true) {
		s.trackers.Add(1)
	}
	sub, first := c.sub, c.sub == nil
	if first {
		sub = s.detach(c)
		sub.wmu.Lock()
	}
	c.w.WriteString("OK")
	switch {
	case first && c.inExec:
		c.execSub = sub // cmdExec serves it
	case first:
		s.handOff(sub)
	}
}

// trackCommand records the keys a tracking connection read, and invalidates those a
// write changed, after the command ran. Only a command with keys, or FLUSHALL, calls.
func (s *Server) trackCommand(c *client, cm *command, args [][]byte) {
	if cm.name == "flushall" || cm.name == "flushdb" {
		s.invalidate(c, nil, true)
		return
	}
	if cm.firstKey == 0 && cm.keys == nil {
		return
	}
	keys := commandKeys(cm, args)
	if cm.write {
		s.invalidate(c, keys, false)
		return
	}
	if !c.trackingOn.Load() || c.sub == nil {
		return
	}
	s.ps.mu.Lock()
	if s.track.keys == nil {
		s.track.keys = map[string]map[*subscriber]struct{}{}
	}
	for _, k := range keys {
		set := s.track.keys[string(k)]
		if set == nil {
			set = map[*subscriber]struct{}{}
			s.track.keys[string(k)] = set
		}
		set[c.sub] = struct{}{}
		if c.sub.tracked == nil {
			c.sub.tracked = map[string]struct{}{}
		}
		c.sub.tracked[string(k)] = struct{}{}
	}
	s.ps.mu.Unlock()
}

// invalidate pushes the invalidation of keys (all of them: a flush) to the tracking
// connections that read them, but to from itself under NOLOOP.
func (s *Server) invalidate(from *client, keys [][]byte, all bool) {
	targets := map[*subscriber][]string{}
	s.ps.mu.Lock()
	if all {
		for sub := range s.ps.subs {
			if sub.c.trackingOn.Load() {
				targets[sub] = nil
				sub.tracked = nil
			}
		}
		s.track.keys = nil
	}
	for _, k := range keys {
		for sub := range s.track.keys[string(k)] {
			targets[sub] = append(targets[sub], string(k))
			delete(sub.tracked, string(k))
		}
		delete(s.track.keys, string(k))
	}
	s.ps.mu.Unlock()
	own := from.sub
	if ks, ok := targets[own]; ok && own != nil {
		delete(targets, own)
		if !from.trackNoLoop {
			from.deferPush(func() { writeInvalidate(from, ks, all) })
		}
	}
	if len(targets) == 0 {
		return
	}
	if own != nil {
		own.wmu.Unlock() // as PUBLISH does: two connections invalidating each other must not wait on each other
	}
	for sub, ks := range targets {
		sub.wmu.Lock()
		writeInvalidate(sub.c, ks, all)
		sub.dc.NetConn().SetWriteDeadline(time.Now().Add(5 * time.Second))
		if sub.flush() != nil {
			sub.dc.NetConn().Close()
		}
		sub.wmu.Unlock()
	}
	if own != nil {
		own.wmu.Lock()
	}
}

// writeInvalidate writes one invalidation push (RESP3 only: in RESP2 Redis needs a
// REDIRECT, which rlserver does not implement).
func writeInvalidate(c *client, keys []string, all bool) {
	if !c.resp3() {
		return
	}
	c.writePush(2)
	c.w.WriteBulkString("invalidate")
	if all {
		c.writeNull()
	} else {
		c.w.WriteArray(len(keys))
		for _, k := range keys {
			c.w.WriteBulkString(k)
		}
	}
	c.pushed()
}

// untrack forgets what sub read, when it stops tracking or closes.
func (s *Server) untrack(sub *subscriber) {
	s.ps.mu.Lock()
	for k := range sub.tracked {
		set := s.track.keys[k]
		delete(set, sub)
		if len(set) == 0 {
			delete(s.track.keys, k)
		}
	}
	sub.tracked = nil
	s.ps.mu.Unlock()
}
