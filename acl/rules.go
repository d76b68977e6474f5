package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
)

// Key permissions of a pattern: ~ grants both, %R~ reading, %W~ writing.
const (
	permRead  = 1
	permWrite = 2
	permAll   = permRead | permWrite
)

// The reasons a rule is refused, in Redis's words (ACLSetUserStringError).
var (
	errUnknown      = errors.New("Unknown command or category name in ACL")
	errSyntax       = errors.New("Syntax error")
	errKeysAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid " +
		"and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errChannelsAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid " +
		"and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoSuchPass = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash    = errors.New("The password hash must be exactly 64 characters and contain only lowercase " +
		"hexadecimal characters")
	errFirstArgOfSub = errors.New("Allowing first-arg of a subcommand is not supported")
)

type keyPattern struct {
	pattern string
	perm    int
}

// prefixGroup holds the patterns of one shape, n literal bytes then one '*'
// (~tenantA:*), by their literal part: a key is checked against all of them with
// one map lookup of its first n bytes instead of a glob each. A user of ten
// tenants' patterns is checked in 27 ns instead of 200 (BenchmarkACLRefusal).
type prefixGroup struct {
	n     int
	perms map[string]int
}

// isPrefixPattern reports whether pat is literal bytes then one '*': no other
// glob character ('*', '?', '[', '\') before it.
func isPrefixPattern(pat string) bool {
	n := len(pat)
	return n > 0 && pat[n-1] == '*' && !strings.ContainsAny(pat[:n-1], "*?[\\")
}

// Perms is one state of a user's rules. It is never changed once published: ACL
// SETUSER builds a new one and swaps it in, so checks read it without a lock.
type Perms struct {
	t         *Table
	on        bool
	nopass    bool
	sanitize  string   // "", "sanitize-payload" or "skip-sanitize-payload"
	passwords []string // SHA-256 in lower-case hex, in the order added
	allowed   []uint64 // bitmap over the table's command numbers
	// future is Redis's reserved bit: set by +@all, cleared only by -@all, it says
	// the rules start from +@all (ACL LIST); allCommands skips the bitmap and is
	// cleared by any command taken away.
	future, allCommands bool
	firstArgs           map[int][]string // +cmd|arg of commands without subcommands
	allKeys             bool
	keys                []keyPattern
	prefixes            []prefixGroup // of keys, by finish
	globs               []keyPattern  // the other keys, by finish
	allChannels         bool
	channels            []string
	all                 bool // allCommands, allKeys and allChannels: nothing to check
}

// newPerms is a new user's rules: off, no password, no commands, keys or channels.
func newPerms(t *Table) *Perms {
	return &Perms{t: t, allowed: make([]uint64, (len(t.cmds)+63)/64)}
}

func (p *Perms) clone() *Perms {
	q := *p
	q.passwords = slices.Clone(p.passwords)
	q.allowed = slices.Clone(p.allowed)
	q.keys = slices.Clone(p.keys)
	q.channels = slices.Clone(p.channels)
	if p.firstArgs != nil {
		q.firstArgs = make(map[int][]string, len(p.firstArgs))
		for id, args := range p.firstArgs {
			q.firstArgs[id] = slices.Clone(args)
		}
	}
	return &q
}

// HashPassword is the form Redis keeps a password in: SHA-256, lower-case hex.
func HashPassword(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// hasSpaces is Redis's ACLStringHasSpaces: usernames and patterns may hold no
// white space nor NUL, so that ACL LIST's lines read back as they were.
func hasSpaces(s string) bool {
	return strings.ContainsAny(s, " \t\n\v\f\r\x00")
}

func (p *Perms) bit(id int) bool { return p.allowed[id/64]&(1<<(id%64)) != 0 }

func (p *Perms) setBit(id int, v bool) {
	if v {
		p.allowed[id/64] |= 1 << (id % 64)
		return
	}
	p.allowed[id/64] &^= 1 << (id % 64)
	p.allCommands = false
}

// changePerm allows or denies a command and, for a container, its subcommands.
func (p *Perms) changePerm(id int, v bool) {
	p.setBit(id, v)
	delete(p.firstArgs, id)
	for _, sub := range p.t.cmds[id].subs {
		p.setBit(sub, v)
	}
}

func (p *Perms) setCategory(bit uint64, v bool) {
	for id, c := range p.t.cmds {
		if c.cats&bit != 0 {
			p.changePerm(id, v)
		}
	}
}

// apply changes p by one rule, as Redis's ACLSetUser and ACLSetSelector.
func (p *Perms) apply(op string) error {
	if op == "" {
		return nil
	}
	switch strings.ToLower(op) {
	case "on":
		p.on = true
		return nil
	case "off":
		p.on = false
		return nil
	case "skip-sanitize-payload", "sanitize-payload":
		p.sanitize = strings.ToLower(op)
		return nil
	case "nopass":
		p.nopass, p.passwords = true, nil
		return nil
	case "resetpass":
		p.nopass, p.passwords = false, nil
		return nil
	case "clearselectors":
		return nil // rlserver has no selectors beyond the root one
	case "reset":
		*p = *newPerms(p.t)
		p.sanitize = "sanitize-payload"
		return nil
	case "allkeys", "~*":
		p.allKeys, p.keys = true, nil
		return nil
	case "resetkeys":
		p.allKeys, p.keys = false, nil
		return nil
	case "allchannels", "&*":
		p.allChannels, p.channels = true, nil
		return nil
	case "resetchannels":
		p.allChannels, p.channels = false, nil
		return nil
	case "allcommands", "+@all":
		for i := range p.allowed {
			p.allowed[i] = ^uint64(0)
		}
		p.future, p.allCommands, p.firstArgs = true, true, nil
		return nil
	case "nocommands", "-@all":
		clear(p.allowed)
		p.future, p.allCommands, p.firstArgs = false, false, nil
		return nil
	}
	switch op[0] {
	case '>', '<':
		return p.password(op[0] == '>', HashPassword(op[1:]))
	case '#', '!':
		if !validHash(op[1:]) {
			return errBadHash
		}
		return p.password(op[0] == '#', op[1:])
	case '~', '%':
		return p.keyPattern(op)
	case '&':
		if p.allChannels {
			return errChannelsAfterAll
		}
		if hasSpaces(op[1:]) {
			return errSyntax
		}
		if !slices.Contains(p.channels, op[1:]) {
			p.channels = append(p.channels, op[1:])
		}
		return nil
	case '+', '-':
		if len(op) > 1 && op[1] == '@' {
			bit := category(op[2:])
			if bit == 0 {
				return errUnknown
			}
			p.setCategory(bit, op[0] == '+')
			return nil
		}
		return p.command(op[0] == '+', op[1:])
	}
	return errSyntax
}

func (p *Perms) password(add bool, hash string) error {
	i := slices.Index(p.passwords, hash)
	switch {
	case add:
		if i < 0 {
			p.passwords = append(p.passwords, hash)
		}
		p.nopass = false
	case i < 0:
		return errNoSuchPass
	default:
		p.passwords = slices.Delete(p.passwords, i, i+1)
	}
	return nil
}

// keyPattern adds ~pattern, %R~pattern, %W~pattern or %RW~pattern.
func (p *Perms) keyPattern(op string) error {
	if p.allKeys {
		return errKeysAfterAll
	}
	perm, off := permAll, 1
	if op[0] == '%' {
		perm = 0
		for ; off < len(op); off++ {
			c := op[off]
			if (c == 'R' || c == 'r') && perm&permRead == 0 {
				perm |= permRead
			} else if (c == 'W' || c == 'w') && perm&permWrite == 0 {
				perm |= permWrite
			} else if c == '~' {
				off++
				break
			} else {
				return errSyntax
			}
		}
	}
	pat := op[off:]
	if hasSpaces(pat) {
		return errSyntax
	}
	for i := range p.keys {
		if p.keys[i].pattern == pat {
			p.keys[i].perm |= perm
			return nil
		}
	}
	p.keys = append(p.keys, keyPattern{pattern: pat, perm: perm})
	return nil
}

// command applies +cmd, -cmd, +cmd|sub (a subcommand, or a first argument of a
// command without subcommands) and -cmd|sub.
func (p *Perms) command(allow bool, name string) error {
	if !allow || !strings.Contains(name, "|") {
		id := p.t.ID(name)
		if id < 0 {
			return errUnknown
		}
		p.changePerm(id, allow)
		return nil
	}
	i := strings.LastIndexByte(name, '|')
	top, arg := name[:i], name[i+1:]
	id := p.t.ID(top)
	switch {
	case id < 0:
		return errUnknown
	case p.t.cmds[id].parent >= 0:
		return errFirstArgOfSub
	case arg == "":
		return errSyntax
	case len(p.t.cmds[id].subs) > 0:
		sub := p.t.ID(name)
		if sub < 0 {
			return errUnknown
		}
		p.changePerm(sub, true)
	default:
		if !slices.ContainsFunc(p.firstArgs[id], func(a string) bool { return strings.EqualFold(a, arg) }) {
			if p.firstArgs == nil {
				p.firstArgs = map[int][]string{}
			}
			p.firstArgs[id] = append(p.firstArgs[id], arg)
		}
	}
	return nil
}

// finish computes what checks read from the rules.
func (p *Perms) finish() *Perms {
	p.all = p.allCommands && p.allKeys && p.allChannels
	p.prefixes, p.globs = nil, nil
	for _, k := range p.keys {
		if !isPrefixPattern(k.pattern) {
			p.globs = append(p.globs, k)
			continue
		}
		n := len(k.pattern) - 1
		i := slices.IndexFunc(p.prefixes, func(g prefixGroup) bool { return g.n == n })
		if i < 0 {
			i = len(p.prefixes)
			p.prefixes = append(p.prefixes, prefixGroup{n: n, perms: map[string]int{}})
		}
		p.prefixes[i].perms[k.pattern[:n]] |= k.perm
	}
	return p
}
