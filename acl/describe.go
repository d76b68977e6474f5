package acl

import (
	"math"
	"strings"
)

// Describe is the user's rules as ACL LIST and the aclfile show them, in Redis
// 7.0's order: flags, password hashes, keys, channels, commands.
func (p *Perms) Describe() string {
	var b strings.Builder
	for _, f := range p.Flags() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, h := range p.passwords {
		b.WriteString("#" + h + " ")
	}
	if p.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range p.keys {
			b.WriteString(k.String() + " ")
		}
	}
	if p.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range p.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(p.CommandRules())
	return b.String()
}

// Flags are the user's flags as ACL GETUSER lists them.
func (p *Perms) Flags() []string {
	f := []string{"off"}
	if p.on {
		f[0] = "on"
	}
	if p.nopass {
		f = append(f, "nopass")
	}
	if p.sanitize != "" {
		f = append(f, p.sanitize)
	}
	return f
}

// Passwords are the SHA-256 hashes of the user's passwords (ACL GETUSER).
func (p *Perms) Passwords() []string { return p.passwords }

func (k keyPattern) String() string {
	switch k.perm {
	case permRead:
		return "%R~" + k.pattern
	case permWrite:
		return "%W~" + k.pattern
	}
	return "~" + k.pattern
}

// Keys is the user's key patterns as ACL GETUSER shows them: "~*", or each
// pattern with its prefix, space-separated.
func (p *Perms) Keys() string {
	if p.allKeys {
		return "~*"
	}
	s := make([]string, len(p.keys))
	for i, k := range p.keys {
		s[i] = k.String()
	}
	return strings.Join(s, " ")
}

// Channels is the user's channel patterns as ACL GETUSER shows them.
func (p *Perms) Channels() string {
	if p.allChannels {
		return "&*"
	}
	s := make([]string, len(p.channels))
	for i, c := range p.channels {
		s[i] = "&" + c
	}
	return strings.Join(s, " ")
}

// CommandRules is the shortest rules Redis 7.0 finds that rebuild the user's
// allowed commands (ACLDescribeSelectorCommandRules): +@all or -@all, then the
// categories that fit best, one by one, then the single commands that differ.
// The rules are applied to a fake user as they are written, to know what still
// differs.
func (p *Perms) CommandRules() string {
	fake := newPerms(p.t)
	rules := []string{"-@all"}
	additive := !p.future
	if p.future {
		rules[0] = "+@all"
		_ = fake.apply("+@all")
	}
	temp := newPerms(p.t)
	copy(temp.allowed, p.allowed)
	applied := make([]bool, len(Categories))
	for {
		best, mindiff, maxsame := -1, math.MaxInt, 0
		for j := range Categories {
			if applied[j] {
				continue
			}
			on, off := temp.count(1 << j)
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < mindiff || diff == mindiff && same > maxsame) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		fake.setCategory(1<<best, additive)
		temp.setCategory(1<<best, !additive)
		sign := "+@"
		if !additive {
			sign = "-@"
		}
		rules = append(rules, sign+Categories[best])
		applied[best] = true
	}
	for id, c := range p.t.cmds {
		if c.parent < 0 {
			rules = p.singleCommands(fake, id, rules)
		}
	}
	return strings.Join(rules, " ")
}

// singleCommands adds the rules for a command, then its subcommands, that fake
// does not have right yet, and the first arguments allowed of a denied command.
func (p *Perms) singleCommands(fake *Perms, id int, rules []string) []string {
	c := p.t.cmds[id]
	if on := p.bit(id); on != fake.bit(id) {
		sign := "-"
		if on {
			sign = "+"
		}
		rules = append(rules, sign+c.name)
		fake.changePerm(id, on)
	}
	for _, sub := range c.subs {
		rules = p.singleCommands(fake, sub, rules)
	}
	if !p.bit(id) {
		for _, a := range p.firstArgs[id] {
			rules = append(rules, "+"+c.name+"|"+a)
		}
	}
	return rules
}

// count is how many commands of a category the rules allow and deny.
func (p *Perms) count(bit uint64) (on, off int) {
	for id, c := range p.t.cmds {
		if c.cats&bit == 0 {
			continue
		}
		if p.bit(id) {
			on++
		} else {
			off++
		}
	}
	return on, off
}
