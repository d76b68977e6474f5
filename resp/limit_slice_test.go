package resp

import (
	"testing"
)

// TestSlice: RL.SLICE takes what fits of count on each kind that takes slices, all, a
// part or none, spends it as a call of that cost, answers granted, the limiter's four
// fields and valid_ms; the limiter's REFUND gives back the unspent part, never above
// a fresh key; bad input gets its error and spends nothing. go-redis against the
// server, on a frozen clock at the start of a day.
func TestSlice(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		{"RL.SLICE FIXED fx 10 60000 4", "[4 10 6 0 60000 60000]"},
		{"RL.FIXED fx 10 60000 COST 0 PEEK", "[1 10 6 0 60000]"},   // spent as COST 4
		{"RL.SLICE fixed fx 10 60000 8", "[6 10 0 0 60000 60000]"}, // 6 of 8 remain
		{"RL.SLICE FIXED fx 10 60000 1", "[0 10 0 60000 60000 0]"}, // none: a cost-1 call's retry
		{"RL.FIXED fx 10 60000 REFUND 3", "[1 10 3 0 60000]"},      // the unused 3 of the 6
		{"RL.FIXED fx 10 60000 REFUND 100", "[1 10 10 0 0]"},       // never above a fresh key
		{"EXISTS fx", "0"},
		{"RL.SLICE FIXED fx 10 60000 10 PEEK", "[10 10 0 0 60000 60000]"},
		{"EXISTS fx", "0"}, // PEEK spends nothing
		{"RL.SLICE FIXED rs 10 60000 10 RESERVE 3", "[7 10 0 0 60000 60000]"},
		{"RL.FIXED rs 10 60000", "[1 10 2 0 60000]"}, // the reserve is left to calls without it

		{"DEBUG CLOCK ADVANCE 90000000", "OK"}, // 90 s: half of the next window left
		{"RL.SLICE SLIDE sl 10 60000 7", "[7 10 3 0 90000 30000]"},
		{"RL.SLICE TOKEN tk 10 1000 4 RATE 5", "[4 10 6 0 800 2000]"},
		{"RL.SLICE TOKEN tk 10 1000 9 RATE 5", "[6 10 0 0 2000 2000]"},
		{"RL.SLICE GCRA gc 10 1000 8 BURST 5", "[5 5 0 0 500 500]"},
		{"RL.GCRA gc 10 1000 BURST 5 REFUND 2", "[1 5 2 0 300]"},

		// Bad input: an error, nothing spent, nothing made.
		{"RL.SLICE LOG lg 10 60000 5", "ERR RL.SLICE takes no LOG: a log entry's time is its request's, and a slice is spent before its requests come"},
		{"RL.SLICE LEAKY lk 10 60000 5", "ERR RL.SLICE takes no LEAKY: its queue's order is the point, and a slice's requests would jump it"},
		{"RL.SLICE THROTTLE ct 10 60000 5", "ERR unknown algorithm in RL.SLICE: expected FIXED, SLIDE, TOKEN or GCRA"},
		{"RL.SLICE FIXED bad 10 60000 0", "ERR count must be an integer between 1 and 10"},
		{"RL.SLICE FIXED bad 10 60000 -1", "ERR count must be an integer between 1 and 10"},
		{"RL.SLICE FIXED bad 10 60000 11", "ERR count must be an integer between 1 and 10"},
		{"RL.SLICE FIXED bad 10 60000 5 COST 1", "ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give back with the limiter's REFUND"},
		{"RL.SLICE FIXED bad 10 60000 5 REFUND 1", "ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give back with the limiter's REFUND"},
		{"RL.SLICE FIXED bad 10 60000", "ERR wrong number of arguments for 'rl.slice' command"},
		{"RL.SLICE FIXED bad 10 60000 5 QUEUE 1", "ERR syntax error"},
		{"RL.SLICE FIXED bad 10 60000 5 RESERVE 11", "ERR reserve must be an integer between 0 and 10"},
		{"RL.SLICE FIXED bad 0 60000 5", "ERR limit must be an integer between 1 and 1000000000"},
		{"EXISTS lg lk ct bad", "0"},
		{"RL.SLICE TOKEN sl 10 60000 5", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.SLIDE sl 10 60000 COST 0 PEEK", "[1 10 3 0 90000]"}, // unchanged
		// A give-back above what was taken is capped at a fresh key, as any REFUND.
		{"RL.SLIDE sl 10 60000 REFUND 1000", "[1 10 10 0 0]"},
		{"PING", "PONG"},
	})
}
