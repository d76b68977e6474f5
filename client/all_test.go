package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestAllowAll runs a hand-worked AllowAll scenario on every backend: all consume
// together, and a denial consumes nothing anywhere.
func TestAllowAll(t *testing.T) {
	user := client.Fixed(10, time.Minute) // the window ends 45 s after t0
	ip := client.Token(2, sec)            // a token every 500 ms
	queue := client.Leaky(2, sec, 1)      // one leaves every 500 ms, one may wait
	rules := []client.Rule{{Key: "all:user", Limit: user, Cost: 3}, {Key: "all:ip", Limit: ip}}
	steps := []struct {
		rules []client.Rule
		want  client.AllResult
	}{
		{rules, client.AllResult{Allowed: true, Results: []client.Result{
			{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 45 * sec},
			{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms}}}},
		{rules, client.AllResult{Allowed: true, Results: []client.Result{
			{Allowed: true, Limit: 10, Remaining: 4, ResetAfter: 45 * sec},
			{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: sec}}}},
		// The bucket is empty: denied, and the user's count stays at 6.
		{rules, client.AllResult{Results: []client.Result{
			{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 45 * sec},
			{Limit: 2, RetryAfter: 500 * ms, ResetAfter: sec}}}},
		// A Leaky rule's allowed RetryAfter is its delay, as with Allow.
		{[]client.Rule{{Key: "all:q", Limit: queue}, {Key: "all:user", Limit: user}}, client.AllResult{Allowed: true,
			Results: []client.Result{
				{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms},
				{Allowed: true, Limit: 10, Remaining: 3, ResetAfter: 45 * sec}}}},
		{[]client.Rule{{Key: "all:q", Limit: queue}, {Key: "all:user", Limit: user}}, client.AllResult{Allowed: true,
			Results: []client.Result{
				{Allowed: true, Limit: 2, RetryAfter: 500 * ms, ResetAfter: sec},
				{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 45 * sec}}}},
		// A cost above what the limit can hold: Never, and the queue keeps its place.
		{[]client.Rule{{Key: "all:q", Limit: queue}, {Key: "all:user", Limit: user, Cost: 11}}, client.AllResult{
			Results: []client.Result{
				{Limit: 2, RetryAfter: 500 * ms, ResetAfter: sec},
				{Limit: 10, Remaining: 2, RetryAfter: client.Never, ResetAfter: 45 * sec}}}},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			b.setNow(t, t0)
			ctx := context.Background()
			for i, s := range steps {
				got, err := b.client.AllowAll(ctx, s.rules...)
				if err != nil || !equalAll(got, s.want) {
					t.Fatalf("step %d:\n got %+v, %v\nwant %+v", i, got, err, s.want)
				}
			}
			if res, err := b.client.Peek(ctx, "all:user", user); err != nil || res.Remaining != 1 {
				t.Fatalf("Peek all:user: %+v, %v; want 1 remaining after it: 8 consumed, by the allowed calls only", res, err)
			}
		})
	}
}

func equalAll(a, b client.AllResult) bool {
	return a.Allowed == b.Allowed && slices.Equal(a.Results, b.Results)
}

// TestAllowAllErrors: bad calls are refused before any I/O, alike on every backend;
// a key of another algorithm is ErrWrongType and changes nothing.
func TestAllowAllErrors(t *testing.T) {
	fixed := client.Fixed(5, time.Minute)
	many := make([]client.Rule, 65)
	for i := range many {
		many[i] = client.Rule{Key: fmt.Sprintf("many:%d", i), Limit: fixed}
	}
	cases := []struct {
		name  string
		rules []client.Rule
		want  error
		says  string
	}{
		{"65 rules", many, client.ErrBadLimit, "at most 64 rules"},
		{"same key twice", []client.Rule{{Key: "k", Limit: fixed}, {Key: "k", Limit: client.Token(1, sec)}}, client.ErrBadLimit, "in two rules"},
		{"bad limit", []client.Rule{{Key: "a", Limit: fixed}, {Key: "b", Limit: client.Fixed(0, sec)}}, client.ErrBadLimit, "rule 1: client: bad limit: rl.fixed limit"},
		{"negative cost", []client.Rule{{Key: "a", Limit: fixed, Cost: -1}}, client.ErrBadLimit, "cost must be between 0 and 5000"},
		{"log above the cap", []client.Rule{{Key: "a", Limit: fixed}, {Key: "b", Limit: client.Log(100_001, sec)}}, client.ErrBadLimit, "100000"},
		{"wrong type", []client.Rule{{Key: "a", Limit: fixed}, {Key: "tok", Limit: fixed}}, client.ErrWrongType, ""},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			b.setNow(t, t0)
			ctx := context.Background()
			if _, err := b.client.Allow(ctx, "tok", client.Token(3, sec)); err != nil {
				t.Fatal(err)
			}
			for _, tc := range cases {
				_, err := b.client.AllowAll(ctx, tc.rules...)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
				}
			}
			// Nothing above consumed: a is fresh, tok as the one Allow left it.
			if res, err := b.client.Peek(ctx, "a", fixed); err != nil || res.Remaining != 4 {
				t.Errorf("Peek a: %+v, %v; want a fresh key", res, err)
			}
			if res, err := b.client.Peek(ctx, "tok", client.Token(3, sec)); err != nil || res.Remaining != 1 {
				t.Errorf("Peek tok: %+v, %v; want 1 remaining", res, err)
			}
			if res, err := b.client.AllowAll(ctx); err != nil || !res.Allowed || res.Results != nil {
				t.Errorf("no rules: %+v, %v; want allowed, no results", res, err)
			}
		})
	}
}

// TestBackendsAgreeAll replays seeded random AllowAll calls, of one to four rules on a
// few shared keys, on the three backends on one frozen clock, and requires the same
// outcome from each: rlserver's RL.ALL, the rl.all script and the embedded store's
// DoAll decide alike, refusals and keys of another algorithm included.
func TestBackendsAgreeAll(t *testing.T) {
	bs, rng, seed := agreeSetup(t, 8)
	limits := map[string]client.Limit{}
	now := t0
	ctx := context.Background()
	type allOutcome struct {
		res client.AllResult
		err error
	}
	format := func(o allOutcome) string {
		if o.err != nil {
			return "error: " + o.err.Error()
		}
		return fmt.Sprintf("%+v", o.res)
	}
	for i := range *agreeSteps / 3 {
		var rules []client.Rule
		for _, k := range rng.Perm(6)[:1+rng.IntN(4)] {
			key := fmt.Sprintf("{all}:%d", k) // one slot, should the Lua side be a cluster
			l, ok := limits[key]
			if !ok || rng.IntN(25) == 0 {
				l = drawLimit(rng)
				limits[key] = l
			}
			rules = append(rules, client.Rule{Key: key, Limit: l, Cost: max(1, drawCost(rng, l))})
		}
		now += drawStep(rng, rules[0].Limit)
		outs := make([]allOutcome, len(bs))
		for j, b := range bs {
			b.setNow(t, now)
			res, err := b.client.AllowAll(ctx, rules...)
			o := outcomeOf(client.Result{}, err)
			outs[j] = allOutcome{res, o.err}
		}
		for j := 1; j < len(bs); j++ {
			if format(outs[j]) != format(outs[0]) {
				t.Fatalf("-agree.seed=%d, step %d: AllowAll %+v at %d µs:\n  %-9s %s\n  %-9s %s\n  %-9s %s",
					seed, i, rules, now, bs[0].name, format(outs[0]), bs[1].name, format(outs[1]), bs[2].name, format(outs[2]))
			}
		}
	}
}

// TestAllowAllRing spreads AllowAll calls over two rlservers with a go-redis Ring:
// each call goes to its first key's shard (RL.ALL's first key is its second word, not
// its first), and keeps all its keys there.
func TestAllowAllRing(t *testing.T) {
	addrs := map[string]string{"a": testenv.StartServer(t, resp.Config{}), "b": testenv.StartServer(t, resp.Config{})}
	ring := redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer ring.Close()
	c, err := client.New(ring, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 40 {
		res, err := c.AllowAll(ctx, client.Rule{Key: fmt.Sprintf("user:%d", i), Limit: client.Fixed(2, time.Hour)},
			client.Rule{Key: fmt.Sprintf("app:%d", i), Limit: client.Fixed(5, time.Hour)})
		if err != nil || !res.Allowed {
			t.Fatalf("user:%d: %+v, %v", i, res, err)
		}
	}
	total := 0
	for _, addr := range addrs {
		rdb := newRedis(t, addr)
		n := 0
		for i := range 40 {
			user, app := rdb.Exists(ctx, fmt.Sprintf("user:%d", i)).Val(), rdb.Exists(ctx, fmt.Sprintf("app:%d", i)).Val()
			if user != app {
				t.Errorf("%s: user:%d exists %d, app:%d %d; want them together", addr, i, user, i, app)
			}
			n += int(user)
		}
		if n == 0 {
			t.Errorf("%s holds no key: every call went to one shard", addr)
		}
		total += n
	}
	if total != 40 {
		t.Errorf("%d users over the shards, want 40", total)
	}
}
