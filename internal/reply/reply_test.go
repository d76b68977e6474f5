package reply

import "testing"

func TestBadRequest(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{Syntax, true},
		{LimitUpTo("100000"), true},
		{CostUpTo("1000"), true},
		{RefundUpTo("1000"), true},
		{RefundAlone, true},
		{ReserveUpTo("100"), true},
		{RefundReserve, true},
		{NoEntries, true},
		{HitsBetween("0", "9"), true},
		{InvalidRequest("empty key"), true},
		{Arity("rl.fixed"), true},
		{UnknownAlgorithm("nope"), true},
		{SameKey, true},
		{"ERR max number of clients reached", false},
		{"ERR unknown command 'RL.FIXED', with args beginning with: 'k' '1' '1000' ", false},
		{"ERR Error running script (call to f_1): @user_script:1: oops", false},
		{"LOADING rlserver is loading the dataset in memory", false},
		{"OOM command not allowed when used memory > 'maxmemory'.", false},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
		{"ERR limit must be positive", false},
		{"", false},
	} {
		if got := BadRequest(c.msg); got != c.want {
			t.Errorf("BadRequest(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}
