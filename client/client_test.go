package client_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/lua"
	"github.com/rlserver/rlserver/resp"
)

const (
	sec  = time.Second
	ms   = time.Millisecond
	hour = time.Hour
)

func TestLimitValidate(t *testing.T) {
	year := 365 * 24 * hour
	cases := []struct {
		name  string
		limit client.Limit
		want  string // "" when valid, else a part of the message
	}{
		{"fixed", client.Fixed(10, sec), ""},
		{"token 1ms", client.Token(1, ms), ""},
		{"leaky no queue", client.Leaky(1, hour, 0), ""},
		{"largest", client.GCRA(1_000_000_000, year, 1_000_000_000), ""},
		{"zero", client.Limit{}, "the zero Limit"},
		{"limit 0", client.Fixed(0, sec), "rl.fixed limit must be between 1 and 1000000000, got 0"},
		{"capacity 1e9+1", client.Token(1_000_000_001, sec), "rl.token capacity must be between 1 and 1000000000"},
		{"rate 0", client.TokenRate(0, sec, 10), "rl.token rate must be between 1 and 1000000000, got 0"},
		{"sub-ms window", client.Slide(5, 1500*time.Microsecond), "rl.slide window must be a whole number of milliseconds"},
		{"no window", client.Log(5, 0), "rl.log window must be"},
		{"window over a year", client.Fixed(5, year+ms), "got 8760h0m0.001s"},
		{"burst 0", client.GCRA(10, sec, 0), "rl.gcra burst must be between 1 and 1000000000, got 0"},
		{"queue -1", client.Leaky(10, sec, -1), "rl.leaky queue must be between 0 and 1000000000, got -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limit.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, client.ErrBadLimit):
				t.Fatalf("Validate: %v, want ErrBadLimit saying %q", err, tc.want)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	cases := []struct {
		limit client.Limit
		n     int
		per   time.Duration
	}{
		{client.Fixed(100, sec), 100, sec},
		{client.Token(10, hour), 10, hour},
		{client.TokenRate(5, sec, 50), 5, sec},
		{client.GCRA(20, sec, 3), 20, sec},
		{client.Leaky(7, sec, 2), 7, sec},
	}
	for _, tc := range cases {
		if n, per := tc.limit.Quota(); n != tc.n || per != tc.per {
			t.Errorf("%+v.Quota() = %d, %v; want %d, %v", tc.limit, n, per, tc.n, tc.per)
		}
	}
}

func TestOptions(t *testing.T) {
	good := redis.NewClient(redisOptions("127.0.0.1:1")) // never dialled: construction does no I/O
	defer good.Close()
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer plain.Close()
	cases := []struct {
		name string
		make func() (*client.Client, error)
		want string // "" when valid
	}{
		{"New", func() (*client.Client, error) { return client.New(good, client.Options{}) }, ""},
		{"NewLua", func() (*client.Client, error) { return client.NewLua(good, client.LuaOptions{MaxLogLimit: 10}) }, ""},
		{"NewEmbedded", func() (*client.Client, error) { return client.NewEmbedded(client.EmbeddedOptions{Shards: 4}) }, ""},
		{"no options", func() (*client.Client, error) { return client.New(plain) }, ""},
		{"no options, Lua", func() (*client.Client, error) { return client.NewLua(plain) }, ""},
		{"no options, embedded", func() (*client.Client, error) { return client.NewEmbedded() }, ""},
		{"nil client", func() (*client.Client, error) { return client.New(nil, client.Options{}) }, "needs a go-redis client"},
		{"two options", func() (*client.Client, error) { return client.New(good, client.Options{}, client.Options{}) }, "at most one options value"},
		{"Shards 3", func() (*client.Client, error) { return client.NewEmbedded(client.EmbeddedOptions{Shards: 3}) }, "power of two"},
		{"MaxLogLimit -1", func() (*client.Client, error) { return client.NewEmbedded(client.EmbeddedOptions{MaxLogLimit: -1}) }, "MaxLogLimit must be between 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.make()
			switch {
			case tc.want == "" && (err != nil || c == nil):
				t.Fatalf("got %v, %v; want a Client", c, err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("got %v, %v; want an error saying %q", c, err, tc.want)
			}
		})
	}
}

// op is one call of an exact scenario.
type op struct {
	after   time.Duration // the clock moves this far before the call
	call    string        // "allow", "peek" or "reset"
	key     string
	limit   client.Limit
	n       int // the cost, for "allow"
	want    client.Result
	wantErr error
}

func allow(key string, l client.Limit, n int, want client.Result) op {
	return op{call: "allow", key: key, limit: l, n: n, want: want}
}

func peek(key string, l client.Limit, want client.Result) op {
	return op{call: "peek", key: key, limit: l, want: want}
}

func peekN(key string, l client.Limit, n int, want client.Result) op {
	return op{call: "peekN", key: key, limit: l, n: n, want: want}
}

func (o op) later(d time.Duration) op { o.after = d; return o }

// run makes the call on c.
func (o op) run(ctx context.Context, c *client.Client) (client.Result, error) {
	switch o.call {
	case "allow":
		return c.AllowN(ctx, o.key, o.limit, o.n)
	case "peek":
		return c.Peek(ctx, o.key, o.limit)
	case "peekN":
		return c.PeekN(ctx, o.key, o.limit, o.n)
	}
	return client.Result{}, c.Reset(ctx, o.key)
}

// scenarios are worked by hand from docs/commands.md's formulas, each from its own moment:
// a whole second plus start, 15 s into a minute (t0 below).
var scenarios = []struct {
	name  string
	start time.Duration
	ops   []op
}{
	{"token", 0, func() []op {
		l := client.Token(10, sec) // T = 100 ms a token
		return []op{
			allow("t", l, 10, client.Result{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: sec}),
			allow("t", l, 1, client.Result{Limit: 10, RetryAfter: 100 * ms, ResetAfter: sec}),
			allow("t", l, 1, client.Result{Allowed: true, Limit: 10, ResetAfter: sec}).later(100 * ms),
			allow("t", l, 11, client.Result{Limit: 10, RetryAfter: client.Never, ResetAfter: sec}),
			peek("t", l, client.Result{Limit: 10, RetryAfter: 100 * ms, ResetAfter: sec}),
			{call: "reset", key: "t"},
			peek("t", l, client.Result{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 100 * ms}),
			allow("t", l, 1, client.Result{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 100 * ms}),
			allow("t", l, 0, client.Result{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 100 * ms}),
		}
	}()},
	{"token rate", 0, func() []op {
		l := client.TokenRate(2, sec, 4) // a burst of 4, then 2 a second
		return []op{
			allow("tr", l, 4, client.Result{Allowed: true, Limit: 4, ResetAfter: 2 * sec}),
			allow("tr", l, 1, client.Result{Limit: 4, RetryAfter: 500 * ms, ResetAfter: 2 * sec}),
		}
	}()},
	{"fixed", 0, func() []op {
		l := client.Fixed(3, time.Minute) // the window ends 45 s after t0
		return []op{
			allow("f", l, 1, client.Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 45 * sec}),
			peekN("f", l, 3, client.Result{Limit: 3, Remaining: 2, RetryAfter: 45 * sec, ResetAfter: 45 * sec}),
			peekN("f", l, 2, client.Result{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 45 * sec}),
			allow("f", l, 2, client.Result{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 45 * sec}),
			allow("f", l, 1, client.Result{Limit: 3, RetryAfter: 45 * sec, ResetAfter: 45 * sec}),
			allow("f", l, 1, client.Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Minute}).later(45 * sec),
		}
	}()},
	{"slide", 500 * ms, func() []op {
		l := client.Slide(4, sec) // half way through a window
		return []op{
			allow("s", l, 4, client.Result{Allowed: true, Limit: 4, ResetAfter: 1500 * ms}),
			// Next window, where 4 weighs 4·(1 − e/W): 4 − 1 ≤ 4·(1 − e/W) at e = 250 ms.
			allow("s", l, 1, client.Result{Limit: 4, RetryAfter: 750 * ms, ResetAfter: 1500 * ms}),
			allow("s", l, 1, client.Result{Allowed: true, Limit: 4, ResetAfter: 1750 * ms}).later(750 * ms),
		}
	}()},
	{"log", 0, func() []op {
		l := client.Log(2, sec)
		return []op{
			allow("l", l, 1, client.Result{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: sec}),
			allow("l", l, 1, client.Result{Allowed: true, Limit: 2, ResetAfter: sec}).later(300 * ms),
			allow("l", l, 1, client.Result{Limit: 2, RetryAfter: 700 * ms, ResetAfter: sec}),
		}
	}()},
	{"gcra", 0, func() []op {
		l := client.GCRA(10, sec, 2) // T = 100 ms, τ = 200 ms
		return []op{
			allow("g", l, 1, client.Result{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 100 * ms}),
			allow("g", l, 1, client.Result{Allowed: true, Limit: 2, ResetAfter: 200 * ms}),
			allow("g", l, 1, client.Result{Limit: 2, RetryAfter: 100 * ms, ResetAfter: 200 * ms}),
			allow("g", l, 3, client.Result{Limit: 2, RetryAfter: client.Never, ResetAfter: 200 * ms}),
		}
	}()},
	{"leaky", 0, func() []op {
		l := client.Leaky(2, sec, 1) // one leaves every 500 ms, one may wait
		return []op{
			allow("k", l, 1, client.Result{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms}),
			// Allowed, after waiting its turn: RetryAfter is the delay.
			allow("k", l, 1, client.Result{Allowed: true, Limit: 2, RetryAfter: 500 * ms, ResetAfter: sec}),
			allow("k", l, 1, client.Result{Limit: 2, RetryAfter: 500 * ms, ResetAfter: sec}),
		}
	}()},
	{"wrong type", 0, []op{
		allow("w", client.Fixed(3, sec), 1, client.Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: sec}),
		{call: "allow", key: "w", limit: client.Token(3, sec), n: 1, wantErr: client.ErrWrongType},
		{call: "reset", key: "w"},
		allow("w", client.Token(3, sec), 1, client.Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 334 * ms}),
	}},
	{"bad calls", 0, []op{
		{call: "allow", key: "b", limit: client.Fixed(3, sec), n: -1, wantErr: client.ErrBadLimit},
		{call: "allow", key: "b", limit: client.Fixed(3, sec), n: 3001, wantErr: client.ErrBadLimit},
		{call: "allow", key: "b", limit: client.Log(100_001, sec), n: 1, wantErr: client.ErrBadLimit},
		{call: "allow", key: "b", limit: client.Fixed(0, sec), n: 1, wantErr: client.ErrBadLimit},
		// None of them created a state.
		peek("b", client.Fixed(3, sec), client.Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: sec}),
		allow("b", client.Fixed(3, sec), 3000, client.Result{Limit: 3, Remaining: 3, RetryAfter: client.Never}),
	}},
}

// t0 is 15 s into a minute, in µs since the epoch.
var t0 = time.Unix(1_750_000_020+15, 0).UnixMicro()

// TestExact runs the hand-worked scenarios on every backend, each on a frozen clock.
func TestExact(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					now := t0 + sc.start.Microseconds()
					for i, o := range sc.ops {
						now += o.after.Microseconds()
						b.setNow(t, now)
						o.key = sc.name + ":" + o.key
						got, err := o.run(context.Background(), b.client)
						if o.wantErr != nil {
							if !errors.Is(err, o.wantErr) {
								t.Fatalf("call %d, %s %s: %v, want %v", i, o.call, o.key, err, o.wantErr)
							}
							continue
						}
						if err != nil || got != o.want {
							t.Fatalf("call %d, %s %s cost %d:\n got %+v, %v\nwant %+v", i, o.call, o.key, o.n, got, err, o.want)
						}
					}
				})
			}
		})
	}
}

// TestRealClock makes calls on each backend's own clock: minute-long windows keep the
// durations within the test's run time of the frozen answers.
func TestRealClock(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			if b.rdb == nil { // the embedded backend on the real clock
				c, err := client.NewEmbedded(client.EmbeddedOptions{})
				if err != nil {
					t.Fatal(err)
				}
				b.client = c
			}
			ctx := context.Background()
			l := client.GCRA(3, time.Minute, 3) // one per 20 s
			for i := range 4 {
				res, err := b.client.Allow(ctx, "real", l)
				if err != nil {
					t.Fatal(err)
				}
				if res.Allowed != (i < 3) || res.Remaining != max(0, 2-i) {
					t.Fatalf("call %d: %+v, want allowed %v, remaining %d", i, res, i < 3, max(0, 2-i))
				}
				if i == 3 && (res.RetryAfter <= 19*sec || res.RetryAfter > 20*sec || res.ResetAfter <= 59*sec || res.ResetAfter > time.Minute) {
					t.Fatalf("denied call: %+v, want RetryAfter in (19s, 20s], ResetAfter in (59s, 60s]", res)
				}
			}
		})
	}
}

// TestConcurrentCalls has 20 goroutines make 20 calls each on one key with room for
// 100: exactly 100 pass, on every backend.
func TestConcurrentCalls(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			l := client.Token(100, 24*hour) // the next token comes after 864 s
			var wg sync.WaitGroup
			var mu sync.Mutex
			allowed := 0
			var firstErr error
			for range 20 {
				wg.Go(func() {
					for range 20 {
						res, err := b.client.Allow(context.Background(), "shared", l)
						mu.Lock()
						if err != nil && firstErr == nil {
							firstErr = err
						}
						if res.Allowed {
							allowed++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if firstErr != nil {
				t.Fatal(firstErr)
			}
			if allowed != 100 {
				t.Fatalf("%d of 400 allowed, want exactly 100", allowed)
			}
		})
	}
}

// TestNoScript flushes Redis's script cache: the call falls back to EVAL, which caches
// the script again for the next EVALSHA.
func TestNoScript(t *testing.T) {
	b := redisLua(t)
	ctx := context.Background()
	for _, round := range []string{"after SCRIPT FLUSH", "cached again"} {
		if round == "after SCRIPT FLUSH" {
			if err := b.rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if res, err := b.client.Allow(ctx, "noscript", client.Fixed(5, hour)); err != nil || !res.Allowed {
			t.Fatalf("%s: %+v, %v", round, res, err)
		}
		if ok, err := b.rdb.ScriptExists(ctx, lua.Named("rl.fixed").SHA1).Result(); err != nil || !ok[0] {
			t.Fatalf("%s: SCRIPT EXISTS = %v, %v; want the script cached", round, ok, err)
		}
	}
}

// TestServerRefuses: a limit the server's own configuration refuses is ErrBadLimit,
// as on the other backends.
func TestServerRefuses(t *testing.T) {
	rdb := newRedis(t, testenv.StartServer(t, resp.Config{Config: core.Config{MaxLogLimit: 10}}))
	c, err := client.New(rdb, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Allow(context.Background(), "log", client.Log(11, sec))
	if !errors.Is(err, client.ErrBadLimit) || !strings.Contains(err.Error(), "between 1 and 10") {
		t.Fatalf("RL.LOG limit 11 on a server capped at 10: %v, want ErrBadLimit from the server", err)
	}
}

// TestUnavailable: a refused connection, a server that never answers, a context
// already done, and rlserver's commands sent to plain Redis all give ErrUnavailable.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	dead := testenv.DeadAddr(t)
	stalled := testenv.StalledAddr(t)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name    string
		addr    string
		lua     bool
		ctx     context.Context
		wantErr error // besides ErrUnavailable
	}{
		{"refused", dead, false, ctx, nil},
		{"refused lua", dead, true, ctx, nil},
		{"stalled", stalled, false, ctx, context.DeadlineExceeded},
		{"stalled lua", stalled, true, ctx, context.DeadlineExceeded},
		{"canceled", dead, false, canceled, context.Canceled},
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		cases = append(cases, struct {
			name    string
			addr    string
			lua     bool
			ctx     context.Context
			wantErr error
		}{"RL.* on plain Redis", testenv.StartRedis(t), false, ctx, nil})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb := newRedis(t, tc.addr)
			construct := constructors[0]
			if tc.lua {
				construct = constructors[1]
			}
			c, err := construct(rdb, client.Options{Timeout: 50 * ms})
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_, err = c.Allow(tc.ctx, "k", client.Fixed(1, sec))
			if !errors.Is(err, client.ErrUnavailable) || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Allow: %v, want ErrUnavailable (and %v)", err, tc.wantErr)
			}
			if err := c.Reset(tc.ctx, "k"); !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("Reset: %v, want ErrUnavailable", err)
			}
			if _, err := c.AllowAll(tc.ctx, client.Rule{Key: "k", Limit: client.Fixed(1, sec)}); !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("AllowAll: %v, want ErrUnavailable", err)
			}
			if l, err := c.Acquire(tc.ctx, "k", 1, sec); l != nil || !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("Acquire: %v, %v; want ErrUnavailable", l, err)
			}
			// A bounded real-clock check: the 50 ms budget, not go-redis's 3 s ReadTimeout.
			if d := time.Since(began); d > 2*sec {
				t.Fatalf("four calls took %v with a 50 ms budget each", d)
			}
		})
	}
}

// TestRing spreads keys over two servers with a go-redis Ring, on both network
// backends: every key's calls land on one shard, and both shards get keys.
func TestRing(t *testing.T) {
	for _, lua := range []bool{false, true} {
		name := map[bool]string{false: "rlserver", true: "redis+lua"}[lua]
		t.Run(name, func(t *testing.T) {
			addrs := map[string]string{}
			for _, shard := range []string{"a", "b"} {
				if lua {
					addrs[shard] = testenv.StartRedis(t)
				} else {
					addrs[shard] = testenv.StartServer(t, resp.Config{})
				}
			}
			ring := redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1})
			defer ring.Close()
			construct := constructors[0]
			if lua {
				construct = constructors[1]
			}
			c, err := construct(ring, client.Options{Timeout: testTimeout})
			if err != nil {
				t.Fatal(err)
			}
			spreadKeys(t, c, slices.Collect(maps.Values(addrs)))
		})
	}
}

// spreadKeys calls 40 keys twice each on c: the second call sees the first's state,
// and DBSIZE on each shard's address shows every shard used and 40 keys in all.
func spreadKeys(t *testing.T, c *client.Client, shards []string) {
	t.Helper()
	ctx := context.Background()
	l := client.Fixed(2, hour)
	for round, remaining := range []int{1, 0} {
		for i := range 40 {
			res, err := c.Allow(ctx, fmt.Sprintf("user:%d", i), l)
			if err != nil || !res.Allowed || res.Remaining != remaining {
				t.Fatalf("round %d, user:%d: %+v, %v; want allowed, remaining %d", round, i, res, err, remaining)
			}
		}
	}
	var total int64
	var sizes []int64
	for _, addr := range shards {
		sizes = append(sizes, newRedis(t, addr).DBSize(ctx).Val())
	}
	for _, n := range sizes {
		if n == 0 {
			t.Errorf("a shard holds no key: %v", sizes)
		}
		total += n
	}
	if total != 40 {
		t.Errorf("%d keys over the shards (%v), want 40", total, sizes)
	}
}

// TestCluster runs the Lua backend on a three-node Redis Cluster: each call goes to
// the node that owns its key.
func TestCluster(t *testing.T) {
	cli := testenv.RedisTool(t, "redis-cli")
	var addrs []string
	for range 3 {
		addrs = append(addrs, testenv.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000"))
	}
	create := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	for _, addr := range addrs { // every node must agree the slots are covered
		rdb := newRedis(t, addr)
		for deadline := time.Now().Add(10 * sec); ; time.Sleep(50 * ms) {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: cluster not ok after 10 s: %v %s", addr, err, info)
			}
		}
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer cluster.Close()
	c, err := client.NewLua(cluster, client.LuaOptions{Options: client.Options{Timeout: testTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	spreadKeys(t, c, addrs)
	// AllowAll's keys must share a slot: a hash tag makes them, else CROSSSLOT.
	l := client.Fixed(2, hour)
	res, err := c.AllowAll(ctx, client.Rule{Key: "{user:7}:a", Limit: l}, client.Rule{Key: "{user:7}:b", Limit: l})
	if err != nil || !res.Allowed {
		t.Fatalf("AllowAll on one hash tag: %+v, %v", res, err)
	}
	if _, err := c.AllowAll(ctx, client.Rule{Key: "user:1", Limit: l}, client.Rule{Key: "user:2", Limit: l}); !errors.Is(err, client.ErrBadLimit) ||
		!strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("AllowAll over two slots: %v, want ErrBadLimit (CROSSSLOT)", err)
	}
}

// TestGoRedisDefaults: a go-redis client with its default options (no
// ContextTimeoutEnabled, so go-redis would wait for a stalled server until its
// ReadTimeout of 3 s) still gets each call back by its budget, batched or not, on
// both server backends.
func TestGoRedisDefaults(t *testing.T) {
	const budget = 100 * ms
	for _, b := range []client.Batch{{}, {Off: true}} {
		for i, construct := range constructors {
			t.Run(fmt.Sprintf("%d/%+v", i, b), func(t *testing.T) {
				rdb := redis.NewClient(&redis.Options{Addr: testenv.StalledAddr(t)})
				defer rdb.Close()
				c, err := construct(rdb, client.Options{Timeout: budget, Batch: b})
				if err != nil {
					t.Fatal(err)
				}
				began := time.Now()
				_, err = c.Allow(context.Background(), "k", client.Fixed(1, sec))
				if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Allow: %v, want ErrUnavailable and DeadlineExceeded", err)
				}
				if took := time.Since(began); took > budget+time.Second {
					t.Errorf("Allow took %v on a budget of %v", took, budget)
				}
			})
		}
	}
}

// TestDeadlineIsTheBudget: a context with a deadline of its own is the call's budget,
// not Options.Timeout: a stalled call lasts until the caller's deadline, longer than
// the Timeout, and no longer.
func TestDeadlineIsTheBudget(t *testing.T) {
	rdb := newRedis(t, testenv.StalledAddr(t))
	c, err := client.New(rdb, client.Options{Timeout: 20 * ms})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*ms)
	defer cancel()
	began := time.Now()
	_, err = c.Allow(ctx, "k", client.Fixed(1, sec))
	took := time.Since(began)
	if !errors.Is(err, client.ErrUnavailable) || took < 250*ms || took > 2*sec {
		t.Errorf("Allow: %v after %v; want ErrUnavailable after the caller's 300ms", err, took)
	}
}
