package xds

import (
	"fmt"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/rlserver/rlserver/policy/config"
)

// Policy is the policy xDS resources of version deliver: each RateLimitConfig as the
// policy file envoyproxy/ratelimit makes of it (its ConfigXdsProtoToYaml), all loaded
// together as a directory's files are. A resource that is no RateLimitConfig, one with
// a field unknown to this build (a newer control plane's, which dropping would
// misapply), or files that do not load, are an error naming the resource.
func Policy(version string, resources []*anypb.Any) (*config.Policy, error) {
	files := make([]config.File, 0, len(resources))
	for i, res := range resources {
		var rc rlsconf.RateLimitConfig
		if err := res.UnmarshalTo(&rc); err != nil {
			return nil, fmt.Errorf("resource %d: %w", i, err)
		}
		if path := unknownField(rc.ProtoReflect(), "RateLimitConfig"); path != "" {
			return nil, fmt.Errorf("resource %d (%s): %s has a field this rlserver does not know", i, rc.GetName(), path)
		}
		data, err := yaml.Marshal(file{Domain: rc.GetDomain(), Descriptors: descriptors(rc.GetDescriptors())})
		if err != nil {
			return nil, fmt.Errorf("resource %d (%s): %w", i, rc.GetName(), err)
		}
		files = append(files, config.File{Name: "xds:" + rc.GetName(), Data: data})
	}
	return config.ParseFiles("xds version "+version, files)
}

// file, descriptor, rateLimit and replace are a policy file's YAML, as
// envoyproxy/ratelimit writes it from a RateLimitConfig.
type file struct {
	Domain      string       `yaml:"domain"`
	Descriptors []descriptor `yaml:"descriptors,omitempty"`
}

type descriptor struct {
	Key            string       `yaml:"key"`
	Value          string       `yaml:"value,omitempty"`
	RateLimit      *rateLimit   `yaml:"rate_limit,omitempty"`
	Descriptors    []descriptor `yaml:"descriptors,omitempty"`
	ShadowMode     bool         `yaml:"shadow_mode,omitempty"`
	DetailedMetric bool         `yaml:"detailed_metric,omitempty"`
}

type rateLimit struct {
	Unit            string    `yaml:"unit,omitempty"`
	RequestsPerUnit uint32    `yaml:"requests_per_unit"`
	Unlimited       bool      `yaml:"unlimited,omitempty"`
	Name            string    `yaml:"name,omitempty"`
	Replaces        []replace `yaml:"replaces,omitempty"`
}

type replace struct {
	Name string `yaml:"name"`
}

// descriptors converts a RateLimitConfig's descriptors.
func descriptors(pb []*rlsconf.RateLimitDescriptor) []descriptor {
	out := make([]descriptor, len(pb))
	for i, d := range pb {
		out[i] = descriptor{Key: d.GetKey(), Value: d.GetValue(), RateLimit: rateLimitOf(d.GetRateLimit()),
			Descriptors: descriptors(d.GetDescriptors()), ShadowMode: d.GetShadowMode(), DetailedMetric: d.GetDetailedMetric()}
	}
	return out
}

// rateLimitOf converts a RateLimitPolicy (nil: none). An unlimited one's unset unit
// is left out, as the file would leave it; any other unit is written by its name,
// UNKNOWN included, which the loader refuses as theirs does.
func rateLimitOf(pb *rlsconf.RateLimitPolicy) *rateLimit {
	if pb == nil {
		return nil
	}
	r := &rateLimit{RequestsPerUnit: pb.GetRequestsPerUnit(), Unlimited: pb.GetUnlimited(), Name: pb.GetName()}
	if !r.Unlimited || pb.GetUnit() != rlsconf.RateLimitUnit_UNKNOWN {
		r.Unit = pb.GetUnit().String()
	}
	for _, rep := range pb.GetReplaces() {
		r.Replaces = append(r.Replaces, replace{Name: rep.GetName()})
	}
	return r
}

// unknownField is the path of the first message under m, m itself named path, that
// carries fields its type does not declare; "" if none does.
func unknownField(m protoreflect.Message, path string) string {
	if len(m.GetUnknown()) > 0 {
		return path
	}
	var found string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		name := path + "." + string(fd.Name())
		if fd.IsList() {
			for i := range v.List().Len() {
				if found = unknownField(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", name, i)); found != "" {
					return false
				}
			}
			return true
		}
		found = unknownField(v.Message(), name)
		return found == ""
	})
	return found
}
