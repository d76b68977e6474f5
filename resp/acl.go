package resp

import (
	"bytes"
	"slices"
	"time"

	"github.com/rlserver/rlserver/acl"
)

// ACL checks of the RESP front (package acl holds the users and their rules): every
// command a connection's user may not run, with a key or channel its patterns do
// not allow, is refused with Redis 7.0's NOPERM text before it runs or is queued,
// and recorded in ACL LOG.

// Refusals, as Redis 7.0 words them.
const (
	errNoPermKey     = "NOPERM this user has no permissions to access one of the keys used as arguments"
	errNoPermChannel = "NOPERM this user has no permissions to access one of the channels used as arguments"
)

// redisCategories are Redis 7.0's ACL categories of the commands whose flags and
// group do not imply them (TestACLCategoriesAsRedis compares every shared one).
var redisCategories = map[string][]string{
	"flushall":       {"keyspace", "write", "slow", "dangerous"},
	"flushdb":        {"keyspace", "write", "slow", "dangerous"},
	"keys":           {"keyspace", "read", "slow", "dangerous"},
	"restore":        {"keyspace", "write", "slow", "dangerous"},
	"restore-asking": {"keyspace", "write", "slow", "dangerous"},
	"migrate":        {"keyspace", "write", "slow", "dangerous"},
	"asking":         {"fast", "connection"},
	"wait":           {"slow", "connection"},
	"info":           {"slow", "dangerous"},
	"lastsave":       {"admin", "fast", "dangerous"},
	"role":           {"admin", "fast", "dangerous"},
	"readonly":       {"fast", "connection"}, "readwrite": {"fast", "connection"},
	"object": {"slow"}, "memory|usage": {"read", "slow"}, "memory|purge": {"slow"}, "memory|help": {"slow"},
	"function|flush": {"write", "slow", "scripting"}, "function|help": {"slow", "scripting"},
	"command":        {"slow", "connection"},
	"client|setname": {"slow", "connection"}, "client|getname": {"slow", "connection"},
	"client|id": {"slow", "connection"}, "client|info": {"slow", "connection"},
	"client|reply": {"slow", "connection"}, "client|tracking": {"slow", "connection"},
}

// aclCategories is a command's ACL categories: Redis's where redisCategories
// has them, else derived as Redis's setImplicitACLCategories derives them from
// the flags, plus the group's (@keyspace, @connection, @transaction, and
// @ratelimit for the limiter's own) for a command that is no container. The
// subcommands of COMMAND are @connection, as Redis's.
func aclCategories(cm *command) []string {
	if cats, ok := redisCategories[cm.full]; ok {
		return cats
	}
	has := func(f string) bool { return slices.Contains(cm.flags, f) }
	var cats []string
	add := func(c ...string) {
		for _, x := range c {
			if !slices.Contains(cats, x) {
				cats = append(cats, x)
			}
		}
	}
	if has("write") {
		add("write")
	}
	if has("readonly") {
		add("read")
	}
	if has("admin") {
		add("admin", "dangerous")
	}
	if has("pubsub") {
		add("pubsub")
	}
	if has("blocking") {
		add("blocking")
	}
	if has("fast") {
		add("fast")
	}
	switch group := cm.group; {
	case cm.subs != nil:
	case cm.parent != nil && cm.parent.name == "command":
		add("connection")
	case group == groupRateLimit:
		add("ratelimit")
	case group == groupGeneric:
		add("keyspace")
	case group == groupConnection:
		add("connection")
	case group == groupTransactions:
		add("transaction")
	}
	if !slices.Contains(cats, "fast") {
		add("slow")
	}
	return cats
}

// aclRefusal checks a command against the rules p of the connection's user, which
// do not allow everything: the command itself, then each of its keys, then its
// channels, as Redis's ACLSelectorCheckCmd. A refusal is logged, in the context
// of MULTI when queued.
func (s *Server) aclRefusal(c *client, p *acl.Perms, cm *command, args [][]byte) string {
	reason, object := aclCheck(p, cm, args)
	if reason == "" {
		return ""
	}
	c.last.Store(cm) // ACL LOG's client-info names the command refused, as Redis's lastcmd
	s.aclDenied(c, reason, object)
	switch reason {
	case acl.ReasonCommand:
		return "NOPERM this user has no permissions to run the '" + cm.full + "' command"
	case acl.ReasonKey:
		return errNoPermKey
	}
	return errNoPermChannel
}

// execNoPerm is EXEC's reply for a queued command the user's rules, changed
// since, no longer allow, as Redis 7.0 words it.
var execNoPerm = map[string]string{
	acl.ReasonCommand: "no permission to execute the command or subcommand",
	acl.ReasonKey:     "no permission to touch the specified keys",
	acl.ReasonChannel: "no permission to access one of the channels used as arguments",
}

// aclCheck is why p refuses a call of cm (an acl.Reason*) and what it refuses
// (the command's name, the key, the channel); "" if p allows it.
func aclCheck(p *acl.Perms, cm *command, args [][]byte) (reason, object string) {
	if !p.CanRun(cm.aclID, args) {
		return acl.ReasonCommand, cm.full
	}
	if !p.KeysAll() {
		if key := deniedKey(p, cm, args); key != nil {
			return acl.ReasonKey, string(key)
		}
	}
	if ch := deniedChannel(p, cm, args); ch != nil {
		return acl.ReasonChannel, string(ch)
	}
	return "", ""
}

// deniedKey is the first key of the call that p does not allow, or nil. Keys are
// found as cluster mode finds them: RL.ALL's from its rules, the others' from
// their positions, without allocating.
func deniedKey(p *acl.Perms, cm *command, args [][]byte) []byte {
	if cm.keys != nil {
		for _, k := range cm.keys(args) {
			if !p.CanKey(k, cm.keyRead, cm.keyWrite) {
				return k
			}
		}
		return nil
	}
	if cm.firstKey == 0 {
		return nil
	}
	last := cm.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cm.firstKey; i <= last && i < len(args); i += cm.keyStep {
		if !p.CanKey(args[i], cm.keyRead, cm.keyWrite) {
			return args[i]
		}
	}
	return nil
}

// deniedChannel is the first channel of a publish or subscribe that p does not
// allow, or nil; a pattern subscription's patterns must be among p's as they are.
func deniedChannel(p *acl.Perms, cm *command, args [][]byte) []byte {
	var chans [][]byte
	pattern := false
	switch cm.full {
	case "publish", "spublish":
		chans = args[1:2]
	case "subscribe", "ssubscribe":
		chans = args[1:]
	case "psubscribe":
		chans, pattern = args[1:], true
	default:
		return nil
	}
	for _, ch := range chans {
		if !p.CanChannel(ch, pattern) {
			return ch
		}
	}
	return nil
}

// aclDenied records a refusal in ACL LOG as the connection's user.
func (s *Server) aclDenied(c *client, reason, object string) {
	s.aclDeniedAs(c, reason, object, c.user.Load().Name())
}

func (s *Server) aclDeniedAs(c *client, reason, object, user string) {
	ctx := acl.ContextToplevel
	if c.inMulti || c.inExec {
		ctx = acl.ContextMulti
	}
	now := time.Now()
	info := c.info(now, 0, 0, nil)
	s.aclLog.Add(acl.LogEntry{Reason: reason, Context: ctx, Object: object, Username: user,
		ClientInfo: string(bytes.TrimSuffix([]byte(info), []byte("\n")))}, now)
}

// dropUsers closes the connections logged in as users removed (ACL DELUSER, ACL
// LOAD), but the caller's own, which it reports for closing after its reply.
func (s *Server) dropUsers(c *client, gone []*acl.User) (self bool) {
	if len(gone) == 0 {
		return false
	}
	for _, v := range s.clientViews() {
		if !slices.Contains(gone, v.c.user.Load()) {
			continue
		}
		if v.c == c {
			self = true
			continue
		}
		v.close()
	}
	return self
}

// dropSubscribers closes the connections logged in as u with a subscription its
// rules no longer allow, after ACL SETUSER, as Redis's ACLKillPubsubClientsIfNeeded:
// a channel must match a pattern of the rules, a subscribed pattern be one of them.
// They leave CLIENT LIST and stop getting messages at once. The caller's own it
// only reports, for closing after its reply.
func (s *Server) dropSubscribers(c *client, u *acl.User) (self bool) {
	p := u.Perms()
	var doomed []*subscriber
	s.ps.mu.Lock()
	for sub := range s.ps.subs {
		if sub.c.user.Load() == u && !allowedSubscriptions(p, sub) {
			doomed = append(doomed, sub)
		}
	}
	for _, sub := range doomed {
		if sub.c == c {
			self = true
			continue
		}
		for ch := range sub.channels {
			s.unsubscribeLocked(s.ps.channels, ch, sub)
		}
		for pat := range sub.patterns {
			s.unsubscribeLocked(s.ps.patterns, pat, sub)
		}
		delete(s.ps.subs, sub) // its goroutine, ending on the close, finds it gone
		sub.dc.NetConn().Close()
	}
	s.ps.mu.Unlock()
	// One detached a moment ago may not have left s.clients yet (closeConn does so
	// later, again).
	s.mu.Lock()
	for _, sub := range doomed {
		if sub.c != c {
			delete(s.clients, sub.c)
		}
	}
	s.mu.Unlock()
	return self
}

// allowedSubscriptions reports whether p allows every subscription of sub;
// pubsub.mu is held.
func allowedSubscriptions(p *acl.Perms, sub *subscriber) bool {
	for ch := range sub.channels {
		if !p.CanChannel([]byte(ch), false) {
			return false
		}
	}
	for pat := range sub.patterns {
		if !p.CanChannel([]byte(pat), true) {
			return false
		}
	}
	return true
}
