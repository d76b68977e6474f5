package xds

import (
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// TestPolicyRefuses is a table of bad resources, each with its error: nothing of
// them is put in force (Run NACKs with the error).
func TestPolicyRefuses(t *testing.T) {
	user := func(unit rlsconf.RateLimitUnit) *rlsconf.RateLimitDescriptor {
		return &rlsconf.RateLimitDescriptor{Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: unit, RequestsPerUnit: 1}}
	}
	for _, tc := range []struct {
		name      string
		resources []proto.Message
		want      string
	}{
		{"another type", []proto.Message{&core.Node{Id: "x"}}, "resource 0"},
		{"bad unit", []proto.Message{&rlsconf.RateLimitConfig{Name: "a", Domain: "a", Descriptors: []*rlsconf.RateLimitDescriptor{user(rlsconf.RateLimitUnit_UNKNOWN)}}},
			"descriptor 'a.user': invalid rate limit unit 'UNKNOWN'"},
		{"duplicate keys", []proto.Message{&rlsconf.RateLimitConfig{Name: "a", Domain: "a", Descriptors: []*rlsconf.RateLimitDescriptor{
			user(rlsconf.RateLimitUnit_SECOND), user(rlsconf.RateLimitUnit_MINUTE)}}}, "duplicate"},
		{"duplicate domains", []proto.Message{&rlsconf.RateLimitConfig{Name: "a", Domain: "d"}, &rlsconf.RateLimitConfig{Name: "b", Domain: "d"}},
			"duplicate domain 'd'"},
		{"empty domain", []proto.Message{&rlsconf.RateLimitConfig{Name: "a"}}, "empty domain"},
		{"unknown field", []proto.Message{withUnknown(&rlsconf.RateLimitConfig{Name: "a", Domain: "a", Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "k", Descriptors: []*rlsconf.RateLimitDescriptor{user(rlsconf.RateLimitUnit_SECOND)}}}})},
			"resource 0 (a): RateLimitConfig.descriptors[0].descriptors[0].rate_limit has a field this rlserver does not know"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res []*anypb.Any
			for _, m := range tc.resources {
				a, err := anypb.New(m)
				if err != nil {
					t.Fatal(err)
				}
				res = append(res, a)
			}
			if _, err := Policy("1", res); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Policy: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestPolicyAsTheirYAML: a RateLimitConfig loads to the rules its policy file would.
func TestPolicyAsTheirYAML(t *testing.T) {
	a, err := anypb.New(&rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "user", Value: "8080", ShadowMode: true, RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 7, Name: "u"}},
		{Key: "path", DetailedMetric: true, Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "method", Value: "GET", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true, Replaces: []*rlsconf.RateLimitReplace{{Name: "u"}}}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Policy("7", []*anypb.Any{a})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := p.MarshalText()
	want := "# policy xds version 7: 1 domains\ndomain edge (xds:edge)\n" +
		"  edge.path.method_GET: unlimited, replaces u\n" +
		"  edge.user_8080: 7 per hour, fixed, shadow_mode, name u\n"
	if string(text) != want {
		t.Fatalf("policy:\n%s\nwant:\n%s", text, want)
	}
}

// withUnknown is rc with field 99, which RateLimitPolicy does not declare, on the
// rate limit of its first descriptor's first child.
func withUnknown(rc *rlsconf.RateLimitConfig) *rlsconf.RateLimitConfig {
	rl := rc.Descriptors[0].Descriptors[0].RateLimit.ProtoReflect()
	rl.SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	return rc
}
