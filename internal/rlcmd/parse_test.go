package rlcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

func TestParse(t *testing.T) {
	req := func(kind algo.Kind, limit, window, cost int64) algo.Request {
		return algo.Request{Kind: kind, Limit: limit, Window: window, Cost: cost}
	}
	tokenRate := req(algo.KindToken, 10, ms(1000), 2)
	tokenRate.Rate = 5
	gcraBurst := req(algo.KindGCRA, 10, ms(1000), 1)
	gcraBurst.Burst = 20
	leakyQueue := req(algo.KindLeaky, 10, ms(1000), 1)
	leakyQueue.Queue = 1e9
	peek := req(algo.KindFixed, 10, ms(1000), 5)
	peek.Peek = true
	peekCost0 := req(algo.KindSlide, 10, ms(1000), 0)
	peekCost0.Peek = true
	throttle := algo.Request{Kind: algo.KindThrottle, Limit: 15, Rate: 30, Window: 60_000_000, Cost: 1, Cell: true}
	throttleMax := algo.Request{Kind: algo.KindThrottle, Limit: 1e9, Rate: 1e9, Window: 31_536_000_000_000, Cost: 1e9, Cell: true}
	throttleZero := algo.Request{Kind: algo.KindThrottle, Limit: 0, Rate: 1, Window: 1_000_000, Cost: 0, Cell: true}
	refund := req(algo.KindToken, 10, ms(1000), 0)
	refund.Refund, refund.Rate = 3, 5
	throttleRefund := throttle
	throttleRefund.Cost, throttleRefund.Refund = 0, 7
	reserve := req(algo.KindGCRA, 100, ms(1000), 2)
	reserve.Reserve = 20
	reserveAll := req(algo.KindLeaky, 100, ms(1000), 1)
	reserveAll.Reserve = 100

	for _, c := range []struct {
		kind algo.Kind
		args string
		want algo.Request
	}{
		{algo.KindFixed, "10 1000", req(algo.KindFixed, 10, ms(1000), 1)},
		{algo.KindFixed, "1 1", req(algo.KindFixed, 1, 1000, 1)},
		{algo.KindFixed, "1000000000 31536000000", req(algo.KindFixed, 1e9, year, 1)},
		{algo.KindFixed, "10 1000 cost 5 peek", peek},
		{algo.KindFixed, "10 1000 PEEK CoSt 5", peek},
		{algo.KindFixed, "10 1000 COST 2 COST 5 PEEK PEEK", peek}, // the last COST wins
		{algo.KindSlide, "10 1000 COST 0 PEEK", peekCost0},
		{algo.KindLog, "10 1000 COST 10000", req(algo.KindLog, 10, ms(1000), 10000)},
		{algo.KindLog, "100000 1000", req(algo.KindLog, 100000, ms(1000), 1)},
		{algo.KindToken, "10 1000 RATE 5 COST 2", tokenRate},
		{algo.KindToken, "10 1000 cost 2 rate 1 Rate 5", tokenRate},
		{algo.KindGCRA, "10 1000 BURST 20", gcraBurst},
		{algo.KindLeaky, "10 1000 QUEUE 1000000000", leakyQueue},
		{algo.KindLeaky, "10 1000 QUEUE 0", req(algo.KindLeaky, 10, ms(1000), 1)},
		{algo.KindThrottle, "15 30 60", throttle},
		{algo.KindThrottle, "1000000000 1000000000 31536000 1000000000", throttleMax},
		{algo.KindThrottle, "0 1 1 0", throttleZero},
		{algo.KindToken, "10 1000 REFUND 3 RATE 5", refund},
		{algo.KindToken, "10 1000 refund 1 Refund 3 RATE 5", refund}, // the last REFUND wins
		{algo.KindThrottle, "15 30 60 REFUND 7", throttleRefund},
		{algo.KindThrottle, "15 30 60 refund 7", throttleRefund},
		{algo.KindGCRA, "100 1000 RESERVE 20 COST 2", reserve},
		{algo.KindGCRA, "100 1000 reserve 3 Reserve 20 cost 2", reserve}, // the last RESERVE wins
		{algo.KindLeaky, "100 1000 RESERVE 100", reserveAll},             // the whole limit: only calls without
		{algo.KindFixed, "10 1000 RESERVE 0", req(algo.KindFixed, 10, ms(1000), 1)},
		// Schedules of exactly 100 years: T = 31,536,000,000,000 µs (a year) by 100.
		{algo.KindGCRA, "1 31536000000 BURST 100", algo.Request{Kind: algo.KindGCRA, Limit: 1, Window: year, Burst: 100, Cost: 1}},
		{algo.KindLeaky, "1 31536000000 QUEUE 100 COST 100", algo.Request{Kind: algo.KindLeaky, Limit: 1, Window: year, Queue: 100, Cost: 100}},
		{algo.KindThrottle, "99 1 31536000", algo.Request{Kind: algo.KindThrottle, Limit: 99, Rate: 1, Window: year, Cost: 1, Cell: true}},
	} {
		got, err := ParseRequest(c.kind, split(c.args), 100_000)
		if err != nil || got != c.want {
			t.Errorf("ParseRequest(%v, %q) = %+v, %v; want %+v", c.kind, c.args, got, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const (
		limit  = "ERR limit must be an integer between 1 and 1000000000"
		window = "ERR window_ms must be an integer between 1 and 31536000000"
		syntax = "ERR syntax error"
	)
	for _, c := range []struct {
		kind algo.Kind
		args []string
		want string
	}{
		{algo.KindToken, nil, "ERR wrong number of arguments for 'rl.token' command"},
		{algo.KindFixed, []string{"10"}, "ERR wrong number of arguments for 'rl.fixed' command"},
		{algo.KindSlide, []string{"10"}, "ERR wrong number of arguments for 'rl.slide' command"},
		{algo.KindLog, []string{"10"}, "ERR wrong number of arguments for 'rl.log' command"},
		{algo.KindGCRA, []string{"10"}, "ERR wrong number of arguments for 'rl.gcra' command"},
		{algo.KindLeaky, []string{"10"}, "ERR wrong number of arguments for 'rl.leaky' command"},
		{algo.KindThrottle, []string{"15", "30"}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{algo.KindThrottle, []string{"15", "30", "60", "1", "2"}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{algo.Kind(0), []string{"10", "1000"}, "ERR unknown rate limiter kind"},
		{algo.Kind(99), []string{"10", "1000"}, "ERR unknown rate limiter kind"},

		// Integers as Redis reads them, in range.
		{algo.KindFixed, []string{"0", "1000"}, limit},
		{algo.KindFixed, []string{"1000000001", "1000"}, limit},
		{algo.KindFixed, []string{"99999999999999999999999", "1000"}, limit},
		{algo.KindFixed, []string{"-1", "1000"}, limit},
		{algo.KindFixed, []string{"-0", "1000"}, limit},
		{algo.KindFixed, []string{"-", "1000"}, limit},
		{algo.KindFixed, []string{"+1", "1000"}, limit},
		{algo.KindFixed, []string{"01", "1000"}, limit},
		{algo.KindFixed, []string{"1.5", "1000"}, limit},
		{algo.KindFixed, []string{" 1", "1000"}, limit},
		{algo.KindFixed, []string{"1e3", "1000"}, limit},
		{algo.KindFixed, []string{"", "1000"}, limit},
		{algo.KindFixed, []string{"ten", "1000"}, limit},
		{algo.KindFixed, []string{"10", "0"}, window},
		{algo.KindFixed, []string{"10", "31536000001"}, window},
		{algo.KindFixed, []string{"10", "1s"}, window},
		{algo.KindFixed, []string{"0", "0"}, limit}, // the first bad argument is named
		{algo.KindLog, []string{"100001", "1000"}, "ERR limit must be an integer between 1 and 100000"},
		{algo.KindToken, []string{"1000000001", "1000"}, limit},

		// Options.
		{algo.KindFixed, []string{"10", "1000", "COST"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "PEEK", "COST"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "COST", "10001"}, "ERR cost must be an integer between 0 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "COST", "-1"}, "ERR cost must be an integer between 0 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "COST", "x"}, "ERR cost must be an integer between 0 and 10000"},
		{algo.KindFixed, []string{"1000000000", "1000", "COST", "1000000000001"}, "ERR cost must be an integer between 0 and 1000000000000"},
		{algo.KindFixed, []string{"10", "1000", "COST", "20", "COST", "x"}, "ERR cost must be an integer between 0 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "FOO"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "PEEKS"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "1"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "RATE", "5"}, syntax},
		{algo.KindSlide, []string{"10", "1000", "BURST", "5"}, syntax},
		{algo.KindLog, []string{"10", "1000", "QUEUE", "5"}, syntax},
		{algo.KindToken, []string{"10", "1000", "BURST", "5"}, syntax},
		{algo.KindGCRA, []string{"10", "1000", "QUEUE", "5"}, syntax},
		{algo.KindLeaky, []string{"10", "1000", "RATE", "5"}, syntax},
		{algo.KindToken, []string{"10", "1000", "RATE"}, syntax},
		{algo.KindToken, []string{"10", "1000", "RATE", "0"}, "ERR rate must be an integer between 1 and 1000000000"},
		{algo.KindToken, []string{"10", "1000", "RATE", "1000000001"}, "ERR rate must be an integer between 1 and 1000000000"},
		{algo.KindGCRA, []string{"10", "1000", "BURST", "0"}, "ERR burst must be an integer between 1 and 1000000000"},
		{algo.KindGCRA, []string{"10", "1000", "BURST", "1000000001"}, "ERR burst must be an integer between 1 and 1000000000"},
		{algo.KindLeaky, []string{"10", "1000", "QUEUE", "-1"}, "ERR queue must be an integer between 0 and 1000000000"},
		{algo.KindLeaky, []string{"10", "1000", "QUEUE", "1000000001"}, "ERR queue must be an integer between 0 and 1000000000"},

		// CL.THROTTLE.
		{algo.KindGCRA, []string{"1", "31536000000", "BURST", "101"}, "ERR burst × window_ms / limit must be at most 100 years"},
		{algo.KindLeaky, []string{"1", "31536000000", "QUEUE", "101"}, "ERR queue × window_ms / limit must be at most 100 years"},
		{algo.KindLeaky, []string{"1", "31536000000", "COST", "101"}, "ERR cost × window_ms / limit must be at most 100 years"},
		{algo.KindThrottle, []string{"100", "1", "31536000"}, "ERR (max_burst + 1) × period_s / count_per_period must be at most 100 years"},
		{algo.KindThrottle, []string{"-1", "30", "60"}, "ERR max_burst must be an integer between 0 and 1000000000"},
		{algo.KindThrottle, []string{"1000000001", "30", "60"}, "ERR max_burst must be an integer between 0 and 1000000000"},
		{algo.KindThrottle, []string{"15", "0", "60"}, "ERR count_per_period must be an integer between 1 and 1000000000"},
		{algo.KindThrottle, []string{"15", "1000000001", "60"}, "ERR count_per_period must be an integer between 1 and 1000000000"},
		{algo.KindThrottle, []string{"15", "30", "0"}, "ERR period_s must be an integer between 1 and 31536000"},
		{algo.KindThrottle, []string{"15", "30", "31536001"}, "ERR period_s must be an integer between 1 and 31536000"},
		{algo.KindThrottle, []string{"15", "30", "60", "-1"}, "ERR quantity must be an integer between 0 and 1000000000"},
		{algo.KindThrottle, []string{"15", "30", "60", "1000000001"}, "ERR quantity must be an integer between 0 and 1000000000"},
		{algo.KindThrottle, []string{"15", "30", "60", "PEEK"}, "ERR quantity must be an integer between 0 and 1000000000"},

		// REFUND.
		{algo.KindFixed, []string{"10", "1000", "REFUND"}, syntax},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "0"}, "ERR refund must be an integer between 1 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "-3"}, "ERR refund must be an integer between 1 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "10001"}, "ERR refund must be an integer between 1 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "1.5"}, "ERR refund must be an integer between 1 and 10000"},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "3", "COST", "1"}, "ERR REFUND takes neither COST nor PEEK"},
		{algo.KindLog, []string{"10", "1000", "COST", "0", "REFUND", "3"}, "ERR REFUND takes neither COST nor PEEK"},
		{algo.KindGCRA, []string{"10", "1000", "PEEK", "REFUND", "3"}, "ERR REFUND takes neither COST nor PEEK"},
		{algo.KindThrottle, []string{"15", "30", "60", "REFUND", "0"}, "ERR refund must be an integer between 1 and 1000000000"},
		{algo.KindThrottle, []string{"15", "30", "60", "REFUND", "x"}, "ERR refund must be an integer between 1 and 1000000000"},
		{algo.KindThrottle, []string{"15", "30", "60", "1", "REFUND", "2"}, "ERR REFUND takes neither COST nor PEEK"},
		{algo.KindThrottle, []string{"15", "30", "60", "REFUND"}, "ERR quantity must be an integer between 0 and 1000000000"},
		// RESERVE: 0 to the limit, no refund; CL.THROTTLE takes none.
		{algo.KindFixed, []string{"10", "1000", "RESERVE"}, syntax},
		{algo.KindSlide, []string{"10", "1000", "RESERVE", "11"}, "ERR reserve must be an integer between 0 and 10"},
		{algo.KindLog, []string{"10", "1000", "RESERVE", "-1"}, "ERR reserve must be an integer between 0 and 10"},
		{algo.KindToken, []string{"10", "1000", "RESERVE", "x"}, "ERR reserve must be an integer between 0 and 10"},
		{algo.KindGCRA, []string{"10", "1000", "RESERVE", "2.5"}, "ERR reserve must be an integer between 0 and 10"},
		{algo.KindLeaky, []string{"10", "1000", "RESERVE", "01"}, "ERR reserve must be an integer between 0 and 10"},
		{algo.KindFixed, []string{"10", "1000", "REFUND", "3", "RESERVE", "1"}, "ERR REFUND takes no RESERVE"},
		{algo.KindThrottle, []string{"15", "30", "60", "RESERVE", "1"}, "ERR wrong number of arguments for 'cl.throttle' command"},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		got, err := ParseRequest(c.kind, args, 100_000)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseRequest(%v, %q) = %+v, %v; want error %q", c.kind, c.args, got, err, c.want)
		}
	}
}

func TestParseLogLimitCapped(t *testing.T) {
	// A -max-log-limit above 1e9 cannot lift RL.LOG over the common bound.
	_, err := ParseRequest(algo.KindLog, split("1000000001 1000"), 1<<40)
	if err == nil || err.Error() != "ERR limit must be an integer between 1 and 1000000000" {
		t.Fatalf("got %v", err)
	}
}

// FuzzParse checks that any input parses without panic into either an error line
// starting "ERR " or a request within the contract's ranges that every algorithm
// decides without panic. Its seed corpus runs in plain go test.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct {
		kind uint8
		args string
	}{
		{1, "10 1000"}, {2, "10 1000 COST 0 PEEK"}, {3, "100000 31536000000 cost 5"},
		{4, "10 1000 RATE 5"}, {5, "10 1000 BURST 3 COST 30"}, {6, "10 1000 QUEUE 0 PEEK"},
		{7, "15 30 60"}, {7, "0 1 1 0"}, {7, "15 30 60 1 2"}, {1, "10"}, {0, "10 1000"},
		{4, "10 1000 RATE"}, {1, "-0 01"}, {1, "99999999999999999999 1"}, {1, "1 1 FOO"},
		{5, "1000000000 1 BURST 1000000000 COST 1000000000000"}, {8, "1 1"},
	} {
		f.Add(seed.kind, seed.args)
	}
	f.Fuzz(func(t *testing.T, kind uint8, args string) {
		r, err := ParseRequest(algo.Kind(kind), split(args), 100_000)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ERR ") {
				t.Fatalf("error %q does not start with ERR", err)
			}
			return
		}
		checkRequest(t, r)
		decide(t, r)
	})
}

// checkRequest fails unless r lies within the ranges Parse promises.
func checkRequest(t *testing.T, r algo.Request) {
	t.Helper()
	in := func(v, lo, hi int64) bool { return v >= lo && v <= hi }
	ok := r.Kind >= algo.KindFixed && r.Kind <= algo.KindThrottle && !(r.Kind == algo.KindThrottle && r.Peek)
	if r.Kind == algo.KindThrottle {
		ok = ok && in(r.Limit, 0, 1e9) && in(r.Rate, 1, 1e9) && r.Window%1_000_000 == 0 &&
			in(r.Window, 1_000_000, year) && in(r.Cost, 0, 1e9)
	} else {
		ok = ok && in(r.Limit, 1, 1e9) && r.Window%1000 == 0 && in(r.Window, 1000, year) &&
			in(r.Cost, 0, r.Limit*1000) && (r.Rate == 0 || in(r.Rate, 1, 1e9)) &&
			(r.Burst == 0 || in(r.Burst, 1, 1e9)) && in(r.Queue, 0, 1e9)
	}
	if !ok {
		t.Fatalf("Parse gave a request out of range: %+v", r)
	}
}

// Times of the grammar's tests, in µs.
const (
	base        = int64(1_699_920_000_000_000)          // 2023-11-14 00:00:00 UTC: a whole day
	year        = int64(31_536_000_000_000)             // window_ms's maximum
	maxSchedule = int64(100 * 365 * 86_400 * 1_000_000) // 100 years: algo.CheckSchedule's bound
)

// ms converts milliseconds to µs.
func ms(n int64) int64 { return n * 1000 }

// split cuts a string at spaces into arguments.
func split(s string) [][]byte { return bytes.Fields([]byte(s)) }

// decide has a store decide r at three moments, so that a request the grammar gives
// is one the algorithms decide without panic.
func decide(t *testing.T, r algo.Request) {
	t.Helper()
	st, err := store.New(store.Config{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Flush()
	for _, now := range []int64{base, base + r.Window/2, base + 3*r.Window} {
		if _, err := st.Do([]byte("k"), r, now); err != nil {
			t.Fatalf("Do(%+v) at %d: %v", r, now, err)
		}
	}
}
