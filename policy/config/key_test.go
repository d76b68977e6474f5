package config

import (
	"testing"
	"time"

	"github.com/rlserver/rlserver/policy"
)

// TestAppendKeyEscapes checks that escaping keeps apart what plain joining of the
// entries would merge.
func TestAppendKeyEscapes(t *testing.T) {
	a := appendKey(nil, "d", []policy.Entry{{Key: "a", Value: "b:c=d"}}, nil, "fixed", time.Minute)
	b := appendKey(nil, "d", []policy.Entry{{Key: "a", Value: "b"}, {Key: "c", Value: "d"}}, nil, "fixed", time.Minute)
	if string(a) == string(b) {
		t.Fatalf("two descriptors share key %q", a)
	}
}
