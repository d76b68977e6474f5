package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The bounds of a policy file: a file past them is refused, never half read.
const (
	// MaxFileSize is the largest policy file read, 8 MiB: envoyproxy/ratelimit's
	// largest real configs are a few hundred KB.
	MaxFileSize = 8 << 20
	// maxYAMLDepth bounds the nesting of YAML collections (a descriptor level takes
	// two: its list and its map), so a deeply nested file cannot exhaust the stack.
	maxYAMLDepth = 128
	// maxYAMLNodes bounds the nodes walked, aliases expanded, so an alias bomb
	// ("billion laughs") is refused instead of walked.
	maxYAMLNodes = 4 << 20
)

// validKeys are the keys envoyproxy/ratelimit accepts at any level (its validKeys),
// and then rlserver's extensions. A key in neither is "unknown", as theirs words it.
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true,
	// rlserver's extensions
	"algorithm": true, "window": true, "burst": true, "all_or_nothing": true,
	"priorities": true, "descriptor_key": true, "default": true, "classes": true, "reserve_percent": true,
}

// The keys of each level. envoyproxy/ratelimit ignores a valid key at the wrong level
// (a `unit` beside `rate_limit` does nothing there); rlserver refuses it.
var (
	rootKeys       = keySet("domain", "descriptors", "all_or_nothing", "priorities")
	descriptorKeys = keySet("key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
		"detailed_metric", "value_to_metric", "share_threshold")
	rateLimitKeys = keySet("unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "window", "burst")
	replacesKeys  = keySet("name")
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// yamlError is an error at a node of a file, before any descriptor path is known.
type yamlError struct {
	line   int
	reason string
}

func (e *yamlError) Error() string { return e.reason }

func errAt(n *yaml.Node, format string, args ...any) error {
	return &yamlError{line: n.Line, reason: fmt.Sprintf(format, args...)}
}

// parseYAML parses data and checks it as envoyproxy/ratelimit's validateYamlKeys does
// (keys are strings and known, lists hold maps, leaves are strings, integers, booleans
// or null), within the bounds above. It returns the top-level map, nil for an empty
// document.
func parseYAML(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &yamlError{line: lineOf(err), reason: "error loading config file: " + err.Error()}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	budget := maxYAMLNodes
	root, err := deref(root, &budget)
	if err != nil {
		return nil, err
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errAt(root, "error loading config file: the document is a %s, not a map", kindName(root))
	}
	if err := validate(root, 0, &budget); err != nil {
		return nil, err
	}
	return root, nil
}

// lineOf reads the line out of a yaml.v3 error ("yaml: line 2: ..."), 0 if none.
func lineOf(err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		s = s[i+5:]
		if j := strings.IndexByte(s, ':'); j > 0 {
			if n, err := strconv.Atoi(s[:j]); err == nil {
				return n
			}
		}
	}
	return 0
}

// deref follows aliases, each one charged to the node budget.
func deref(n *yaml.Node, budget *int) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		if *budget--; *budget < 0 {
			return nil, errAt(n, "error loading config file: more than %d YAML nodes (aliases expanded)", maxYAMLNodes)
		}
		n = n.Alias
	}
	return n, nil
}

// validate is envoyproxy/ratelimit's validateYamlKeys on a map node.
func validate(m *yaml.Node, depth int, budget *int) error {
	if depth > maxYAMLDepth {
		return errAt(m, "error loading config file: nested deeper than %d levels", maxYAMLDepth)
	}
	*budget -= len(m.Content)
	if *budget < 0 {
		return errAt(m, "error loading config file: more than %d YAML nodes (aliases expanded)", maxYAMLNodes)
	}
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, err := deref(m.Content[i], budget)
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return errAt(k, "config error, key is not of type string: %s", k.Value)
		}
		if !validKeys[k.Value] {
			return errAt(k, "config error, unknown key '%s'", k.Value)
		}
		// yaml.v2 keeps the last of two equal keys; one of them is a mistake.
		if seen[k.Value] {
			return errAt(k, "key '%s' given twice in one map", k.Value)
		}
		seen[k.Value] = true
		v, err := deref(m.Content[i+1], budget)
		if err != nil {
			return err
		}
		switch v.Kind {
		case yaml.SequenceNode:
			if depth+1 > maxYAMLDepth {
				return errAt(v, "error loading config file: nested deeper than %d levels", maxYAMLDepth)
			}
			for _, e := range v.Content {
				e, err := deref(e, budget)
				if err != nil {
					return err
				}
				if e.Kind != yaml.MappingNode {
					return errAt(e, "config error, yaml file contains list of type other than map: %s", e.Value)
				}
				if err := validate(e, depth+2, budget); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			if err := validate(v, depth+1, budget); err != nil {
				return err
			}
		case yaml.ScalarNode:
			switch v.Tag {
			case "!!str", "!!int", "!!bool", "!!null":
			default:
				return errAt(v, "error checking config: '%s' is a %s, not a string, integer or boolean", v.Value, v.Tag)
			}
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "map"
	}
	return "scalar " + n.Tag
}

// fields lists a map node's pairs, aliases followed (validate has charged them), and
// refuses a key that is valid but not at this level.
func fields(m *yaml.Node, level string, allowed map[string]bool) ([][2]*yaml.Node, error) {
	out := make([][2]*yaml.Node, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		for k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		for v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if !allowed[k.Value] {
			return nil, errAt(k, "'%s' is not a key of %s", k.Value, level)
		}
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out, nil
}

// asString is a scalar as yaml.v2 sets a string field from it: its text, any tag; ""
// for null.
func asString(k, v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", errAt(v, "%s: cannot unmarshal a %s into a string", k.Value, kindName(v))
	}
	if v.Tag == "!!null" {
		return "", nil
	}
	return v.Value, nil
}

// yaml11Bools are the plain words yaml.v2 (YAML 1.1) reads as booleans.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// asBool is a boolean as yaml.v2 reads one; null is false.
func asBool(k, v *yaml.Node) (bool, error) {
	if v.Kind == yaml.ScalarNode {
		switch {
		case v.Tag == "!!null":
			return false, nil
		case v.Tag == "!!bool":
			return strconv.ParseBool(strings.ToLower(v.Value))
		case v.Tag == "!!str" && v.Style == 0:
			if b, ok := yaml11Bools[v.Value]; ok {
				return b, nil
			}
		}
	}
	return false, errAt(v, "%s: cannot unmarshal '%s' into a boolean", k.Value, v.Value)
}

// asUint is a non-negative integer of at most max, as yaml.v2 reads one into an
// unsigned field (0x, 0o and 0b prefixes, underscores); null is 0.
func asUint(k, v *yaml.Node, max uint64) (uint64, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return 0, nil
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		return 0, errAt(v, "%s: cannot unmarshal '%s' into an unsigned integer", k.Value, v.Value)
	}
	n, err := strconv.ParseUint(strings.ReplaceAll(v.Value, "0o", "0"), 0, 64)
	if err != nil || n > max {
		return 0, errAt(v, "%s: '%s' is not an integer between 0 and %d", k.Value, v.Value, max)
	}
	return n, nil
}

// asMaps is a list of maps (validate has checked its elements), or null.
func asMaps(k, v *yaml.Node) ([]*yaml.Node, error) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, nil
	case v.Kind != yaml.SequenceNode:
		return nil, errAt(v, "%s: cannot unmarshal a %s into a list", k.Value, kindName(v))
	}
	out := make([]*yaml.Node, len(v.Content))
	for i, e := range v.Content {
		for e.Kind == yaml.AliasNode {
			e = e.Alias
		}
		out[i] = e
	}
	return out, nil
}
