package resp

import (
	"context"
	"strings"
	"testing"
)

// TestResolve: RL.RESOLVE names each descriptor's rule and state key, in request
// order, spending nothing; a slice taken of the key it names is spent from the very
// state RL.POLICY charges.
func TestResolve(t *testing.T) {
	ts := startPolicyServer(t)
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		do(rdb, "FLUSHALL")
		run(t, rdb, []call{
			{"RL.RESOLVE api DESCRIPTOR user alice DESCRIPTOR path /login", "[each [enforce rl:api:fixed/60s:user=alice fixed 3 60000000 0 0 3 per-user] " +
				"[enforce rl:api:fixed/1s:path=/login fixed 1 1000000 0 0 1 ]]"},
			{"RL.RESOLVE api DESCRIPTOR llm acme", "[each [enforce rl:api:token/60s:llm=acme token 1000 60000000 1000 0 1000 ]]"},
			{"rl.resolve api descriptor limit 10 hour user bob", "[each [enforce rl:api:fixed/3600s:user=bob fixed 10 3600000000 0 0 10 ]]"},
			{"RL.RESOLVE api DESCRIPTOR internal yes DESCRIPTOR color red", "[each [unlimited (nil) (nil) 0 0 0 0 0 (nil)] [none (nil) (nil) 0 0 0 0 0 (nil)]]"},
			{"RL.RESOLVE nosuch DESCRIPTOR user alice", "[unknown [none (nil) (nil) 0 0 0 0 0 (nil)]]"},
			{"DBSIZE", "0"},
			// Two units sliced from the key RL.RESOLVE named leave RL.POLICY one.
			{"RL.SLICE FIXED rl:api:fixed/60s:user=alice 3 60000 2", "[2 3 1 0 60000 60000]"},
			{"RL.POLICY api DESCRIPTOR user alice", "[1 [1 3 0 60000 0 60000 per-user]]"},
			{"RL.POLICY api DESCRIPTOR user alice", "[2 [2 3 0 60000 60000 60000 per-user]]"},
		})
	}
}

// TestResolveBadInput: every refusal is a Redis error, and changes nothing.
func TestResolveBadInput(t *testing.T) {
	ts := startPolicyServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.RESOLVE", "ERR wrong number of arguments for 'rl.resolve' command"},
		{"RL.RESOLVE api DESCRIPTOR", "ERR wrong number of arguments for 'rl.resolve' command"},
		{"RL.RESOLVE api user alice x", "ERR syntax error"},
		{"RL.RESOLVE api HITS 2 HITS", "ERR syntax error"},
		{"RL.RESOLVE api LIMIT 2 minute", "ERR syntax error"},
		{"RL.RESOLVE api HITS 2 DESCRIPTOR user alice", "ERR RL.RESOLVE spends nothing: it takes no HITS or REFUND"},
		{"RL.RESOLVE api DESCRIPTOR user alice DESCRIPTOR HITS 0 user bob", "ERR RL.RESOLVE spends nothing: it takes no HITS or REFUND"},
		{"RL.RESOLVE api DESCRIPTOR REFUND 1 user alice", "ERR RL.RESOLVE spends nothing: it takes no HITS or REFUND"},
		{"RL.RESOLVE api DESCRIPTOR user alice path", "ERR a descriptor's entries are key value pairs"},
		{"RL.RESOLVE api DESCRIPTOR user alice DESCRIPTOR", "ERR a DESCRIPTOR needs at least one key value pair"},
		{"RL.RESOLVE api DESCRIPTOR LIMIT 0 minute user alice", "ERR requests_per_unit must be an integer between 1 and 4294967295"},
		{"RL.RESOLVE api DESCRIPTOR LIMIT 10 fortnight user alice", "ERR unit must be second, minute, hour, day, week, month or year"},
	})
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.RESOLVE", "", "DESCRIPTOR", "user", "alice"}, "ERR invalid request: rate limit domain must not be empty"},
		{[]any{"RL.RESOLVE", "api", "DESCRIPTOR", "", "alice"}, "ERR invalid request: descriptor 0 entry 0 has an empty key"},
	} {
		if got := format(rdb.Do(context.Background(), c.args...).Result()); got != c.want {
			t.Errorf("%q = %s, want %s", c.args, got, c.want)
		}
	}
	if got := do(rdb, "RL.RESOLVE api"+strings.Repeat(" DESCRIPTOR user alice", 65)); !strings.HasPrefix(got, "ERR invalid request: 65 descriptors") {
		t.Errorf("65 descriptors = %s", got)
	}
	run(t, rdb, []call{{"DBSIZE", "0"}})

	without := startDebugServer(t).client(t, 3)
	run(t, without, []call{{"RL.RESOLVE api DESCRIPTOR user alice", "ERR no policy in force: start rlserver with -limits"}})
}
