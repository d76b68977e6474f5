package config

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
)

// Policy is a loaded set of domains. It never changes once loaded: an engine
// replaces it whole. The zero Policy has no domains.
type Policy struct {
	source  string
	domains map[string]*Domain
	names   []string
	rules   int // rules loaded, numbered 0..rules-1 by Rule.Index
}

// Domain is one file's domain: a tree of descriptors.
type Domain struct {
	name         string
	file         string
	line         int
	allOrNothing bool
	priorities   *priorities // nil: no priority classes
	root         *node
}

// node is one descriptor of the tree, keyed in its parent by "key" or "key_value" as
// envoyproxy/ratelimit keys it (so their collisions, key "a_b" and key "a" value "b",
// are refused alike as duplicates).
type node struct {
	children  map[string]*node
	wildcards []string // the children's keys that end in '*', in file order
	rule      *Rule    // nil: no rate_limit at this descriptor
	pattern   string   // share_threshold: the key_value* pattern all matches share
}

func newNode() *node { return &node{children: map[string]*node{}} }

// Rule is one rate_limit, read only: every request it decides shares it.
type Rule struct {
	Domain    string
	Path      string // the composite key without the domain: "key1_value1.subkey1"
	Name      string
	Replaces  []string
	Unlimited bool
	Shadow    bool
	Quota     bool
	Detailed  bool
	Requests  uint32
	Unit      policy.Unit   // policy.UnitUnknown when given by `window`
	Window    time.Duration // the window whatever way it was given
	Request   algo.Request  // the algorithm and its parameters; Cost 1, set per call
	KeyPrefix string        // its keys' bytes up to the first '=' (AppendKey), for the store to intern
	// Index numbers the policy's rules 0..Policy.NumRules()-1, for tables kept per
	// rule; an override no rule matched has -1, one that did its rule's Index.
	Index int
	shown *policy.Limit // Limit(): set when made, before any request
}

// Limit is the rule as a Status shows it, made once and shared by every Status.
func (r *Rule) Limit() *policy.Limit { return r.shown }

// setLimit makes Limit's answer; called once the rule is complete.
func (r *Rule) setLimit() {
	r.shown = &policy.Limit{Name: r.Name, RequestsPerUnit: r.Requests, Unit: r.Unit, Window: r.Window, Algorithm: r.Request.Kind.String()[3:]}
}

// Domain is the domain called name, or nil.
func (p *Policy) Domain(name string) *Domain { return p.domains[name] }

// NumRules is the number of rules the policy loaded.
func (p *Policy) NumRules() int { return p.rules }

// Rules yields every rule of the policy, in no set order.
func (p *Policy) Rules() iter.Seq[*Rule] {
	return func(yield func(*Rule) bool) {
		for _, d := range p.domains {
			stop := false
			d.root.walk("", func(_ string, r *Rule) { stop = stop || !yield(r) })
			if stop {
				return
			}
		}
	}
}

// Name is the domain's name.
func (d *Domain) Name() string { return d.name }

// AllOrNothing is whether the domain charges a request's descriptors all or none.
func (d *Domain) AllOrNothing() bool { return d.allOrNothing }

// Domains lists the policy's domains, sorted.
func (p *Policy) Domains() []string { return slices.Clone(p.names) }

// MarshalText dumps the policy, a line per rate_limit: its domain's file, the
// composite key, the limit, the algorithm and the options set.
func (p *Policy) MarshalText() ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# policy %s: %d domains\n", p.source, len(p.names))
	for _, name := range p.names {
		d := p.domains[name]
		fmt.Fprintf(&b, "domain %s (%s)", d.name, d.file)
		if d.allOrNothing {
			b.WriteString(" all_or_nothing")
		}
		b.WriteByte('\n')
		if d.priorities != nil {
			b.WriteString(d.priorities.text())
		}
		var lines []string
		d.root.walk(d.name, func(path string, r *Rule) {
			s := "  " + path + ": "
			if r.Unlimited {
				s += "unlimited"
			} else {
				s += fmt.Sprintf("%d per %s, %s", r.Requests, windowText(r.Unit, r.Window), r.Request.Kind.String()[3:])
				if r.Request.Kind == algo.KindToken && r.Request.Limit != r.Request.Rate {
					s += fmt.Sprintf(", burst %d", r.Request.Limit)
				} else if r.Request.Burst != 0 || r.Request.Queue != 0 {
					s += fmt.Sprintf(", burst %d", r.Request.Burst+r.Request.Queue)
				}
			}
			for _, opt := range []struct {
				on   bool
				text string
			}{{r.Shadow, "shadow_mode"}, {r.Quota, "quota_mode"}, {r.Detailed, "detailed_metric"}} {
				if opt.on {
					s += ", " + opt.text
				}
			}
			if r.Name != "" {
				s += ", name " + r.Name
			}
			if len(r.Replaces) > 0 {
				s += ", replaces " + strings.Join(r.Replaces, " ")
			}
			lines = append(lines, s)
		})
		slices.Sort(lines)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return []byte(b.String()), nil
}

// walk calls f for every rule under n, with its composite key.
func (n *node) walk(prefix string, f func(path string, r *Rule)) {
	for k, c := range n.children {
		path := prefix + "." + k
		if c.rule != nil {
			f(path, c.rule)
		}
		c.walk(path, f)
	}
}

// windowText is "minute" for a unit, the duration for a window.
func windowText(u policy.Unit, w time.Duration) string {
	if u != policy.UnitUnknown {
		return u.String()
	}
	return w.String()
}
