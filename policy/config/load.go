package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
)

// LoadError is why a policy file was refused: the file, the line, the descriptor's
// path (envoyproxy/ratelimit's composite key, "domain.key_value.subkey"; empty above
// the descriptors) and the reason, worded as envoyproxy/ratelimit words it where it
// refuses the same thing.
type LoadError struct {
	File   string
	Line   int
	Path   string
	Reason string
}

// Error is "file:line: descriptor 'path': reason".
func (e *LoadError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Path != "" {
		s += fmt.Sprintf(": descriptor '%s'", e.Path)
	}
	return s + ": " + e.Reason
}

// Load reads a policy: a YAML file, or a directory whose *.yaml files (not those
// starting with a dot, such as Kubernetes' ..data) are read in name order, one domain
// each. Any error refuses the whole policy (*LoadError, or the I/O error).
func Load(path string) (*Policy, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".yaml" {
				continue
			}
			files = append(files, filepath.Join(path, name))
		}
	}
	var fs []File
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		fs = append(fs, File{Name: f, Data: data})
	}
	return ParseFiles(path, fs)
}

// File is one policy file: its name, in errors, and its content.
type File struct {
	Name string
	Data []byte
}

// Parse reads one policy file's content, named name in errors: a policy of one domain.
func Parse(name string, data []byte) (*Policy, error) {
	return ParseFiles(name, []File{{Name: name, Data: data}})
}

// ParseFiles reads policy files, a domain each, as Load reads a directory's: any
// error refuses the whole policy (*LoadError). source names the policy in
// MarshalText.
func ParseFiles(source string, files []File) (*Policy, error) {
	p := &Policy{source: source, domains: map[string]*Domain{}}
	for _, f := range files {
		if len(f.Data) > MaxFileSize {
			return nil, &LoadError{File: f.Name, Reason: fmt.Sprintf("file larger than %d bytes", MaxFileSize)}
		}
		d, err := parseDomain(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		if old, ok := p.domains[d.name]; ok {
			return nil, &LoadError{File: f.Name, Line: d.line,
				Reason: fmt.Sprintf("duplicate domain '%s' in config file (also in %s)", d.name, old.file)}
		}
		p.domains[d.name] = d
		p.names = append(p.names, d.name)
	}
	slices.Sort(p.names)
	p.number()
	return p, nil
}

// number gives the policy's rules their Index.
func (p *Policy) number() {
	for r := range p.Rules() {
		r.Index = p.rules
		p.rules++
	}
}

// readFile reads at most MaxFileSize+1 bytes of a file: enough for ParseFiles to
// refuse a longer one, never a huge file in memory.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// loader carries what building one file's domain needs.
type loader struct {
	file   string
	domain string
	top    string // the key of the top-level descriptor being read
}

// fail wraps an error at a descriptor into a LoadError.
func (l *loader) fail(err error, path string) error {
	var ye *yamlError
	if errors.As(err, &ye) {
		return &LoadError{File: l.file, Line: ye.line, Path: path, Reason: ye.reason}
	}
	return &LoadError{File: l.file, Path: path, Reason: err.Error()}
}

// parseDomain builds one file's domain, as envoyproxy/ratelimit's loadConfig does.
func parseDomain(file string, data []byte) (*Domain, error) {
	l := &loader{file: file}
	root, err := parseYAML(data)
	if err != nil {
		return nil, l.fail(err, "")
	}
	d := &Domain{file: file, root: newNode()}
	var descs []*yaml.Node
	if root != nil {
		d.line = root.Line
		fs, err := fields(root, "the top level", rootKeys)
		if err != nil {
			return nil, l.fail(err, "")
		}
		for _, f := range fs {
			k, v := f[0], f[1]
			switch k.Value {
			case "domain":
				d.name, err = asString(k, v)
			case "descriptors":
				descs, err = asMaps(k, v)
			case "all_or_nothing":
				d.allOrNothing, err = asBool(k, v)
			case "priorities":
				if d.priorities, err = l.priorities(k, v); err != nil {
					return nil, err
				}
			}
			if err != nil {
				return nil, l.fail(err, "")
			}
		}
	}
	if d.name == "" {
		return nil, &LoadError{File: file, Line: d.line, Reason: "config file cannot have empty domain"}
	}
	l.domain = d.name
	if err := l.descriptors(d.root, d.name+".", descs, 1); err != nil {
		return nil, err
	}
	return d, nil
}

// yamlDescriptor is one descriptor as the file gives it.
type yamlDescriptor struct {
	key, value                        string
	rateLimit                         *yaml.Node
	rateLimitKey                      *yaml.Node
	children                          []*yaml.Node
	shadow, quota, detailed, shareAll bool
}

// descriptors loads one level, as envoyproxy/ratelimit's loadDescriptors does, with
// its checks in its order.
func (l *loader) descriptors(parent *node, parentKey string, descs []*yaml.Node, depth int) error {
	for _, m := range descs {
		var yd yamlDescriptor
		fs, err := fields(m, "a descriptor", descriptorKeys)
		if err != nil {
			return l.fail(err, strings.TrimSuffix(parentKey, "."))
		}
		for _, f := range fs {
			k, v := f[0], f[1]
			switch k.Value {
			case "key":
				yd.key, err = asString(k, v)
			case "value":
				yd.value, err = asString(k, v)
			case "rate_limit":
				if v.Kind == yaml.MappingNode {
					yd.rateLimit, yd.rateLimitKey = v, k
				} else if v.Tag != "!!null" {
					err = errAt(v, "rate_limit: cannot unmarshal a %s into a map", kindName(v))
				}
			case "descriptors":
				yd.children, err = asMaps(k, v)
			case "shadow_mode":
				yd.shadow, err = asBool(k, v)
			case "quota_mode":
				yd.quota, err = asBool(k, v)
			case "detailed_metric":
				yd.detailed, err = asBool(k, v)
			case "value_to_metric":
				// Read for its type only: the metrics here are per rule (docs/policies.md).
				_, err = asBool(k, v)
			case "share_threshold":
				yd.shareAll, err = asBool(k, v)
			}
			if err != nil {
				return l.fail(err, strings.TrimSuffix(parentKey, "."))
			}
		}
		at := func(reason string, args ...any) error {
			return &LoadError{File: l.file, Line: m.Line, Path: strings.TrimSuffix(parentKey, "."), Reason: fmt.Sprintf(reason, args...)}
		}
		if yd.key == "" {
			return at("descriptor has empty key")
		}
		if depth == 1 {
			l.top = yd.key
		}
		finalKey := yd.key
		if yd.value != "" {
			finalKey += "_" + yd.value
		}
		path := parentKey + finalKey
		if _, dup := parent.children[finalKey]; dup {
			return at("duplicate descriptor composite key '%s'", path)
		}
		n := newNode()
		if yd.rateLimit != nil {
			r, err := l.rule(yd, path)
			if err != nil {
				return err
			}
			n.rule = r
		}
		wild := strings.HasSuffix(finalKey, "*")
		if yd.shareAll && !wild {
			return at("share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", finalKey)
		}
		if yd.shareAll {
			n.pattern = finalKey
		}
		if wild {
			parent.wildcards = append(parent.wildcards, finalKey)
		}
		if depth >= policy.MaxEntries && len(yd.children) > 0 {
			return at("descriptors nested deeper than %d levels", policy.MaxEntries)
		}
		if err := l.descriptors(n, path+".", yd.children, depth+1); err != nil {
			return err
		}
		parent.children[finalKey] = n
	}
	return nil
}

// algorithms maps the `algorithm` names to their kinds.
var algorithms = map[string]algo.Kind{
	"fixed": algo.KindFixed, "slide": algo.KindSlide, "log": algo.KindLog,
	"token": algo.KindToken, "gcra": algo.KindGCRA, "leaky": algo.KindLeaky,
}

// Bounds of the extensions' values, those of the RL.* commands (docs/commands.md).
const (
	maxAlgoLimit = 1_000_000_000
	maxWindow    = 365 * 24 * time.Hour
	maxLogLimit  = 100_000 // store.DefaultMaxLogLimit
)

// rule reads a descriptor's rate_limit, as envoyproxy/ratelimit's loadDescriptors does,
// then rlserver's algorithm, window and burst.
func (l *loader) rule(yd yamlDescriptor, path string) (*Rule, error) {
	r := &Rule{Domain: l.domain, Path: strings.TrimPrefix(path, l.domain+"."), Shadow: yd.shadow,
		Quota: yd.quota, Detailed: yd.detailed}
	line := yd.rateLimitKey.Line
	at := func(reason string, args ...any) error {
		return &LoadError{File: l.file, Line: line, Path: path, Reason: fmt.Sprintf(reason, args...)}
	}
	fs, err := fields(yd.rateLimit, "rate_limit", rateLimitKeys)
	if err != nil {
		return nil, l.fail(err, path)
	}
	var unit, window, algorithm string
	var rpu, burst uint64
	var replaces []*yaml.Node
	for _, f := range fs {
		k, v := f[0], f[1]
		switch k.Value {
		case "unit":
			unit, err = asString(k, v)
		case "requests_per_unit":
			rpu, err = asUint(k, v, 1<<32-1)
		case "unlimited":
			r.Unlimited, err = asBool(k, v)
		case "name":
			r.Name, err = asString(k, v)
		case "replaces":
			replaces, err = asMaps(k, v)
		case "algorithm":
			algorithm, err = asString(k, v)
		case "window":
			window, err = asString(k, v)
		case "burst":
			burst, err = asUint(k, v, maxAlgoLimit)
		}
		if err != nil {
			return nil, l.fail(err, path)
		}
	}
	u, validUnit := policy.ParseUnit(unit)
	switch {
	case r.Unlimited && validUnit:
		return nil, at("should not specify rate limit unit when unlimited")
	case r.Unlimited && (window != "" || algorithm != "" || burst != 0):
		return nil, at("an unlimited rate_limit takes no window, algorithm or burst")
	case !r.Unlimited && window != "" && unit != "":
		return nil, at("give unit or window, not both")
	case !r.Unlimited && window == "" && !validUnit:
		return nil, at("invalid rate limit unit '%s'", unit)
	}
	r.Unit, r.Requests = u, uint32(rpu)
	for _, rep := range replaces {
		var name string
		rfs, err := fields(rep, "a replaces entry", replacesKeys)
		if err == nil && len(rfs) > 0 {
			name, err = asString(rfs[0][0], rfs[0][1])
		}
		if err != nil {
			return nil, l.fail(err, path)
		}
		r.Replaces = append(r.Replaces, name)
	}
	for _, name := range r.Replaces {
		if name == "" {
			return nil, at("should not have an empty replaces entry")
		}
		if name == r.Name {
			return nil, at("replaces should not contain name of same descriptor")
		}
	}
	if r.Unlimited {
		return r, nil
	}
	r.Window = u.Duration()
	if window != "" {
		if r.Window, err = time.ParseDuration(window); err != nil || r.Window < time.Millisecond || r.Window > maxWindow {
			return nil, at("window '%s' is not a duration between 1ms and 8760h (365 days)", window)
		}
		if r.Window%time.Microsecond != 0 {
			return nil, at("window '%s' is not a whole number of microseconds", window)
		}
	}
	kind := algo.KindFixed
	if algorithm != "" {
		k, ok := algorithms[algorithm]
		if !ok {
			return nil, at("unknown algorithm '%s' (fixed, slide, log, token, gcra or leaky)", algorithm)
		}
		kind = k
	}
	if err := r.checkAlgorithm(kind, burst); err != nil {
		return nil, at("%s", err)
	}
	r.setLimit()
	r.KeyPrefix = string(append(escape(appendRulePrefix(nil, l.domain, kind.String()[3:], r.Window), l.top), '='))
	return r, nil
}

// checkAlgorithm checks the limit and burst against the ranges of algorithm kind and
// sets the rule's Request.
func (r *Rule) checkAlgorithm(kind algo.Kind, burst uint64) error {
	name := kind.String()[3:]
	req := algo.Request{Kind: kind, Limit: int64(r.Requests), Window: r.Window.Microseconds(), Cost: 1}
	if kind == algo.KindFixed {
		if burst != 0 {
			return errors.New("burst applies to the token, gcra and leaky algorithms")
		}
		r.Request = req
		return nil
	}
	if r.Requests < 1 || r.Requests > maxAlgoLimit {
		return fmt.Errorf("requests_per_unit must be between 1 and %d for algorithm %s", maxAlgoLimit, name)
	}
	switch kind {
	case algo.KindLog:
		if r.Requests > maxLogLimit {
			return fmt.Errorf("requests_per_unit must be at most %d for algorithm log", maxLogLimit)
		}
		fallthrough
	case algo.KindSlide:
		if burst != 0 {
			return errors.New("burst applies to the token, gcra and leaky algorithms")
		}
	case algo.KindToken:
		// The bucket holds burst tokens and refills requests_per_unit per window.
		req.Rate = req.Limit
		if burst != 0 {
			req.Limit = int64(burst)
		}
	case algo.KindGCRA:
		req.Burst = int64(burst)
	case algo.KindLeaky:
		req.Queue = int64(burst)
	}
	if err := CheckSchedule(req); err != nil {
		return fmt.Errorf("burst and window out of range: %w", err)
	}
	r.Request = req
	return nil
}

// CheckSchedule is algo.Request.CheckSchedule for the kinds it bounds (it divides by
// the limit, which a fixed window may have 0): a rule's request, or a call's with its
// hits as Cost.
func CheckSchedule(r algo.Request) error {
	if r.Kind == algo.KindGCRA || r.Kind == algo.KindLeaky {
		return r.CheckSchedule()
	}
	return nil
}

// Override is a descriptor's own limit as envoyproxy/ratelimit applies it: in place of
// whatever rule matched (or none), with no name, replaces, shadow or quota mode; here
// it keeps the matched rule's algorithm when that is not fixed, and its Path and
// Index, so that both count in one rule's metrics. The error wraps
// policy.ErrInvalidRequest.
func (d *Domain) Override(matched *Rule, o policy.Override) (*Rule, error) {
	w := o.Unit.Duration()
	if w == 0 {
		return nil, fmt.Errorf("%w: limit override with unit %d", policy.ErrInvalidRequest, o.Unit)
	}
	r := &Rule{Domain: d.name, Path: OverridePath, Index: -1, Requests: o.RequestsPerUnit, Unit: o.Unit, Window: w}
	kind := algo.KindFixed
	if matched != nil && !matched.Unlimited {
		kind, r.Path, r.Index = matched.Request.Kind, matched.Path, matched.Index
	}
	if err := r.checkAlgorithm(kind, 0); err != nil {
		return nil, fmt.Errorf("%w: limit override: %v", policy.ErrInvalidRequest, err)
	}
	r.setLimit()
	return r, nil
}

// OverridePath is the Path of a limit override no rule matched.
const OverridePath = "(override)"
