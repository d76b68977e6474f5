package rlcmd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// words renders appended words as the wire carries them.
func words(args []any) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = fmt.Append(nil, a)
	}
	return out
}

// TestAppendRequest: the requests the Go client and the lab send come back from
// ParseRequest as they were, with the words the contract spells.
func TestAppendRequest(t *testing.T) {
	token := algo.Request{Kind: algo.KindToken, Limit: 10, Window: ms(1000), Rate: 5, Cost: 2}
	leaky := algo.Request{Kind: algo.KindLeaky, Limit: 10, Window: ms(1000), Cost: 1}
	peek := algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: ms(1000), Burst: 3, Cost: 0, Peek: true}
	refund := algo.Request{Kind: algo.KindFixed, Limit: 10, Window: ms(60000), Refund: 4}
	throttle := algo.Request{Kind: algo.KindThrottle, Limit: 15, Rate: 30, Window: 60_000_000, Cost: 1, Cell: true}
	throttleRefund := throttle
	throttleRefund.Cost, throttleRefund.Refund = 0, 2
	reserve := algo.Request{Kind: algo.KindSlide, Limit: 100, Window: ms(1000), Cost: 3, Reserve: 20, Peek: true}
	for _, c := range []struct {
		r    algo.Request
		want string
	}{
		{token, "10 1000 COST 2 RATE 5"},
		{leaky, "10 1000 COST 1"},
		{peek, "10 1000 COST 0 PEEK BURST 3"},
		{refund, "10 60000 REFUND 4"},
		{throttle, "15 30 60 1"},
		{throttleRefund, "15 30 60 REFUND 2"},
		{reserve, "100 1000 COST 3 PEEK RESERVE 20"},
	} {
		args := words(AppendRequest(nil, c.r))
		if got := string(bytes.Join(args, []byte(" "))); got != c.want {
			t.Errorf("AppendRequest(%+v) = %q, want %q", c.r, got, c.want)
		}
		if got, err := ParseRequest(c.r.Kind, args, 100_000); err != nil || got != c.r {
			t.Errorf("ParseRequest(AppendRequest(%+v)) = %+v, %v", c.r, got, err)
		}
	}
}

// TestAppendRLAll: rules come back from ParseRLAll as they were, PEEK in one rule
// being PEEK in all.
func TestAppendRLAll(t *testing.T) {
	rules := []algo.Rule{
		{Key: []byte("a"), Req: algo.Request{Kind: algo.KindFixed, Limit: 10, Window: ms(1000), Cost: 1}},
		{Key: []byte("LOG"), Req: algo.Request{Kind: algo.KindLeaky, Limit: 10, Window: ms(1000), Queue: 4, Cost: 1}},
		{Key: []byte("c"), Req: algo.Request{Kind: algo.KindToken, Limit: 3, Window: ms(1000), Rate: 1, Cost: 0, Peek: true}},
		{Key: []byte("RESERVE"), Req: algo.Request{Kind: algo.KindGCRA, Limit: 5, Window: ms(1000), Cost: 1, Reserve: 2}},
	}
	got, err := ParseRLAll(words(AppendRLAll(nil, rules)), 100_000)
	for i := range rules {
		rules[i].Req.Peek = true
	}
	if err != nil || !sameRules(got, rules) {
		t.Errorf("ParseRLAll(AppendRLAll(rules)) = %+v, %v; want %+v", got, err, rules)
	}
}

// TestAppendAcquire: a lease request comes back from ParseAcquire as it was, with and
// without an ID.
func TestAppendAcquire(t *testing.T) {
	for _, r := range []algo.LeaseRequest{
		{Limit: 3, Duration: ms(1000)},
		{Limit: 1, Duration: year, ID: []byte("job 7")},
		{Limit: 10, Duration: ms(500), Reserve: 2},
		{Limit: 10, Duration: ms(500), ID: []byte("RESERVE"), Reserve: 10},
	} {
		got, err := ParseAcquire(words(AppendAcquire(nil, r)), 100_000)
		if err != nil || got.Limit != r.Limit || got.Reserve != r.Reserve || got.Duration != r.Duration || !bytes.Equal(got.ID, r.ID) || (got.ID == nil) != (r.ID == nil) {
			t.Errorf("ParseAcquire(AppendAcquire(%+v)) = %+v, %v", r, got, err)
		}
	}
}

// FuzzRoundTrip: whatever ParseRequest accepts, AppendRequest writes as words that
// ParseRequest reads back as the same request (parse, append, parse is stable); and
// a request built from any numbers, in the shape ParseRequest gives (a refund costs
// 0, CL.THROTTLE has no PEEK), that ParseRequest accepts once appended is the request
// appended (append, parse gives back the request).
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range []struct {
		kind uint8
		args string
	}{
		{1, "10 1000"}, {2, "10 1000 COST 0 PEEK"}, {3, "100000 31536000000 cost 5"},
		{4, "10 1000 RATE 5"}, {5, "10 1000 BURST 3 COST 30"}, {6, "10 1000 QUEUE 0 PEEK"},
		{6, "10 1000 queue 7 refund 3"}, {7, "15 30 60"}, {7, "0 1 1 0"}, {7, "15 30 60 REFUND 2"},
		{2, "10 1000 RESERVE 3 PEEK"},
	} {
		f.Add(seed.kind, seed.args, int64(10), int64(1000), int64(1), int64(0), int64(0), int64(0), false)
	}
	f.Fuzz(func(t *testing.T, kind uint8, args string, limit, window, cost, option, refund, reserve int64, peek bool) {
		if r, err := ParseRequest(algo.Kind(kind), split(args), 100_000); err == nil {
			again, err := ParseRequest(r.Kind, words(AppendRequest(nil, r)), 100_000)
			if err != nil || again != r {
				t.Fatalf("%q parses as %+v, appended and parsed again as %+v, %v", args, r, again, err)
			}
		}
		r := algo.Request{Kind: algo.Kind(kind), Limit: limit, Window: window * 1000, Cost: cost, Peek: peek, Refund: refund, Reserve: reserve}
		switch r.Kind {
		case algo.KindToken:
			r.Rate = option
		case algo.KindGCRA:
			r.Burst = option
		case algo.KindLeaky:
			r.Queue = option
		case algo.KindThrottle:
			r.Rate, r.Window, r.Cell, r.Peek, r.Reserve = option, window*1_000_000, true, false, 0
		}
		if refund != 0 {
			r.Cost = 0
		}
		if got, err := ParseRequest(r.Kind, words(AppendRequest(nil, r)), 100_000); err == nil && got != r {
			t.Fatalf("AppendRequest(%+v) parses as %+v", r, got)
		}
	})
}
