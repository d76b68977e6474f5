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
// own commands. OPTIN and OPTOUT are Redis's: CLIENT CACHING yes or no decides for
// the next command or transaction. Not done: BCAST, PREFIX and REDIRECT (refused),
// nor an invalidation when a key disappears by itself, its state fresh again (its
// EXISTS may then stay cached as 1 until the key is next written).

// errTrackingOption refuses the options rlserver does not implement.
const errTrackingOption = "ERR rlserver supports CLIENT TRACKING ON|OFF [OPTIN|OPTOUT] [NOLOOP] only: " +
	"no REDIRECT, BCAST or PREFIX"

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
	noLoop, optIn, optOut := false, false, false
	for _, a := range args[3:] {
		switch strings.ToLower(string(a)) {
		case "noloop":
			noLoop = true
		case "optin":
			optIn = true
		case "optout":
			optOut = true
		case "redirect", "bcast", "prefix":
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
		c.trackOptIn, c.trackOptOut, c.caching, c.cachingNext = false, false, false, false
		c.w.WriteString("OK")
		return
	}
	if optIn && optOut {
		c.writeError("ERR You can't specify both OPTIN mode and OPTOUT mode")
		return
	}
	if c.trackingOn.Load() && (optIn && c.trackOptOut || optOut && c.trackOptIn) {
		c.writeError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, " +
			"and then re-enabling it with a different mode.")
		return
	}
	c.trackNoLoop, c.trackOptIn, c.trackOptOut = noLoop, optIn, optOut
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

// cmdClientCaching serves CLIENT CACHING YES|NO, as Redis's: under OPTIN, yes tracks
// the reads of the next command (or transaction); under OPTOUT, no leaves them out.
func cmdClientCaching(_ *Server, c *client, args [][]byte, _ int64) {
	if !c.trackingOn.Load() {
		c.writeError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(args[2])) {
	case "yes":
		if !c.trackOptIn {
			c.writeError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !c.trackOptOut {
			c.writeError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	c.caching, c.cachingNext = true, true
	c.w.WriteString("OK")
}

// cachingStep runs before each command while CLIENT CACHING is given: it holds for
// the command after it, and through a transaction and CLIENT commands, as Redis's
// resetClient clears it after any other command outside MULTI.
func cachingStep(c *client, args [][]byte) {
	if !c.cachingNext {
		c.caching = false
		return
	}
	name := args[0]
	c.cachingNext = bytes.EqualFold(name, []byte("client")) ||
		c.inMulti && !bytes.EqualFold(name, []byte("exec")) && !bytes.EqualFold(name, []byte("discard")) ||
		bytes.EqualFold(name, []byte("multi"))
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
	if !c.trackingOn.Load() || c.sub == nil || c.trackOptIn && !c.caching || c.trackOptOut && c.caching {
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
