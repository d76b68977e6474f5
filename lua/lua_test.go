package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestScripts checks that every command has its script, named by its command and by
// the SHA1 that EVALSHA takes, and built from its parts: common.lua, then the lease
// part for the lease scripts, then the body; rl.all holds every window and bucket
// script as a function. That Redis runs them as rlserver decides is proved by
// ../compat_test.go, and below for the new ones.
func TestScripts(t *testing.T) {
	single := []string{"rl.fixed", "rl.slide", "rl.log", "rl.token", "rl.gcra", "rl.leaky", "cl.throttle", "gcra"}
	for _, command := range append(single, "rl.all", "rl.acquire", "rl.release", "rl.renew") {
		s, ok := scripts[command]
		if !ok {
			t.Errorf("no script for %s", command)
			continue
		}
		sum := sha1.Sum([]byte(s.Source))
		if s.Command != command || s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Errorf("scripts[%q] is named %q with SHA1 %s; want %q and the source's SHA1 %x", command, s.Command, s.SHA1, command, sum)
		}
		if !strings.Contains(s.Source, strings.ToUpper(command)+" reference script") {
			t.Errorf("scripts[%q] holds another command's script", command)
		}
		switch command {
		case "rl.all":
			for _, k := range single[:6] {
				fn := "local function rule_" + strings.TrimPrefix(k, "rl.") + "(KEYS, ARGV)\n" + common
				if !strings.Contains(s.Source, fn) || !strings.Contains(s.Source, strings.ToUpper(k)+" reference script") {
					t.Errorf("rl.all does not hold %s's script as a function", k)
				}
			}
		case "rl.acquire", "rl.release", "rl.renew":
			if !strings.HasPrefix(s.Source, common+leases) || len(s.Source) == len(common+leases) {
				t.Errorf("scripts[%q] is not common.lua and leases.lua followed by a body", command)
			}
		default:
			if !strings.HasPrefix(s.Source, common) || len(s.Source) == len(common) {
				t.Errorf("scripts[%q] is not common.lua followed by a body", command)
			}
		}
	}
	if len(scripts) != 12 {
		t.Errorf("%d scripts, want 12", len(scripts))
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		req  algo.Request
		want string
	}{
		{algo.Request{Kind: algo.KindFixed, Limit: 100, Window: 1_000_000, Cost: 1}, "[100 1000 1 0]"},
		{algo.Request{Kind: algo.KindLog, Limit: 5, Window: 2_000, Cost: 3, Peek: true}, "[5 2 3 1]"},
		{algo.Request{Kind: algo.KindToken, Limit: 10, Window: 1_000_000, Cost: 1, Rate: 4}, "[10 1000 1 0 4]"},
		{algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: 1_000_000, Cost: 1, Burst: 2}, "[10 1000 1 0 2]"},
		{algo.Request{Kind: algo.KindLeaky, Limit: 10, Window: 1_000_000, Cost: 1, Queue: 7}, "[10 1000 1 0 7]"},
		{algo.Request{Kind: algo.KindThrottle, Limit: 15, Rate: 30, Window: 60_000_000, Cost: 1}, "[15 30 60 1]"},
		// A refund of n is a cost of -n.
		{algo.Request{Kind: algo.KindFixed, Limit: 100, Window: 1_000_000, Refund: 7}, "[100 1000 -7 0]"},
		{algo.Request{Kind: algo.KindThrottle, Limit: 15, Rate: 30, Window: 60_000_000, Refund: 3}, "[15 30 60 -3]"},
		// Redis's GCRA: the period as the shortest decimal of its double.
		{nativeGCRA(t, "15 30 60 TOKENS 2"), "[15 30 60 2]"},
		{nativeGCRA(t, "0 7 3600.25"), "[0 7 3600.25 1]"},
		{nativeGCRA(t, "0 1 1e1"), "[0 1 10 1]"},
		{nativeGCRA(t, "0 1 1e-7"), "[0 1 1e-07 1]"},
		{nativeGCRA(t, "0 1 0.1"), "[0 1 0.1 1]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(Args(tt.req)); got != tt.want {
			t.Errorf("Args(%+v) = %s, want %s", tt.req, got, tt.want)
		}
	}
}

func TestArgsAll(t *testing.T) {
	fixed := algo.Request{Kind: algo.KindFixed, Limit: 100, Window: 1_000_000, Cost: 1}
	token := algo.Request{Kind: algo.KindToken, Limit: 10, Window: 2_000, Cost: 3, Rate: 4}
	peek := func(r algo.Request) algo.Request { r.Peek = true; return r }
	tests := []struct {
		rules []algo.Rule
		keys  string
		args  string
	}{
		{[]algo.Rule{{Key: []byte("a"), Req: fixed}}, "[a]", "[0 rl.fixed 100 1000 1 0]"},
		{[]algo.Rule{{Key: []byte("{u}a"), Req: fixed}, {Key: []byte("{u}b"), Req: token}}, "[{u}a {u}b]",
			"[0 rl.fixed 100 1000 1 0 rl.token 10 2 3 0 4]"},
		// rlcmd.ParseRLAll sets Peek on every rule; one is enough to make the call a PEEK.
		{[]algo.Rule{{Key: []byte("a"), Req: peek(fixed)}, {Key: []byte("b"), Req: peek(token)}}, "[a b]",
			"[1 rl.fixed 100 1000 1 0 rl.token 10 2 3 0 4]"},
		{[]algo.Rule{{Key: []byte("a"), Req: fixed}, {Key: []byte("b"), Req: peek(token)}}, "[a b]",
			"[1 rl.fixed 100 1000 1 0 rl.token 10 2 3 0 4]"},
	}
	for _, tt := range tests {
		keys, args := ArgsAll(tt.rules)
		if fmt.Sprint(keys) != tt.keys || fmt.Sprint(args) != tt.args {
			t.Errorf("ArgsAll(%+v) = %v, %v; want %s, %s", tt.rules, keys, args, tt.keys, tt.args)
		}
	}
}

// t0 is an injected now (µs) on a whole second: fixed windows of 1 s begin there.
const t0 = 1_750_000_000_000_000

// call is one step of a scripted test on Redis: a script (or, with script "", the raw
// command args) and the reply wanted, as fmt.Sprint prints it ("error: ..." for an
// error reply; "~regexp" for a reply it must match). unchanged says the call must
// leave its keys exactly as they were: value and expire time.
type call struct {
	script    string
	keys      []string
	args      []any
	want      string
	unchanged bool
}

// newRedis starts a redis-server with every script loaded, or skips without one.
func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	// RESP2: flat replies to HGETALL and ZRANGE WITHSCORES, scores as Redis prints them.
	rdb := redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t), Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	for name, s := range scripts {
		sha, err := rdb.ScriptLoad(context.Background(), s.Source).Result()
		if err != nil || sha != s.SHA1 {
			t.Fatalf("SCRIPT LOAD %s: %s, %v; want %s", name, sha, err, s.SHA1)
		}
	}
	return rdb
}

// runCalls makes the calls in order on rdb and checks each reply, and for unchanged
// calls each key's state.
func runCalls(t *testing.T, rdb *redis.Client, calls []call) {
	t.Helper()
	ctx := context.Background()
	for i, c := range calls {
		var before []string
		if c.unchanged {
			before = dump(t, rdb, c.keys)
		}
		var cmd *redis.Cmd
		if c.script == "" {
			cmd = rdb.Do(ctx, c.args...)
		} else {
			cmd = rdb.EvalSha(ctx, scripts[c.script].SHA1, c.keys, c.args...)
		}
		got := fmt.Sprint(cmd.Val())
		var rerr redis.Error
		if err := cmd.Err(); errors.As(err, &rerr) {
			got = "error: " + err.Error()
		} else if err != nil && err != redis.Nil {
			t.Fatalf("call %d %s %v %v: %v", i, c.script, c.keys, c.args, err)
		}
		if pattern, ok := strings.CutPrefix(c.want, "~"); ok && regexp.MustCompile(pattern).MatchString(got) {
			got = c.want
		}
		if got != c.want {
			t.Errorf("call %d: %s %q %q = %q, want %q", i, c.script, c.keys, c.args, got, c.want)
		}
		if c.unchanged {
			if after := dump(t, rdb, c.keys); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("call %d: %s %v %v changed its keys:\n  before %q\n  after  %q", i, c.script, c.keys, c.args, before, after)
			}
		}
	}
}

// dump is each key's value (DUMP) and expire time (PEXPIRETIME).
func dump(t *testing.T, rdb *redis.Client, keys []string) []string {
	t.Helper()
	var out []string
	for _, k := range keys {
		v, err := rdb.Dump(context.Background(), k).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		at, err := rdb.Do(context.Background(), "PEXPIRETIME", k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x@%d", v, at))
	}
	return out
}

// all is an rl.all call at now (µs), its keys and ARGV from rules.
func all(now int64, want string, unchanged bool, rules ...algo.Rule) call {
	keys, args := ArgsAll(rules)
	return call{"rl.all", keys, append(args, now), want, unchanged}
}

func rule(key string, kind algo.Kind, limit, windowMs int64, peek bool) algo.Rule {
	return algo.Rule{Key: []byte(key), Req: algo.Request{Kind: kind, Limit: limit, Window: windowMs * 1000, Cost: 1, Peek: peek}}
}

// TestAll runs the rl.all script through the design's cases: all admit and consume;
// one refuses and nothing changes, every rule showing its own PEEK answer; PEEK;
// duplicate keys; WRONGTYPE in a later rule.
func TestAll(t *testing.T) {
	rdb := newRedis(t)
	fixed := func(peek bool) algo.Rule { return rule("{u}fixed", algo.KindFixed, 2, 1000, peek) }
	token := func(peek bool) algo.Rule { return rule("{u}token", algo.KindToken, 1, 1000, peek) }
	runCalls(t, rdb, []call{
		all(t0, "[1 [1 2 1 0 1000] [1 1 0 0 1000]]", false, fixed(false), token(false)),
		{"", nil, []any{"HGETALL", "{u}fixed"}, "[fw 1750000000 fc 1]", false},
		// The token bucket refuses: the fixed window, which would admit, keeps its count.
		all(t0+1, "[0 [1 2 0 0 1000] [0 1 0 1000 1000]]", true, fixed(false), token(false)),
		// Its PEEK answer is the same, its key untouched.
		{"rl.fixed", []string{"{u}fixed"}, []any{2, 1000, 1, 1, t0 + 1}, "[1 2 0 0 1000]", true},
		// The other order, the same answers.
		all(t0+1, "[0 [0 1 0 1000 1000] [1 2 0 0 1000]]", true, token(false), fixed(false)),
		// PEEK: both would admit in the next window, with the bucket full again; nothing
		// is written, and both states, fresh by then, are gone.
		all(t0+1_000_000, "[1 [1 2 1 0 1000] [1 1 0 0 1000]]", false, fixed(true), token(false)),
		{"", nil, []any{"EXISTS", "{u}fixed", "{u}token"}, "0", false},
		all(t0+1_000_000, "[1 [1 2 1 0 1000] [1 1 0 0 1000]]", false, fixed(false), token(false)),
		all(t0+1_000_000, "[1 [1 2 0 0 1000]]", true, fixed(true)),
		all(t0+1_000_000, "error: ERR RL.ALL names the same key in two rules", true, fixed(false), rule("{u}fixed", algo.KindLog, 5, 1000, false)),
		// WRONGTYPE in the second rule: the first one's key stays as it was.
		all(t0+1_000_000, "error: WRONGTYPE Operation against a key holding the wrong kind of value", true,
			rule("{u}other", algo.KindLog, 5, 1000, false), rule("{u}fixed", algo.KindLog, 5, 1000, false)),
		{"", nil, []any{"EXISTS", "{u}other"}, "0", false},
		// Every rule's state ends with its own, and the window's key is dropped at its end.
		{"", nil, []any{"PEXPIRETIME", "{u}fixed"}, fmt.Sprint(t0 + 2_000_000), false},
		all(t0+2_000_000, "[1 [1 2 1 0 1000] [1 1 0 0 1000]]", false, fixed(true), token(true)),
		{"", nil, []any{"EXISTS", "{u}fixed", "{u}token"}, "0", false},
	})
}

// TestAllMatchesRules runs random rl.all calls of 1 to 4 rules over a small key pool
// and, beside them, the single scripts on a mirror of each key: each rule for real
// when all admit and the call is no PEEK, else as PEEK. Replies and states must agree.
func TestAllMatchesRules(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken, algo.KindGCRA, algo.KindLeaky}
	now := int64(t0)
	for i := range 2000 {
		now += rng.Int64N(300_000)
		peek := rng.IntN(10) == 0
		var rules []algo.Rule
		for _, k := range rng.Perm(6)[:1+rng.IntN(4)] {
			// Each key keeps its kind, so that no call is WRONGTYPE.
			r := algo.Request{Kind: kinds[k], Limit: 1 + rng.Int64N(4), Window: (1 + rng.Int64N(1000)) * 1000,
				Cost: rng.Int64N(3), Peek: peek}
			switch r.Kind {
			case algo.KindToken:
				r.Rate = rng.Int64N(3)
			case algo.KindGCRA:
				r.Burst = rng.Int64N(3)
			case algo.KindLeaky:
				r.Queue = rng.Int64N(3)
			}
			rules = append(rules, algo.Rule{Key: []byte(fmt.Sprint("all:", k)), Req: r})
		}
		keys, args := ArgsAll(rules)
		got, err := rdb.EvalSha(ctx, scripts["rl.all"].SHA1, keys, append(args, now)...).Slice()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		want := []any{int64(1)}
		for _, rl := range rules {
			r := rl.Req
			r.Peek = true
			v, err := rdb.EvalSha(ctx, scripts[r.Kind.Command()].SHA1, []string{"mirror:" + string(rl.Key)}, append(Args(r), now)...).Result()
			if err != nil {
				t.Fatal(err)
			}
			if v.([]any)[0] != int64(1) {
				want[0] = int64(0)
			}
			want = append(want, v)
		}
		if want[0] == int64(1) && !peek {
			for j, rl := range rules {
				v, err := rdb.EvalSha(ctx, scripts[rl.Req.Kind.Command()].SHA1, []string{"mirror:" + string(rl.Key)}, append(Args(rl.Req), now)...).Result()
				if err != nil {
					t.Fatal(err)
				}
				want[1+j] = v
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("call %d at %d: rl.all %v %v = %v; the rules alone: %v", i, now, keys, args, got, want)
		}
		for _, k := range keys {
			a, b := dump(t, rdb, []string{k}), dump(t, rdb, []string{"mirror:" + k})
			if a[0] != b[0] {
				t.Fatalf("call %d: %s holds %s, its mirror %s", i, k, a[0], b[0])
			}
		}
	}
}

// TestLeases runs the lease scripts on an injected clock: acquire with and without
// ids, a full set, the retry of an acquire, renew, release, and the crash case: a
// lease never released ends at its deadline, and the key with it.
func TestLeases(t *testing.T) {
	rdb := newRedis(t)
	const ms = 1000
	acquire := func(now int64, limit, leaseMs int64, id string, want string) call {
		return call{"rl.acquire", []string{"lease"}, []any{limit, leaseMs, id, now}, want, false}
	}
	release := func(now int64, id string, want string) call {
		return call{"rl.release", []string{"lease"}, []any{id, now}, want, false}
	}
	renew := func(now int64, id string, leaseMs int64, want string) call {
		return call{"rl.renew", []string{"lease"}, []any{id, leaseMs, now}, want, false}
	}
	raw := func(want string, args ...any) call { return call{"", nil, args, want, false} }
	ends := func(at int64) call { return raw(fmt.Sprint(at), "PEXPIRETIME", "lease") }
	same := func(c call) call { c.unchanged = true; return c }
	binary := "\x00\r\n " + strings.Repeat("x", 124)
	runCalls(t, rdb, []call{
		acquire(t0, 2, 100, "a", "[1 2 1 0 a]"),
		ends(t0 + 100*ms),
		acquire(t0+10*ms, 2, 300, "b", "[1 2 0 0 b]"),
		ends(t0 + 310*ms),
		// Full: the earliest deadline, a's, frees a place in 90 ms (rounded up).
		same(acquire(t0+10*ms+1, 2, 100, "c", "[0 2 0 90 <nil>]")),
		// A retry of a's acquire takes no second place: a new deadline.
		acquire(t0+20*ms, 2, 100, "a", "[1 2 0 0 a]"),
		same(acquire(t0+20*ms, 2, 100, "", "[0 2 0 100 <nil>]")),
		// A lower limit keeps the leases it finds; a place is free once both a and b
		// have ended.
		same(acquire(t0+20*ms, 1, 100, "c", "[0 1 0 290 <nil>]")),
		raw(fmt.Sprintf("[l:a %d l:b %d]", t0+120*ms, t0+310*ms), "ZRANGE", "lease", 0, -1, "WITHSCORES"),
		renew(t0+30*ms, "a", 1000, "1"),
		ends(t0 + 1030*ms),
		// Renewing to an earlier end moves the key's end back to b's.
		renew(t0+40*ms, "a", 10, "1"),
		ends(t0 + 310*ms),
		same(renew(t0+40*ms, "nobody", 10, "0")),
		// a ended at t0+50 ms: not renewed, not released, no longer counted.
		renew(t0+50*ms, "a", 1000, "0"),
		release(t0+50*ms, "a", "0"),
		raw("1", "ZCARD", "lease"),
		acquire(t0+50*ms, 2, 100, "", "~^\\[1 2 0 0 [0-9a-f]{16}\\]$"),
		release(t0+60*ms, "b", "1"),
		ends(t0 + 150*ms),
		// The generated lease is never released: it ends at its deadline, and the key
		// with it (under now_us, at the first call from then on).
		same(release(t0+150*ms-1, "nobody", "0")),
		release(t0+150*ms, "nobody", "0"),
		raw("0", "EXISTS", "lease"),
		acquire(t0+150*ms, 2, 100, "d", "[1 2 1 0 d]"),
		release(t0+160*ms, "d", "1"),
		raw("0", "EXISTS", "lease"),
		// Ids are binary-safe.
		acquire(t0, 1, 100, binary, "[1 1 0 0 "+binary+"]"),
		release(t0, binary, "1"),
		raw("0", "EXISTS", "lease"),
		// At the end of time (the clock stops at 2^53-1 µs) a deadline is capped at
		// 2^53, where a double score is still exact: a's place is free in 1 ms.
		acquire(1<<53-1, 2, 1, "a", "[1 2 1 0 a]"),
		raw(fmt.Sprintf("[l:a %d]", int64(1<<53)), "ZRANGE", "lease", 0, -1, "WITHSCORES"),
		same(acquire(1<<53-1, 1, 1, "b", "[0 1 0 1 <nil>]")),
		renew(1<<53-1, "a", 1000, "1"),
		raw(fmt.Sprintf("[l:a %d]", int64(1<<53)), "ZRANGE", "lease", 0, -1, "WITHSCORES"),
	})
}

// TestLeaseIDs draws many ids in one key: all of the shape, all different.
func TestLeaseIDs(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	shape := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for i := range 1000 {
		// The same now each time: the ids still differ.
		v, err := rdb.EvalSha(ctx, scripts["rl.acquire"].SHA1, []string{"ids"}, 1000, 60_000, "", t0).Slice()
		if err != nil || len(v) != 5 || fmt.Sprint(v[:4]) != fmt.Sprintf("[1 1000 %d 0]", 999-i) {
			t.Fatalf("acquire %d: %v, %v", i, v, err)
		}
		id, _ := v[4].(string)
		if !shape.MatchString(id) || seen[id] {
			t.Fatalf("acquire %d: id %q: want 16 lower-case hex digits, new in the key", i, id)
		}
		seen[id] = true
	}
}

// TestWrongType checks that the lease scripts refuse a hash, an RL.LOG set and a
// string, and the other scripts a lease set, changing nothing.
func TestWrongType(t *testing.T) {
	rdb := newRedis(t)
	const wrongType = "error: WRONGTYPE Operation against a key holding the wrong kind of value"
	runCalls(t, rdb, []call{
		{"rl.fixed", []string{"hash"}, []any{5, 1000, 1, 0, t0}, "[1 5 4 0 1000]", false},
		{"rl.log", []string{"log"}, []any{5, 1000, 1, 0, t0}, "[1 5 4 0 1000]", false},
		{"", nil, []any{"SET", "string", "x"}, "OK", false},
		{"rl.acquire", []string{"lease"}, []any{5, 1000, "a", t0}, "[1 5 4 0 a]", false},
		// A lease set whose only lease left the log's window long ago (set by hand).
		{"", nil, []any{"ZADD", "old", t0 - 10_000_000, "l:x"}, "1", false},
	})
	var calls []call
	for _, key := range []string{"hash", "log", "string"} {
		calls = append(calls,
			call{"rl.acquire", []string{key}, []any{5, 1000, "", t0}, wrongType, true},
			call{"rl.release", []string{key}, []any{"a", t0}, wrongType, true},
			call{"rl.renew", []string{key}, []any{"a", 1000, t0}, wrongType, true})
	}
	for _, key := range []string{"lease", "old"} {
		calls = append(calls,
			call{"rl.log", []string{key}, []any{5, 1, 1, 0, t0}, wrongType, true},
			call{"rl.fixed", []string{key}, []any{5, 1000, 1, 0, t0}, wrongType, true},
			all(t0, wrongType, true, rule(key, algo.KindLog, 5, 1000, false)))
	}
	runCalls(t, rdb, calls)
}

// TestRealClock runs the new scripts without now_us: they read Redis TIME, and the
// keys expire through Redis itself.
func TestRealClock(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	keys, args := ArgsAll([]algo.Rule{rule("{r}a", algo.KindFixed, 1, 60_000, false), rule("{r}b", algo.KindGCRA, 1, 60_000, false)})
	for i, want := range []string{"1", "0"} {
		v, err := rdb.EvalSha(ctx, scripts["rl.all"].SHA1, keys, args...).Slice()
		if err != nil || len(v) != 3 || fmt.Sprint(v[0]) != want {
			t.Fatalf("rl.all call %d: %v, %v; want allowed %s", i, v, err, want)
		}
	}
	v, err := rdb.EvalSha(ctx, scripts["rl.acquire"].SHA1, []string{"{r}lease"}, 1, 60_000, "x").Slice()
	if err != nil || fmt.Sprint(v) != "[1 1 0 0 x]" {
		t.Fatalf("rl.acquire: %v, %v", v, err)
	}
	for _, k := range []string{"{r}a", "{r}b", "{r}lease"} {
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Errorf("PTTL %s = %v, %v; want within the minute", k, ttl, err)
		}
	}
	if n, err := rdb.EvalSha(ctx, scripts["rl.release"].SHA1, []string{"{r}lease"}, "x").Int(); err != nil || n != 1 {
		t.Errorf("rl.release: %v, %v", n, err)
	}
	if n, _ := rdb.Exists(ctx, "{r}lease").Result(); n != 0 {
		t.Errorf("the lease key outlives its last lease")
	}
}

// nativeGCRA is Redis's GCRA's request for args, as rlserver parses it.
func nativeGCRA(t *testing.T, args string) algo.Request {
	t.Helper()
	var raw [][]byte
	for _, a := range strings.Fields(args) {
		raw = append(raw, []byte(a))
	}
	r, err := rlcmd.ParseGCRA(raw)
	if err != nil {
		t.Fatalf("ParseGCRA(%q): %v", args, err)
	}
	return r
}

// TestNativeGCRA runs the gcra script (Redis 8.8's GCRA): Redis's numbers, a limited
// call changing nothing, the ms clock and expiry, and WRONGTYPE on rl.gcra's keys and
// on gcra's for rl.gcra.
func TestNativeGCRA(t *testing.T) {
	rdb := newRedis(t)
	const wrongType = "error: WRONGTYPE Operation against a key holding the wrong kind of value"
	runCalls(t, rdb, []call{
		// Redis's "requests within burst" case: 6 of max_burst 5 at once, then limited.
		{"gcra", []string{"k"}, []any{5, 1, "60", 1, t0}, "[0 6 5 -1 60]", false},
		{"gcra", []string{"k"}, []any{5, 1, "60", 4, t0}, "[0 6 1 -1 300]", false},
		{"gcra", []string{"k"}, []any{5, 1, "60", 1, t0}, "[0 6 0 -1 360]", false},
		{"gcra", []string{"k"}, []any{5, 1, "60", 1, t0}, "[1 6 0 60 360]", true},
		{"gcra", []string{"k"}, []any{5, 1, "60", 7, t0}, "[1 6 0 -1 360]", true}, // never fits
		{"", nil, []any{"PEXPIRETIME", "k"}, fmt.Sprint(t0 + 360_000_000), false},
		// Not rl.gcra's state; 60 s on, one more fits.
		{"rl.gcra", []string{"k"}, []any{1, 60000, 1, 0, 6, t0 + 60_000_000}, wrongType, true},
		{"gcra", []string{"k"}, []any{5, 1, "60", 1, t0 + 60_000_000}, "[0 6 0 -1 360]", false},
		// T from the period in doubles: 2.09583 s / 44 is 47632.99999999999 µs, so 47632.
		{"gcra", []string{"f"}, []any{0, 44, "2.09583", 1, t0}, "[0 1 0 -1 1]", false},
		{"", nil, []any{"HGET", "f", "gn"}, fmt.Sprint(t0 + 47632), false},
		// Redis's clock: T = 100 µs, and every call within t0's ms decides at t0, so two
		// fit (burst 2) and the third does not; the key goes as the next ms begins.
		{"gcra", []string{"m"}, []any{1, 10000, "1", 1, t0 + 300}, "[0 2 1 -1 1]", false},
		{"", nil, []any{"PEXPIRETIME", "m"}, fmt.Sprint(t0 + 1000), false},
		{"gcra", []string{"m"}, []any{1, 10000, "1", 1, t0 + 900}, "[0 2 0 -1 1]", false},
		{"gcra", []string{"m"}, []any{1, 10000, "1", 1, t0 + 999}, "[1 2 0 1 1]", true},
		{"gcra", []string{"m"}, []any{1, 10000, "1", 1, t0 + 1000}, "[0 2 1 -1 1]", false},
		{"cl.throttle", []string{"cell"}, []any{5, 1, 60, 1, t0}, "[0 6 5 -1 60]", false},
		{"gcra", []string{"cell"}, []any{5, 1, "60", 1, t0}, wrongType, true},
	})
}

// TestNamed: Named and Commands read the scripts, and an unknown name has none.
func TestNamed(t *testing.T) {
	names := Commands()
	if len(names) != len(scripts) || !slices.IsSorted(names) {
		t.Errorf("Commands() = %v", names)
	}
	for _, name := range names {
		if s := Named(name); s.Command != name || s.Source == "" {
			t.Errorf("Named(%q) = %+v", name, s)
		}
	}
	if s := Named("rl.nope"); s != (Script{}) {
		t.Errorf("Named(rl.nope) = %+v, want the zero Script", s)
	}
}
