package rlcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

func TestParseRLAll(t *testing.T) {
	fixed := algo.Request{Kind: algo.KindFixed, Limit: 10, Window: ms(1000), Cost: 1}
	log := algo.Request{Kind: algo.KindLog, Limit: 5, Window: ms(60000), Cost: 2}
	token := algo.Request{Kind: algo.KindToken, Limit: 10, Window: ms(1000), Rate: 5, Cost: 1}
	gcra := algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: ms(1000), Burst: 3, Cost: 1}
	leaky := algo.Request{Kind: algo.KindLeaky, Limit: 10, Window: ms(1000), Queue: 4, Cost: 1}
	slide := algo.Request{Kind: algo.KindSlide, Limit: 1, Window: 1000, Cost: 0}
	peeked := func(rules ...algo.Rule) []algo.Rule {
		for i := range rules {
			rules[i].Req.Peek = true
		}
		return rules
	}
	for _, c := range []struct {
		args string
		want []algo.Rule
	}{
		{"FIXED k 10 1000", []algo.Rule{{Key: []byte("k"), Req: fixed}}},
		{"fixed k 10 1000 log k2 5 60000 COST 2", []algo.Rule{{Key: []byte("k"), Req: fixed}, {Key: []byte("k2"), Req: log}}},
		// An ALGO word as a key, and as an option's value, is not a rule's start.
		{"Token FIXED 10 1000 RATE 5 GCRA LOG 10 1000 BURST 3", []algo.Rule{{Key: []byte("FIXED"), Req: token}, {Key: []byte("LOG"), Req: gcra}}},
		{"LEAKY a 10 1000 QUEUE 4 SLIDE b 1 1 COST 0", []algo.Rule{{Key: []byte("a"), Req: leaky}, {Key: []byte("b"), Req: slide}}},
		// PEEK in any rule applies to all.
		{"FIXED k 10 1000 LOG k2 5 60000 peek COST 2", peeked(algo.Rule{Key: []byte("k"), Req: fixed}, algo.Rule{Key: []byte("k2"), Req: log})},
		{"FIXED k 10 1000 PEEK", peeked(algo.Rule{Key: []byte("k"), Req: fixed})},
	} {
		got, err := ParseRLAll(split(c.args), 100_000)
		if err != nil || !sameRules(got, c.want) {
			t.Errorf("ParseRLAll(%q) = %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
}

func sameRules(a, b []algo.Rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Key, b[i].Key) || a[i].Req != b[i].Req {
			return false
		}
	}
	return true
}

func TestParseRLAllErrors(t *testing.T) {
	const (
		arity   = "ERR wrong number of arguments for 'rl.all' command"
		unknown = "ERR unknown algorithm in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"
	)
	rules := func(n int) []string {
		var args []string
		for i := range n {
			args = append(args, "FIXED", "k"+strings.Repeat("x", i), "1", "1")
		}
		return args
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, arity},
		{[]string{"FIXED", "k", "10"}, arity},
		{[]string{"FIXED", "k", "10", "1000", "LOG", "k2", "10"}, arity},
		{[]string{"FIXED", "k", "10", "1000", "LOG"}, arity},
		{[]string{"THROTTLE", "k", "1", "1"}, "ERR unknown algorithm 'THROTTLE' in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"},
		{[]string{"fixd", "k", "1", "1"}, "ERR unknown algorithm 'fixd' in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"},
		{[]string{"FI\r\nXED", "k", "1", "1"}, unknown},
		{[]string{strings.Repeat("A", 33), "k", "1", "1"}, unknown},
		{[]string{strings.Repeat("A", 32), "k", "1", "1"}, "ERR unknown algorithm '" + strings.Repeat("A", 32) + "' in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"},
		// Each rule's errors are its command's.
		{[]string{"FIXED", "k", "0", "1000"}, "ERR limit must be an integer between 1 and 1000000000"},
		{[]string{"FIXED", "k", "1", "1000", "LOG", "k2", "100001", "1000"}, "ERR limit must be an integer between 1 and 100000"},
		{[]string{"FIXED", "k", "1", "0"}, "ERR window_ms must be an integer between 1 and 31536000000"},
		{[]string{"FIXED", "k", "10", "1000", "RATE", "5"}, "ERR syntax error"},
		{[]string{"FIXED", "k", "10", "1000", "FOO", "k2", "1", "1"}, "ERR syntax error"},
		{[]string{"FIXED", "k", "10", "1000", "COST"}, "ERR syntax error"},
		{[]string{"FIXED", "k", "10", "1000", "COST", "LOG", "k2", "1", "1"}, "ERR cost must be an integer between 0 and 10000"},
		{[]string{"TOKEN", "k", "10", "1000", "RATE", "0"}, "ERR rate must be an integer between 1 and 1000000000"},
		{rules(65), "ERR RL.ALL takes at most 64 rules"},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		got, err := ParseRLAll(args, 100_000)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseRLAll(%q) = %+v, %v; want error %q", c.args, got, err, c.want)
		}
	}
	if got, err := ParseRLAll(split(strings.Join(rules(64), " ")), 100_000); err != nil || len(got) != 64 {
		t.Errorf("64 rules: %d rules, %v", len(got), err)
	}
}

// FuzzParseRLAll checks that any input parses without panic into either a one-line
// error starting "ERR " or 1 to 64 rules, each within the contract's ranges, all with
// one PEEK, that every algorithm decides without panic.
func FuzzParseRLAll(f *testing.F) {
	for _, seed := range []string{
		"FIXED k 10 1000", "fixed k 10 1000 log k2 5 60000 COST 2 PEEK", "TOKEN FIXED 10 1000 RATE 5 GCRA LOG 10 1000 BURST 3",
		"LEAKY a 10 1000 QUEUE 4 SLIDE b 1 1 COST 0", "FIXED k 10", "THROTTLE k 1 1", "FIXED k 10 1000 COST LOG k 1 1",
		"FIXED k 10 1000 FIXED", "fi\nxed k 1 1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		rules, err := ParseRLAll(split(args), 100_000)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "ERR ") || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error %q is not one ERR line", msg)
			}
			return
		}
		if len(rules) == 0 || len(rules) > algo.MaxRules {
			t.Fatalf("%d rules", len(rules))
		}
		for _, rule := range rules {
			if rule.Req.Kind == algo.KindThrottle || rule.Req.Peek != rules[0].Req.Peek {
				t.Fatalf("rule %+v", rule.Req)
			}
			checkRequest(t, rule.Req)
			decide(t, rule.Req)
		}
	})
}
