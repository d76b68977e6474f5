package resp

import (
	"context"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/policy/config"
)

// testPolicy is a domain with a named per-user limit, a value-specific one, an
// unlimited key and a token bucket (rlserver's extension).
const testPolicy = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3, name: per-user}
  - key: path
    value: /login
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: internal
    rate_limit: {unlimited: true}
  - key: llm
    rate_limit: {window: 60s, requests_per_unit: 1000, algorithm: token}
`

// startPolicyServer starts a server deciding by testPolicy, its clock frozen at t0.
func startPolicyServer(t *testing.T) *testServer {
	t.Helper()
	p, err := config.Parse("api.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{EnableDebugCommand: true, Policy: p})
	ts.core.SetClock(t0)
	return ts
}

// TestPolicy decides requests through RL.POLICY: every field of the reply, the
// descriptors in request order, hits, refunds, overrides, the rule in force, and the
// store keys the engine writes.
func TestPolicy(t *testing.T) {
	ts := startPolicyServer(t)
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		do(rdb, "FLUSHALL")
		run(t, rdb, []call{
			{"RL.POLICY api DESCRIPTOR user alice", "[1 [1 3 2 60000 0 60000 per-user]]"},
			{"RL.POLICY api HITS 2 DESCRIPTOR user alice", "[1 [1 3 0 60000 0 60000 per-user]]"},
			{"RL.POLICY api DESCRIPTOR user alice DESCRIPTOR path /login", "[2 [2 3 0 60000 60000 60000 per-user] [1 1 0 1000 0 1000 ]]"},
			// A refused fixed window counts its hits too, as envoyproxy/ratelimit's INCRBY
			// (4 of 3 now); a refund gives 2 back, HITS 0 checks without spending.
			{"RL.POLICY api DESCRIPTOR REFUND 2 user alice", "[1 [1 3 1 60000 0 60000 per-user]]"},
			{"RL.POLICY api DESCRIPTOR HITS 0 user alice", "[1 [1 3 1 60000 0 60000 per-user]]"},
			// The descriptor's own limit overrides the rule's (and is unnamed).
			{"rl.policy api descriptor limit 10 hour user bob", "[1 [1 10 9 3600000 0 3600000 ]]"},
			// No rule, unlimited, an unknown domain: OK, no limit.
			{"RL.POLICY api DESCRIPTOR color red", "[1 [1 0 0 0 0 0 (nil)]]"},
			{"RL.POLICY api DESCRIPTOR internal yes", "[1 [1 0 4294967295 0 0 0 (nil)]]"},
			{"RL.POLICY nosuch DESCRIPTOR user alice", "[1 [1 0 0 0 0 0 (nil)]]"},
			// An LLM gateway: reserve 800 tokens, give back the 500 unused.
			{"RL.POLICY api DESCRIPTOR HITS 800 llm acme", "[1 [1 1000 200 48000 0 60000 ]]"},
			{"RL.POLICY api DESCRIPTOR REFUND 500 llm acme", "[1 [1 1000 700 18000 0 60000 ]]"},
		})
		if keys := do(rdb, "SCAN 0 COUNT 100"); !strings.Contains(keys, "user=alice") {
			t.Errorf("SCAN = %s: the engine's keys name their descriptors", keys)
		}
	}
}

// TestPolicyBadInput: every refusal is a Redis error, and spends nothing.
func TestPolicyBadInput(t *testing.T) {
	ts := startPolicyServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.POLICY", "ERR wrong number of arguments for 'rl.policy' command"},
		{"RL.POLICY api DESCRIPTOR", "ERR wrong number of arguments for 'rl.policy' command"},
		{"RL.POLICY api HITS 2", "ERR RL.POLICY needs at least one DESCRIPTOR"},
		{"RL.POLICY api user alice", "ERR syntax error"},
		{"RL.POLICY api HITS 2 HITS", "ERR syntax error"},
		{"RL.POLICY api HITS 0 DESCRIPTOR user alice", "ERR hits must be an integer between 1 and 1099511627776"},
		{"RL.POLICY api HITS x DESCRIPTOR user alice", "ERR hits must be an integer between 1 and 1099511627776"},
		{"RL.POLICY api HITS 3 HITS", "ERR syntax error"},
		{"RL.POLICY api FOO 1 DESCRIPTOR user alice", "ERR syntax error"},
		{"RL.POLICY api DESCRIPTOR user", "ERR a descriptor's entries are key value pairs"},
		{"RL.POLICY api DESCRIPTOR user alice path", "ERR a descriptor's entries are key value pairs"},
		{"RL.POLICY api DESCRIPTOR user alice DESCRIPTOR", "ERR a DESCRIPTOR needs at least one key value pair"},
		{"RL.POLICY api DESCRIPTOR HITS -1 user alice", "ERR hits must be an integer between 0 and 1099511627776"},
		{"RL.POLICY api DESCRIPTOR REFUND 0 user alice", "ERR refund must be an integer between 1 and 1099511627776"},
		{"RL.POLICY api DESCRIPTOR HITS 1 REFUND 1 user alice", "ERR a DESCRIPTOR takes HITS or REFUND, not both"},
		{"RL.POLICY api DESCRIPTOR LIMIT 0 minute user alice", "ERR requests_per_unit must be an integer between 1 and 4294967295"},
		{"RL.POLICY api DESCRIPTOR LIMIT 10 fortnight user alice", "ERR unit must be second, minute, hour, day, week, month or year"},
		{"RL.POLICY api DESCRIPTOR LIMIT 10", "ERR syntax error"},
		{"RL.POLICY api DESCRIPTOR HITS 1 LIMIT 5 minute", "ERR a DESCRIPTOR needs at least one key value pair"},
	})
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.POLICY", "", "DESCRIPTOR", "user", "alice"}, "ERR invalid request: rate limit domain must not be empty"},
		{[]any{"RL.POLICY", "api", "DESCRIPTOR", "", "alice"}, "ERR invalid request: descriptor 0 entry 0 has an empty key"},
	} {
		if got := format(rdb.Do(context.Background(), c.args...).Result()); got != c.want {
			t.Errorf("%q = %s, want %s", c.args, got, c.want)
		}
	}
	run(t, rdb, []call{{"DBSIZE", "0"}})
	many := "RL.POLICY api" + strings.Repeat(" DESCRIPTOR user alice", 65)
	if got := do(rdb, many); !strings.HasPrefix(got, "ERR invalid request: 65 descriptors") {
		t.Errorf("65 descriptors = %s", got)
	}
	if got := do(rdb, "RL.POLICY api DESCRIPTOR user "+strings.Repeat("x", 5000)); !strings.HasPrefix(got, "ERR invalid request: ") {
		t.Errorf("a 5000-byte value = %s", got)
	}
	run(t, rdb, []call{{"DBSIZE", "0"}})
}

// TestPolicyWithout: a server without -limits says so; a replica refuses RL.POLICY.
func TestPolicyWithout(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.POLICY api DESCRIPTOR user alice", "ERR no policy in force: start rlserver with -limits"},
		{"RL.LIMITS", "ERR no policy in force: start rlserver with -limits"},
		{"RL.LIMITS x", "ERR wrong number of arguments for 'rl.limits' command"},
	})
	p, err := config.Parse("api.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	primary := startServer(t, Config{})
	replica := startServer(t, Config{Config: core.Config{ReplicaOf: primary.addr}, Policy: p})
	rc := replica.client(t, 3)
	waitLinkUp(t, rc)
	run(t, rc, []call{{"RL.POLICY api DESCRIPTOR user alice", errReadOnly}})
}

// TestLimits shows the policy in force.
func TestLimits(t *testing.T) {
	ts := startPolicyServer(t)
	got := do(ts.client(t, 3), "RL.LIMITS")
	for _, want := range []string{"domain api (api.yaml)", "api.user: 3 per minute, fixed", "name per-user", "api.internal: unlimited"} {
		if !strings.Contains(got, want) {
			t.Errorf("RL.LIMITS = %q, lacks %q", got, want)
		}
	}
}

// TestTop lists who is refused most: RL.* keys and policy descriptors together, most
// first, over the last minute only.
func TestTop(t *testing.T) {
	ts := startPolicyServer(t)
	rdb := ts.client(t, 3)
	for range 5 {
		do(rdb, "RL.FIXED login:mallory 1 60000")
		do(rdb, "RL.POLICY api DESCRIPTOR path /login")
	}
	for range 3 {
		do(rdb, "CL.THROTTLE cell 0 1 60")
		do(rdb, "RL.FIXED login:mallory 1 60000 PEEK") // PEEK does not count
		do(rdb, "RL.TOKEN calm 10 1000")               // allowed: not counted
	}
	run(t, rdb, []call{
		{"RL.TOP", "[[descriptor api path=/login 4] [key rl.fixed login:mallory 4] [key cl.throttle cell 2]]"},
		{"RL.TOP COUNT 1", "[[descriptor api path=/login 4]]"},
		{"RL.TOP COUNT 0", "ERR count must be an integer between 1 and 1000"},
		{"RL.TOP COUNT 1001", "ERR count must be an integer between 1 and 1000"},
		{"RL.TOP COUNT", "ERR syntax error"},
		{"RL.TOP LIMIT 3", "ERR syntax error"},
		{"DEBUG CLOCK ADVANCE 61000000", "OK"}, // a minute later: forgotten
		{"RL.TOP", "[]"},
	})
}
