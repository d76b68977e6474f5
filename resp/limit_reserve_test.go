package resp

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

// TestReserve: RESERVE n on every limiter command and RL.ALL rule admits a call only
// if n units remain after it, refuses with the time until the call fits with its
// reserve (-1 when it never can) and spends nothing; calls without it use everything;
// bad input changes nothing. go-redis against the server, on a frozen clock.
func TestReserve(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		// 2 of 10 kept: 8 pass with RESERVE 2, the next waits for the window; a call
		// without RESERVE still takes the last 2.
		{"RL.FIXED fx 10 60000 COST 7 RESERVE 2", "[1 10 1 0 60000]"},
		{"RL.FIXED fx 10 60000 RESERVE 2", "[1 10 0 0 60000]"},
		{"RL.FIXED fx 10 60000 RESERVE 2", "[0 10 0 60000 60000]"},
		{"RL.FIXED fx 10 60000 RESERVE 1", "[1 10 0 0 60000]"},
		{"RL.FIXED fx 10 60000", "[1 10 0 0 60000]"},
		{"RL.FIXED fx 10 60000", "[0 10 0 60000 60000]"},
		{"RL.FIXED fresh 10 60000 RESERVE 10", "[0 10 0 -1 0]"}, // cost 1 + 10 never fits
		{"RL.FIXED fresh 10 60000 RESERVE 10 COST 0", "[1 10 0 0 0]"},
		{"EXISTS fresh", "0"},

		{"RL.SLIDE sl 10 60000 COST 8 RESERVE 2", "[1 10 0 0 120000]"},
		{"RL.SLIDE sl 10 60000 RESERVE 1", "[1 10 0 0 120000]"},
		{"RL.SLIDE sl 10 60000 RESERVE 1", "[0 10 0 66667 120000]"}, // next window, once prev's 9 weigh 8
		{"RL.LOG lg 5 10000 COST 3", "[1 5 2 0 10000]"},
		{"RL.LOG lg 5 10000 RESERVE 2", "[0 5 0 10000 10000]"},
		{"RL.LOG lg 5 10000 RESERVE 1", "[1 5 0 0 10000]"},
		{"RL.TOKEN tk 10 1000 COST 8", "[1 10 2 0 800]"},
		{"RL.TOKEN tk 10 1000 RESERVE 2", "[0 10 0 100 800]"}, // one more token: 100 ms
		{"RL.TOKEN tk 10 1000 RESERVE 1", "[1 10 0 0 900]"},
		{"RL.GCRA gc 10 1000 COST 8", "[1 10 2 0 800]"},
		{"RL.GCRA gc 10 1000 RESERVE 2", "[0 10 0 100 800]"},
		{"RL.LEAKY lk 10 1000 QUEUE 4 COST 3", "[1 10 2 0 300]"},
		{"RL.LEAKY lk 10 1000 QUEUE 4 RESERVE 2", "[0 10 0 100 300]"},
		{"RL.LEAKY lk 10 1000 QUEUE 4 RESERVE 5", "[0 10 0 -1 300]"}, // 5 places, the queue has 4
		{"RL.LEAKY lk 10 1000 QUEUE 4 RESERVE 1", "[1 10 0 300 400]"},

		// RL.ALL: each rule its own reserve; one refusing writes nothing anywhere.
		{"RL.ALL FIXED a1 10 60000 RESERVE 9 TOKEN tk 10 1000 COST 0", "[1 [1 10 0 0 60000] [1 10 1 0 900]]"},
		{"RL.ALL FIXED a2 10 60000 TOKEN tk 10 1000 RESERVE 2", "[0 [1 10 9 0 60000] [0 10 0 200 900]]"},
		{"EXISTS a2", "0"},

		// Bad input: an error, nothing spent.
		{"RL.FIXED fx2 10 60000 RESERVE 11", "ERR reserve must be an integer between 0 and 10"},
		{"RL.FIXED fx2 10 60000 RESERVE -1", "ERR reserve must be an integer between 0 and 10"},
		{"RL.FIXED fx2 10 60000 RESERVE ten", "ERR reserve must be an integer between 0 and 10"},
		{"RL.FIXED fx2 10 60000 RESERVE", "ERR syntax error"},
		{"RL.FIXED fx2 10 60000 REFUND 1 RESERVE 1", "ERR REFUND takes no RESERVE"},
		{"RL.ALL FIXED fx2 10 60000 TOKEN tk 10 1000 RESERVE 11", "ERR reserve must be an integer between 0 and 10"},
		{"RL.ACQUIRE fx2 3 1000 RESERVE 4", "ERR reserve must be an integer between 0 and 3"},
		{"CL.THROTTLE fx2 4 5 1 RESERVE 1", "ERR wrong number of arguments for 'cl.throttle' command"},
		{"EXISTS fx2", "0"},
		{"RL.TOKEN tk 10 1000 COST 0 PEEK", "[1 10 1 0 900]"},
	})
}

// TestReserveReplicatedAndSnapshotted: RESERVE decides admission only, so the states
// its calls leave (admitted and refused, on every kind) are the primary's on its
// replica, byte for byte in DUMP, and again on a server started from the primary's
// snapshot. So are those of RL.SLICE (whole, partial, none) and of the give-back of
// a slice's unspent part.
func TestReserveReplicatedAndSnapshotted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.snap")
	cfg := Config{Config: core.Config{SnapshotPath: path, SnapshotInterval: time.Hour}} // only the final save
	p, stop := savingServer(t, cfg)
	r := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	pc, rc := p.client(t, 3), r.client(t, 3)
	waitLinkUp(t, rc)
	keys := []string{"fx", "sl", "lg", "tk", "gc", "lk", "ls", "a1", "a2", "s1", "s2", "s3", "s4"}
	for range 3 {
		for _, line := range []string{
			"RL.FIXED fx 10 3600000 COST 3 RESERVE 4",
			"RL.SLIDE sl 10 3600000 COST 3 RESERVE 4",
			"RL.LOG lg 10 3600000 COST 3 RESERVE 4",
			"RL.TOKEN tk 10 3600000 COST 3 RESERVE 4",
			"RL.GCRA gc 10 3600000 COST 3 RESERVE 4",
			"RL.LEAKY lk 10 3600000 QUEUE 9 COST 3 RESERVE 4",
			"RL.ACQUIRE ls 5 3600000 RESERVE 2",
			"RL.ALL FIXED a1 10 3600000 COST 2 RESERVE 5 GCRA a2 10 3600000 COST 3",
			"RL.SLICE FIXED s1 10 3600000 4",
			"RL.SLICE SLIDE s2 10 3600000 4 RESERVE 1",
			"RL.SLICE TOKEN s3 10 3600000 4 RATE 2",
			"RL.SLICE GCRA s4 10 3600000 4 BURST 7",
			"RL.TOKEN s3 10 3600000 RATE 2 REFUND 1",
		} {
			do(pc, line)
		}
	}
	// dump is every key's DUMP; a key missing (a replica not there yet) is absent.
	dump := func(ts *testServer) map[string]string {
		rdb := ts.client(t, 3)
		m := map[string]string{}
		for _, k := range keys {
			if v, err := rdb.Dump(context.Background(), k).Result(); err == nil {
				m[k] = v
			}
		}
		return m
	}
	want := dump(p)
	if len(want) != len(keys) {
		t.Fatalf("the primary holds %d of the %d keys: %q", len(want), len(keys), want)
	}
	same := func(got map[string]string) bool {
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}
	poll.Until(t, 10*time.Second, "the replica's states", func() bool { return same(dump(r)) })
	if err := stop(); err != nil {
		t.Fatalf("stopping the primary: %v", err)
	}
	if got := dump(startServer(t, cfg)); !same(got) {
		t.Errorf("after a restart from the snapshot: %q, want %q", got, want)
	}
}
