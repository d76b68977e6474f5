package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
)

// priorities are a domain's priority classes (docs/policies.md, "Priorities"): the
// shared limiter's reserved capacity, by name. A descriptor names its class in the
// entry key (Envoy fills it from a header with the request_headers action); that entry
// is taken out before matching, so the rules and the state keys are those of the other
// entries, and every class spends from the same state. A class leaves reserve[i]
// percent of each rule's capacity to the classes above it (algo.Request.Reserve).
type priorities struct {
	key     string   // the descriptor entry that names the class
	names   []string // highest first
	reserve []int64  // percent, non-decreasing: a lower class leaves at least as much
	def     int      // the class of a descriptor without the entry
}

// HasPriorities is whether the domain has priority classes (Class, Reserve).
func (d *Domain) HasPriorities() bool { return d.priorities != nil }

// Class takes the priority entry out of a descriptor's entries, into buf, and returns
// the rest and the class: the entry's, or the default without one. A name that is no
// class is an invalid request (policy.ErrInvalidRequest). Only for a domain that
// HasPriorities.
func (d *Domain) Class(entries []policy.Entry, buf []policy.Entry) ([]policy.Entry, int, error) {
	return d.priorities.class(entries, buf)
}

// Reserve is the units class c leaves under a rule's request r (algo.Request.Reserve):
// its percent of the rule's capacity, by algo.Request.ReserveShare. Only for a domain
// that HasPriorities.
func (d *Domain) Reserve(c int, r algo.Request) int64 {
	return r.ReserveShare(d.priorities.reserve[c])
}

// class is Domain.Class.
func (p *priorities) class(entries []policy.Entry, buf []policy.Entry) ([]policy.Entry, int, error) {
	rest, c := buf[:0], p.def
	for _, e := range entries {
		if e.Key != p.key {
			rest = append(rest, e)
			continue
		}
		i := p.index(e.Value)
		if i < 0 {
			return nil, 0, fmt.Errorf("%w: unknown priority '%s' (%s)", policy.ErrInvalidRequest, e.Value, p.listed())
		}
		c = i
	}
	return rest, c, nil
}

// index is the class named name, or -1.
func (p *priorities) index(name string) int {
	for i, n := range p.names {
		if n == name {
			return i
		}
	}
	return -1
}

// text is the classes as MarshalText shows them: "  priorities by KEY: critical,
// normal (leaves 20%, default), batch (leaves 50%)".
func (p *priorities) text() string {
	s := "  priorities by " + p.key + ":"
	for i, n := range p.names {
		if i > 0 {
			s += ","
		}
		s += " " + n
		var notes []string
		if p.reserve[i] > 0 {
			notes = append(notes, fmt.Sprintf("leaves %d%%", p.reserve[i]))
		}
		if i == p.def {
			notes = append(notes, "default")
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return s + "\n"
}

// listed is the class names, highest first, for errors.
func (p *priorities) listed() string {
	s := ""
	for i, n := range p.names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Keys of the priorities map and of a class.
var (
	priorityKeys = keySet("descriptor_key", "default", "classes")
	classKeys    = keySet("name", "reserve_percent")
)

// priorities reads a domain's priorities map: the entry key, the classes highest
// first, each with the share of capacity it leaves to those above it, in order and at
// most 100%, and the default class, by name (the lowest when not given).
func (l *loader) priorities(k, v *yaml.Node) (*priorities, error) {
	if v.Kind != yaml.MappingNode {
		return nil, l.fail(errAt(v, "priorities: cannot unmarshal a %s into a map", kindName(v)), "")
	}
	fs, err := fields(v, "priorities", priorityKeys)
	if err != nil {
		return nil, l.fail(err, "")
	}
	p := &priorities{}
	var def *yaml.Node
	var classes []*yaml.Node
	for _, f := range fs {
		switch f[0].Value {
		case "descriptor_key":
			p.key, err = asString(f[0], f[1])
		case "default":
			def = f[1]
		case "classes":
			classes, err = asMaps(f[0], f[1])
		}
		if err != nil {
			return nil, l.fail(err, "")
		}
	}
	at := func(n *yaml.Node, format string, args ...any) error {
		return &LoadError{File: l.file, Line: n.Line, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.key == "":
		return nil, at(k, "priorities need a descriptor_key")
	case len(classes) == 0:
		return nil, at(k, "priorities need at least one class")
	}
	for _, c := range classes {
		if err := l.class(p, c, at); err != nil {
			return nil, err
		}
	}
	p.def = len(p.names) - 1
	if def != nil {
		name, err := asString(&yaml.Node{Value: "default"}, def)
		if err != nil {
			return nil, l.fail(err, "")
		}
		if p.def = p.index(name); p.def < 0 {
			return nil, at(def, "default: unknown priority '%s' (%s)", name, p.listed())
		}
	}
	return p, nil
}

// class reads one priority class into p, after those above it.
func (l *loader) class(p *priorities, c *yaml.Node, at func(*yaml.Node, string, ...any) error) error {
	fs, err := fields(c, "a priority class", classKeys)
	if err != nil {
		return l.fail(err, "")
	}
	var name string
	var pct uint64
	for _, f := range fs {
		switch f[0].Value {
		case "name":
			name, err = asString(f[0], f[1])
		case "reserve_percent":
			pct, err = asUint(f[0], f[1], 1<<32)
		}
		if err != nil {
			return l.fail(err, "")
		}
	}
	switch {
	case name == "":
		return at(c, "a priority class needs a name")
	case p.index(name) >= 0:
		return at(c, "duplicate priority '%s'", name)
	case pct > 100:
		return at(c, "priority '%s' leaves %d%%: shares are at most 100%%", name, pct)
	case len(p.reserve) > 0 && int64(pct) < p.reserve[len(p.reserve)-1]:
		above := len(p.names) - 1
		return at(c, "priorities not ordered: '%s' leaves %d%%, less than the %d%% of '%s' above it (classes go highest first)",
			name, pct, p.reserve[above], p.names[above])
	}
	p.names = append(p.names, name)
	p.reserve = append(p.reserve, int64(pct))
	return nil
}
