package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/algo"
)

// Policy is a loaded set of domains. It never changes once loaded; Engine.SetPolicy
// replaces it whole.
type Policy struct {
	source  string
	domains map[string]*domain
	names   []string
}

// domain is one file's domain: a tree of descriptors.
type domain struct {
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
	rule      *rule    // nil: no rate_limit at this descriptor
	pattern   string   // share_threshold: the key_value* pattern all matches share
}

func newNode() *node { return &node{children: map[string]*node{}} }

// rule is one rate_limit.
type rule struct {
	domain    string
	path      string // the composite key without the domain: "key1_value1.subkey1"
	name      string
	replaces  []string
	unlimited bool
	shadow    bool
	quota     bool
	detailed  bool
	requests  uint32
	unit      Unit
	window    time.Duration
	kind      algo.Kind
	req       algo.Request              // the request template; Cost set per call
	keyPrefix string                    // its keys' bytes up to the first '=' (appendKey), interned by the store
	stats     atomic.Pointer[ruleStats] // the last engine's counters, found on first use
	shown     *Limit                    // limit(): set when loaded, before any request
}

// limit is the rule as a Status shows it, made once and shared by every Status.
func (r *rule) limit() *Limit {
	if r.shown == nil {
		r.shown = &Limit{Name: r.name, RequestsPerUnit: r.requests, Unit: r.unit, Window: r.window, Algorithm: r.kind.String()[3:]}
	}
	return r.shown
}

// unitNames are RLS v3's unit names, as envoyproxy/ratelimit reads them (upper-cased).
var unitNames = map[string]Unit{
	"SECOND": UnitSecond, "MINUTE": UnitMinute, "HOUR": UnitHour, "DAY": UnitDay,
	"WEEK": UnitWeek, "MONTH": UnitMonth, "YEAR": UnitYear,
}

// Duration is the unit's window as envoyproxy/ratelimit's UnitToDivider has it (a
// month is 30 days, a year 365), 0 for UnitUnknown.
func (u Unit) Duration() time.Duration {
	const day = 24 * time.Hour
	switch u {
	case UnitSecond:
		return time.Second
	case UnitMinute:
		return time.Minute
	case UnitHour:
		return time.Hour
	case UnitDay:
		return day
	case UnitWeek:
		return 7 * day
	case UnitMonth:
		return 30 * day
	case UnitYear:
		return 365 * day
	}
	return 0
}

// String is the unit's RLS name in lower case ("second"...), "unknown" otherwise.
func (u Unit) String() string {
	for name, v := range unitNames {
		if v == u {
			return strings.ToLower(name)
		}
	}
	return "unknown"
}

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
		var lines []string
		d.root.walk(d.name, func(path string, r *rule) {
			s := "  " + path + ": "
			if r.unlimited {
				s += "unlimited"
			} else {
				s += fmt.Sprintf("%d per %s, %s", r.requests, windowText(r.unit, r.window), r.kind.String()[3:])
				if r.kind == algo.KindToken && r.req.Limit != r.req.Rate {
					s += fmt.Sprintf(", burst %d", r.req.Limit)
				} else if r.req.Burst != 0 || r.req.Queue != 0 {
					s += fmt.Sprintf(", burst %d", r.req.Burst+r.req.Queue)
				}
			}
			for _, opt := range []struct {
				on   bool
				text string
			}{{r.shadow, "shadow_mode"}, {r.quota, "quota_mode"}, {r.detailed, "detailed_metric"}} {
				if opt.on {
					s += ", " + opt.text
				}
			}
			if r.name != "" {
				s += ", name " + r.name
			}
			if len(r.replaces) > 0 {
				s += ", replaces " + strings.Join(r.replaces, " ")
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
func (n *node) walk(prefix string, f func(path string, r *rule)) {
	for k, c := range n.children {
		path := prefix + "." + k
		if c.rule != nil {
			f(path, c.rule)
		}
		c.walk(path, f)
	}
}

// windowText is "minute" for a unit, the duration for a window.
func windowText(u Unit, w time.Duration) string {
	if u != UnitUnknown {
		return u.String()
	}
	return w.String()
}
