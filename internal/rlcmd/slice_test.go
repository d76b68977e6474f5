package rlcmd

import (
	"bytes"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// TestParseSlice: RL.SLICE's words as requests of Slice count and Cost 0, options
// in any order and case; AppendSlice writes each back as words ParseSlice reads as it.
func TestParseSlice(t *testing.T) {
	for _, c := range []struct {
		args string
		want algo.Request
	}{
		{"FIXED api 100 60000 20", algo.Request{Kind: algo.KindFixed, Limit: 100, Window: ms(60000), Slice: 20}},
		{"slide api 100 60000 100", algo.Request{Kind: algo.KindSlide, Limit: 100, Window: ms(60000), Slice: 100}},
		{"Token api 10 1000 1 rate 5 PEEK", algo.Request{Kind: algo.KindToken, Limit: 10, Window: ms(1000), Rate: 5, Slice: 1, Peek: true}},
		{"GCRA api 10 1000 4 RESERVE 2 BURST 20", algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: ms(1000), Burst: 20, Reserve: 2, Slice: 4}},
		{"FIXED COST 10 1000 4 RESERVE 2", algo.Request{Kind: algo.KindFixed, Limit: 10, Window: ms(1000), Reserve: 2, Slice: 4}}, // COST as the key
	} {
		key, got, err := ParseSlice(split(c.args))
		if err != nil || got != c.want || string(key) != string(split(c.args)[1]) {
			t.Errorf("ParseSlice(%q) = %q, %+v, %v; want %+v", c.args, key, got, err, c.want)
			continue
		}
		key2, again, err := ParseSlice(words(AppendSlice(nil, key, got)))
		if err != nil || again != got || !bytes.Equal(key2, key) {
			t.Errorf("ParseSlice(AppendSlice(%+v)) = %q, %+v, %v", got, key2, again, err)
		}
	}
}

// TestParseSliceErrors: each bad RL.SLICE gets its error, the refused algorithms
// saying why.
func TestParseSliceErrors(t *testing.T) {
	for _, c := range []struct {
		args, want string
	}{
		{"", "ERR wrong number of arguments for 'rl.slice' command"},
		{"FIXED api 100 60000", "ERR wrong number of arguments for 'rl.slice' command"},
		{"LOG api 100 60000 5", "ERR RL.SLICE takes no LOG: a log entry's time is its request's, and a slice is spent before its requests come"},
		{"leaky api 100 60000 5", "ERR RL.SLICE takes no LEAKY: its queue's order is the point, and a slice's requests would jump it"},
		{"THROTTLE api 100 60000 5", "ERR unknown algorithm in RL.SLICE: expected FIXED, SLIDE, TOKEN or GCRA"},
		{"FIXED api 100 60000 0", "ERR count must be an integer between 1 and 100"},
		{"FIXED api 100 60000 -3", "ERR count must be an integer between 1 and 100"},
		{"FIXED api 100 60000 101", "ERR count must be an integer between 1 and 100"},
		{"FIXED api 100 60000 many", "ERR count must be an integer between 1 and 100"},
		{"FIXED api 100 60000 5 COST 2", "ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give back with the limiter's REFUND"},
		{"FIXED api 100 60000 5 refund 2", "ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give back with the limiter's REFUND"},
		{"FIXED api 0 60000 5", "ERR limit must be an integer between 1 and 1000000000"},
		{"TOKEN api 10 0 5", "ERR window_ms must be an integer between 1 and 31536000000"},
		{"FIXED api 100 60000 5 RATE 3", "ERR syntax error"},
		{"GCRA api 100 60000 5 RESERVE 101", "ERR reserve must be an integer between 0 and 100"},
		{"GCRA api 100 60000 5 RESERVE", "ERR syntax error"},
	} {
		_, _, err := ParseSlice(split(c.args))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseSlice(%q) = %v, want %q", c.args, err, c.want)
		}
	}
}
