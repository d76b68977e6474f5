package acl

import (
	"bytes"

	"github.com/rlserver/rlserver/store"
)

// All reports whether the rules allow every command, key and channel: the front
// then skips every check, which keeps the default user's hot path as it was.
func (p *Perms) All() bool { return p.all }

// On reports whether the user may log in.
func (p *Perms) On() bool { return p.on }

// KeysAll reports whether every key is allowed, so that a front needs not find
// the keys of an allowed command.
func (p *Perms) KeysAll() bool { return p.allKeys }

// CanRun reports whether the rules allow the command numbered id, called with
// args (the command's name first): its bit, or a first argument allowed by
// +cmd|arg. A command that runs before AUTH is always allowed, as in Redis.
func (p *Perms) CanRun(id int, args [][]byte) bool {
	if p.allCommands || p.bit(id) || p.t.cmds[id].noAuth {
		return true
	}
	idx := 1
	if p.t.cmds[id].parent >= 0 {
		idx = 2
	}
	if len(args) <= idx {
		return false
	}
	for _, a := range p.firstArgs[id] {
		if bytes.EqualFold(args[idx], []byte(a)) {
			return true
		}
	}
	return false
}

// CanKey reports whether the rules allow reading (read) and/or writing (write)
// key: one pattern must grant all the access asked, as Redis's ACLSelectorCheckKey.
func (p *Perms) CanKey(key []byte, read, write bool) bool {
	if p.allKeys {
		return true
	}
	want := 0
	if read {
		want |= permRead
	}
	if write {
		want |= permWrite
	}
	for _, g := range p.prefixes {
		if len(key) < g.n {
			continue
		}
		if perm, ok := g.perms[string(key[:g.n])]; ok && perm&want == want {
			return true
		}
	}
	for i := range p.globs {
		k := &p.globs[i]
		if k.perm&want == want && store.Match([]byte(k.pattern), key, false) {
			return true
		}
	}
	return false
}

// CanChannel reports whether the rules allow a channel: matched against the
// patterns, or, for a pattern subscription (PSUBSCRIBE), equal to one of them.
func (p *Perms) CanChannel(channel []byte, pattern bool) bool {
	if p.allChannels {
		return true
	}
	for _, c := range p.channels {
		if pattern && c == string(channel) || !pattern && store.Match([]byte(c), channel, false) {
			return true
		}
	}
	return false
}
