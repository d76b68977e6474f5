package resp

import (
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

// TestRefund: REFUND on every RL.* command and CL.THROTTLE gives back what was spent,
// never more than a fresh key has, answers the five fields after it, and creates no key
// where there is nothing to give back; bad input changes nothing.
func TestRefund(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		// An LLM gateway reserves 4000 tokens and gives back the 2500 the answer did not use.
		{"RL.TOKEN llm:acme 10000 60000 COST 4000", "[1 10000 6000 0 24000]"},
		{"RL.TOKEN llm:acme 10000 60000 REFUND 2500", "[1 10000 8500 0 9000]"},
		{"RL.TOKEN llm:acme 10000 60000 REFUND 99999", "[1 10000 10000 0 0]"}, // capped: a fresh key
		{"EXISTS llm:acme", "0"},

		{"RL.FIXED f 10 60000 COST 7", "[1 10 3 0 60000]"},
		{"RL.FIXED f 10 60000 REFUND 2", "[1 10 5 0 60000]"},
		{"RL.SLIDE s 10 60000 COST 7", "[1 10 3 0 120000]"},
		{"RL.SLIDE s 10 60000 REFUND 7", "[1 10 10 0 0]"},
		{"RL.LOG l 10 60000 COST 3", "[1 10 7 0 60000]"},
		{"DEBUG CLOCK ADVANCE 1000000", "OK"}, // 1 s
		{"RL.LOG l 10 60000 COST 4", "[1 10 3 0 60000]"},
		{"RL.LOG l 10 60000 REFUND 5", "[1 10 8 0 59000]"}, // the newest entry and 1 of the older
		{"RL.GCRA g 10 1000 COST 10", "[1 10 0 0 1000]"},
		{"RL.GCRA g 10 1000 REFUND 4", "[1 10 4 0 600]"},
		{"RL.LEAKY q 10 1000 QUEUE 5 COST 3", "[1 10 3 0 300]"},
		{"RL.LEAKY q 10 1000 QUEUE 5 REFUND 1", "[1 10 4 200 200]"}, // field 4: the delay a call would wait
		{"CL.THROTTLE c 4 5 1 3", "[0 5 2 -1 1]"},
		{"CL.THROTTLE c 4 5 1 REFUND 2", "[0 5 4 -1 1]"},

		// Nothing to give back: a fresh key's reply, no key made.
		{"RL.FIXED none 10 60000 REFUND 3", "[1 10 10 0 0]"},
		{"CL.THROTTLE none 4 5 1 REFUND 1", "[0 5 5 -1 0]"},
		{"EXISTS none", "0"},

		// Bad input: an error, and f keeps its 5.
		{"RL.FIXED f 10 60000 REFUND 0", "ERR refund must be an integer between 1 and 10000"},
		{"RL.FIXED f 10 60000 REFUND -1", "ERR refund must be an integer between 1 and 10000"},
		{"RL.FIXED f 10 60000 REFUND", "ERR syntax error"},
		{"RL.FIXED f 10 60000 REFUND 1 COST 2", "ERR REFUND takes neither COST nor PEEK"},
		{"RL.FIXED f 10 60000 PEEK REFUND 1", "ERR REFUND takes neither COST nor PEEK"},
		{"RL.TOKEN f 10 60000 REFUND 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.FIXED f 10 60000 COST 0", "[1 10 5 0 59000]"},

		// RL.ALL: refunds on several keys at once.
		{"RL.ALL FIXED f 10 60000 REFUND 5 GCRA g 10 1000 REFUND 10", "[1 [1 10 10 0 0] [1 10 10 0 0]]"},
		{"EXISTS f g", "0"},
	})
}

// TestRefundReplicated: a refund on a primary shows on its replica, which refuses one,
// and a slice too, but for a PEEK.
func TestRefundReplicated(t *testing.T) {
	p := startServer(t, Config{})
	r := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	pc, rc := p.client(t, 3), r.client(t, 3)
	waitLinkUp(t, rc)
	if got := do(pc, "RL.FIXED k 10 86400000 COST 8"); !strings.HasPrefix(got, "[1 10 2 0 ") {
		t.Fatalf("RL.FIXED ... COST 8 = %s", got)
	}
	poll.Until(t, 10*time.Second, "the spend on the replica", func() bool {
		return strings.HasPrefix(do(rc, "RL.FIXED k 10 86400000 COST 0 PEEK"), "[1 10 2 ")
	})
	if got := do(pc, "RL.FIXED k 10 86400000 REFUND 5"); !strings.HasPrefix(got, "[1 10 7 0 ") {
		t.Fatalf("RL.FIXED ... REFUND 5 = %s", got)
	}
	poll.Until(t, 10*time.Second, "the refund on the replica", func() bool {
		return strings.HasPrefix(do(rc, "RL.FIXED k 10 86400000 COST 0 PEEK"), "[1 10 7 ")
	})
	run(t, rc, []call{
		{"RL.FIXED k 10 86400000 REFUND 1", errReadOnly},
		{"RL.SLICE FIXED k 10 86400000 1", errReadOnly},
	})
	if got := do(rc, "RL.SLICE FIXED k 10 86400000 9 PEEK"); !strings.HasPrefix(got, "[7 10 0 0 ") {
		t.Fatalf("RL.SLICE ... PEEK on the replica = %s, want 7 of the 7 left", got)
	}
}
