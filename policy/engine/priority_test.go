package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/policy"
)

const priorityPolicy = `domain: d
priorities:
  descriptor_key: priority
  classes:
    - name: critical
    - name: normal
      reserve_percent: 20
    - name: batch
      reserve_percent: 50
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token}
`

// TestPriorities: each class spends from the one state of the descriptor's other
// entries, leaving its share to the classes above it: of 10 a minute, batch gets 5,
// normal up to 8, critical the rest. A refusal by the reserve alone spends nothing
// (the default mode otherwise counts refused hits, as envoyproxy/ratelimit); a
// descriptor without the entry is the lowest class; an unknown class is an invalid
// request that spends nothing.
func TestPriorities(t *testing.T) {
	for _, key := range []string{"remote_address", "user"} {
		t.Run(key, func(t *testing.T) {
			e, st := newEngine(t, priorityPolicy)
			call := func(class string) (policy.Code, error) {
				d := desc(key, "10.0.0.1")
				if class != "" {
					d = desc("priority", class, key, "10.0.0.1")
				}
				r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{d}}, t0)
				return r.Overall, err
			}
			O, X := policy.CodeOK, policy.CodeOverLimit
			for i, step := range []struct {
				class string
				want  policy.Code
			}{
				{"batch", O}, {"batch", O}, {"batch", O}, {"batch", O}, {"batch", O},
				{"batch", X}, {"", X}, // 5 left: batch leaves them
				{"normal", O}, {"normal", O}, {"normal", O},
				{"normal", X}, // 2 left: normal leaves them
				{"batch", X},
				{"critical", O}, {"critical", O},
				{"critical", X},
			} {
				if got, err := call(step.class); err != nil || got != step.want {
					t.Fatalf("call %d (%q): %v, %v; want %v", i, step.class, got, err, step.want)
				}
			}
			if _, err := call("urgent"); !errors.Is(err, policy.ErrInvalidRequest) || !strings.Contains(err.Error(), "unknown priority 'urgent' (critical, normal, batch)") {
				t.Fatalf("an unknown class: %v", err)
			}
			if _, keys := st.Scan(0, 10, nil, 0, t0); len(keys) != 1 || !strings.HasSuffix(string(keys[0]), ":"+key+"=10.0.0.1") {
				t.Errorf("keys %q: want the one state of the entries less the priority", keys)
			}
		})
	}
}

// TestPriorityCountsNothingRefusedByReserve: in the default mode a batch flood over
// its share leaves the count where it was, so critical keeps the whole reserve.
func TestPriorityCountsNothingRefusedByReserve(t *testing.T) {
	e, _ := newEngine(t, priorityPolicy)
	for range 100 {
		e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("priority", "batch", "remote_address", "a")}}, t0)
	}
	r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("priority", "critical", "remote_address", "a")}}, t0)
	if err != nil || r.Overall != policy.CodeOK || r.Statuses[0].Remaining != 4 {
		t.Fatalf("critical after a batch flood: %+v, %v; want OK with 4 remaining (10 - 5 batch - 1)", r, err)
	}
}
