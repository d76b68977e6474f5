// The compatibility suite's differential tests: seeded random calls on an injected
// clock, rlserver, the scripts on Redis and package algo answering alike (compat_test.go).

package rlserver_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/lua"
)

// step is one call of a differential run.
type step struct {
	key  string
	now  int64        // µs
	req  algo.Request // what the call means
	args []any        // the command rlserver gets
}

// outcome is what one side answers to a step: the reply or error, then whether the
// key exists after it and its PTTL (-2 when absent).
type outcome struct {
	reply  [5]int64
	err    string
	exists bool
	pttl   int64
}

func (o outcome) String() string {
	if o.err != "" {
		return fmt.Sprintf("error %q, exists %v, pttl %d", o.err, o.exists, o.pttl)
	}
	return fmt.Sprintf("%v, exists %v, pttl %d", o.reply, o.exists, o.pttl)
}

// maxStep caps one time step (µs, 2.8 hours) so that a million steps keep now far
// below 2^53, where algo's float64 times stop being exact.
const maxStep = 10_000_000_000

// genSteps draws n calls of the given kinds over 4 keys: parameters per key (redrawn
// now and then: a key read under new parameters), costs around the limit, PEEK, and
// time steps from 0 to well past the window, in bursts and calm spells, and now and then
// (if refunds) a REFUND. With several
// kinds, keys are shared: each key has a usual kind that changes now and then, so
// WRONGTYPE comes up, but a quarter of the time only while the key holds another
// kind's state (a private algoSide tells; left alone, the long states a huge cost
// leaves would make most calls WRONGTYPE). It fails t if rlcmd.ParseRequest reads a command
// otherwise than the step means it.
func genSteps(t *testing.T, seed uint64, label string, n int, refunds bool, ks ...algo.Kind) []step {
	rng := rand.New(rand.NewPCG(seed, uint64(len(ks))<<8|uint64(ks[0])))
	type slot struct {
		key  int
		kind algo.Kind
	}
	params := map[slot]algo.Request{}
	kindOf := make([]algo.Kind, 4) // each key's usual kind, when several share the keys
	holder := algoSide{map[string]*algoKey{}}
	burst := false
	now := 1_750_000_000_000_000 + rng.Int64N(1_000_000_000_000)
	steps := make([]step, n)
	for i := range steps {
		key := rng.IntN(4)
		name := fmt.Sprintf("diff:%s:%d", label, key)
		if kindOf[key] == 0 || rng.IntN(10) == 0 {
			kindOf[key] = ks[rng.IntN(len(ks))]
		}
		s := slot{key, kindOf[key]}
		if h := holder.keys[name]; h != nil && h.freshAt > now && h.kind != s.kind && rng.IntN(4) != 0 {
			s.kind = h.kind
		}
		r, ok := params[s]
		if !ok || rng.IntN(30) == 0 {
			r = drawParams(rng, s.kind, len(ks) > 1)
			params[s] = r
		}
		if rng.IntN(40) == 0 {
			burst = !burst
		}
		now += drawStep(rng, r, burst)
		r.Cost = drawCost(rng, r)
		r.Peek = s.kind != algo.KindThrottle && rng.IntN(10) == 0
		if refunds && rng.IntN(8) == 0 { // REFUND n: what earlier calls spent, given back
			r.Cost, r.Peek, r.Refund = 0, false, drawRefund(rng, r)
		}
		steps[i] = step{key: name, now: now, req: r, args: lab.Command(r, name, rng)}
		holder.do(steps[i])

		raw := make([][]byte, 0, len(steps[i].args)-2)
		for _, a := range steps[i].args[2:] {
			raw = append(raw, fmt.Append(nil, a))
		}
		parsed, err := rlcmd.ParseRequest(r.Kind, raw, 100_000)
		if err != nil || parsed != r {
			t.Fatalf("rlcmd.ParseRequest(%v) = %+v, %v; the step means %+v", steps[i].args, parsed, err, r)
		}
	}
	return steps
}

// drawRefund draws a refund around the limit: a part of it, all of it, more than was
// ever spent, within the bound the grammar takes (COST's; CL.THROTTLE: 1e9).
func drawRefund(rng *rand.Rand, r algo.Request) int64 {
	scale, most := r.Limit, r.Limit*1000
	if r.Kind == algo.KindThrottle {
		scale, most = r.Limit+1, 1_000_000_000
	}
	if rng.IntN(10) == 0 {
		return 1 + rng.Int64N(most)
	}
	return min(most, 1+rng.Int64N(2*scale))
}

// drawCount draws a limit-like count: mostly small, sometimes up to the 1e9 maximum.
func drawCount(rng *rand.Rand) int64 {
	switch n := rng.IntN(100); {
	case n < 50:
		return 1 + rng.Int64N(10)
	case n < 80:
		return 1 + rng.Int64N(100)
	case n < 92:
		return 1 + rng.Int64N(10_000)
	case n < 97:
		return 1 + rng.Int64N(1_000_000_000)
	default:
		return 1_000_000_000
	}
}

// windowsMs are windows around the edges: 1 ms, around a second, up to a year.
var windowsMs = []int64{1, 2, 3, 7, 10, 100, 999, 1000, 1001, 60_000, 3_600_000, 86_400_000, 31_536_000_000}

// drawParams draws a key's parameters for kind. short keeps windows to seconds,
// so that states expire and a shared key can change kind.
func drawParams(rng *rand.Rand, kind algo.Kind, short bool) algo.Request {
	for {
		if r := drawAnyParams(rng, kind, short); r.CheckSchedule() == nil {
			return r
		}
	}
}

// drawAnyParams is drawParams, schedules over the 100 years the grammar refuses included.
func drawAnyParams(rng *rand.Rand, kind algo.Kind, short bool) algo.Request {
	r := algo.Request{Kind: kind, Limit: drawCount(rng)}
	if rng.IntN(3) == 0 {
		r.Limit = 1 + rng.Int64N(5) // reached within a burst
	}
	if kind == algo.KindThrottle {
		r.Limit-- // max_burst, from 0
		r.Rate = drawCount(rng)
		r.Cell = true
		periods := []int64{1, 2, 60, 3600, 86_400, 31_536_000}
		period := 1 + rng.Int64N(100)
		switch {
		case short:
			period = 1 + rng.Int64N(5)
		case rng.IntN(2) == 0:
			period = periods[rng.IntN(len(periods))]
		}
		r.Window = period * 1_000_000
		return r
	}
	ms := 1 + rng.Int64N(5000)
	if !short && rng.IntN(2) == 0 {
		ms = windowsMs[rng.IntN(len(windowsMs))]
	}
	r.Window = ms * 1000
	switch {
	case kind == algo.KindLog:
		// The log costs an entry per admitted call: keep it to a few hundred entries.
		r.Limit = 1 + rng.Int64N(200)
	case rng.IntN(5) < 2:
		// the option's default
	case kind == algo.KindToken:
		r.Rate = drawCount(rng)
	case kind == algo.KindGCRA:
		r.Burst = drawCount(rng)
	case kind == algo.KindLeaky:
		r.Queue = drawCount(rng) - 1
	}
	return r
}

// drawCost draws a cost around the limit (or burst): 0, 1, up to it, just above it,
// or anywhere up to the maximum the command accepts, within RL.LEAKY's 100 years.
func drawCost(rng *rand.Rand, r algo.Request) int64 {
	for {
		if r.Cost = drawAnyCost(rng, r); r.CheckSchedule() == nil {
			return r.Cost
		}
	}
}

// drawAnyCost is drawCost, costs that the grammar refuses for RL.LEAKY included.
func drawAnyCost(rng *rand.Rand, r algo.Request) int64 {
	scale, most := r.Limit, r.Limit*1000
	switch {
	case r.Kind == algo.KindThrottle:
		scale, most = r.Limit+1, 1_000_000_000
	case r.Kind == algo.KindGCRA && r.Burst > 0 && rng.IntN(2) == 0:
		scale = r.Burst
	}
	var c int64
	switch n := rng.IntN(100); {
	case n < 8:
		c = 0
	case n < 60:
		c = 1
	case n < 88:
		c = 1 + rng.Int64N(scale)
	case n < 96:
		c = scale + 1 + rng.Int64N(scale)
	default:
		c = 1 + rng.Int64N(most)
	}
	return min(c, most)
}

// drawStep draws a time step (µs) at the scales that matter for r: none, sub-ms,
// around the emission interval W/L, within the window, and past it. In a burst the
// steps stay small, so that limits are reached.
func drawStep(rng *rand.Rand, r algo.Request, burst bool) int64 {
	w := r.Window
	interval := max(1, w/max(1, r.Limit))
	n := rng.IntN(100)
	if burst {
		n = n * 65 / 100 // none, sub-ms or around the interval
	}
	var d int64
	switch {
	case n < 30:
	case n < 45:
		d = 1 + rng.Int64N(1000)
	case n < 65:
		d = rng.Int64N(2*interval + 1)
	case n < 85:
		d = rng.Int64N(w + 1)
	default:
		d = w + rng.Int64N(2*w+1)
	}
	return min(d, maxStep)
}

// side answers the steps S of a differential run, in order, with outcomes O.
type side[S any, O comparable] interface {
	name() string
	run(ctx context.Context, steps []S) ([]O, error)
}

// runStep is what a differential run's failure report reads of a step: its moment,
// its command, and whether an earlier step touched one of its keys.
type runStep[S any] interface {
	at() int64
	command() string
	sharesKey(other S) bool
}

func (st step) at() int64                 { return st.now }
func (st step) command() string           { return fmt.Sprint(st.args) }
func (st step) sharesKey(other step) bool { return st.key == other.key }

// scriptSide is Redis running the reference scripts, the clock injected through now_us.
type scriptSide struct{ client *redis.Client }

func (scriptSide) name() string { return "redis+lua" }

func (s scriptSide) run(ctx context.Context, steps []step) ([]outcome, error) {
	pipe := s.client.Pipeline()
	calls := make([]*redis.Cmd, len(steps))
	exists := make([]*redis.Cmd, len(steps))
	expires := make([]*redis.Cmd, len(steps))
	for i, st := range steps {
		calls[i] = pipe.EvalSha(ctx, lua.For(st.req).SHA1, []string{st.key}, append(lua.Args(st.req), st.now)...)
		exists[i] = pipe.Do(ctx, "EXISTS", st.key)
		// Under now_us a script's key expires at the µs its PEXPIRETIME holds (package lua).
		expires[i] = pipe.Do(ctx, "PEXPIRETIME", st.key)
	}
	pipe.Exec(ctx) // the errors are per command, read below
	outs := make([]outcome, len(steps))
	for i, st := range steps {
		o := &outs[i]
		if err := readReply(calls[i], o); err != nil {
			return nil, err
		}
		n, err := exists[i].Int64()
		if err != nil {
			return nil, err
		}
		at, err := expires[i].Int64()
		if err != nil {
			return nil, err
		}
		o.exists, o.pttl = n == 1, at
		if at > 0 {
			o.pttl = (at - st.now + 999) / 1000
		}
	}
	return outs, nil
}

// readReply puts cmd's reply, or its Redis error, in o; other errors are returned.
func readReply(cmd *redis.Cmd, o *outcome) error {
	r, err := reply5(cmd)
	var rerr redis.Error
	switch {
	case err == nil:
		o.reply = r
	case errors.As(err, &rerr):
		o.err = err.Error()
	default:
		return err
	}
	return nil
}

// serverSide is rlserver, its clock set by DEBUG CLOCK SET before each call.
type serverSide struct{ client *redis.Client }

func (serverSide) name() string { return "rlserver" }

func (s serverSide) run(ctx context.Context, steps []step) ([]outcome, error) {
	pipe := s.client.Pipeline()
	clocks := make([]*redis.Cmd, len(steps))
	calls := make([]*redis.Cmd, len(steps))
	exists := make([]*redis.Cmd, len(steps))
	ttls := make([]*redis.Cmd, len(steps))
	for i, st := range steps {
		clocks[i] = pipe.Do(ctx, "DEBUG", "CLOCK", "SET", st.now)
		calls[i] = pipe.Do(ctx, st.args...)
		exists[i] = pipe.Do(ctx, "EXISTS", st.key)
		ttls[i] = pipe.Do(ctx, "PTTL", st.key)
	}
	pipe.Exec(ctx)
	outs := make([]outcome, len(steps))
	for i := range steps {
		o := &outs[i]
		if err := clocks[i].Err(); err != nil {
			return nil, fmt.Errorf("DEBUG CLOCK SET: %w", err)
		}
		if err := readReply(calls[i], o); err != nil {
			return nil, err
		}
		n, err := exists[i].Int64()
		if err != nil {
			return nil, err
		}
		if o.pttl, err = ttls[i].Int64(); err != nil {
			return nil, err
		}
		o.exists = n == 1
	}
	return outs, nil
}

// algoSide is package algo behind a map that forgets a key once its state is fresh,
// the rule the store applies.
type algoSide struct{ keys map[string]*algoKey }

type algoKey struct {
	kind    algo.Kind
	fixed   algo.FixedState
	slide   algo.SlideState
	log     []algo.LogEntry
	token   algo.TokenState
	tat     int64 // GCRA, LEAKY, THROTTLE, Redis's GCRA
	freshAt int64
}

func (algoSide) name() string { return "algo" }

func (a algoSide) run(_ context.Context, steps []step) ([]outcome, error) {
	outs := make([]outcome, len(steps))
	for i, st := range steps {
		outs[i] = a.do(st)
	}
	return outs, nil
}

func (a algoSide) do(st step) outcome {
	var o outcome
	k := a.keys[st.key]
	if k != nil && k.freshAt <= st.now {
		delete(a.keys, st.key)
		k = nil
	}
	r := st.req
	if k != nil && k.kind != r.Kind {
		o.err = wrongType
	} else {
		next := algoKey{kind: r.Kind}
		if k != nil {
			next = *k
		}
		var d algo.Decision
		switch r.Kind {
		case algo.KindFixed:
			next.fixed, d = algo.Fixed(next.fixed, r, st.now)
		case algo.KindSlide:
			next.slide, d = algo.Slide(next.slide, r, st.now)
		case algo.KindLog:
			next.log, d = algo.Log(next.log, r, st.now)
		case algo.KindToken:
			next.token, d = algo.Token(next.token, r, st.now)
		case algo.KindGCRA, algo.KindThrottle:
			next.tat, d = algo.GCRA(next.tat, r, st.now)
		case algo.KindRedisGCRA:
			var err error
			if next.tat, d, err = algo.RedisGCRA(next.tat, r, st.now); err != nil {
				panic(err) // the steps stay within the script's exact doubles
			}
		case algo.KindLeaky:
			next.tat, d = algo.Leaky(next.tat, r, st.now)
		}
		if d.Write {
			delete(a.keys, st.key)
			if d.FreshAt > st.now {
				next.freshAt = d.FreshAt
				a.keys[st.key] = &next
			}
		}
		o.reply = replyOf(r.Kind, d)
	}
	o.pttl = -2
	if k := a.keys[st.key]; k != nil {
		o.exists, o.pttl = true, (k.freshAt-st.now+999)/1000
	}
	return o
}

// differential replays steps on every side in pipelined batches and requires each
// outcome to equal the first side's. A mismatch reports the seed, the step, every
// side's outcome and the earlier calls on its keys, and ends the run.
func differential[S runStep[S], O comparable](t *testing.T, seed uint64, steps []S, sides ...side[S, O]) {
	t.Helper()
	const batch = 500
	ctx := context.Background()
	ref := make([]O, 0, len(steps))
	for from := 0; from < len(steps); from += batch {
		part := steps[from:min(from+batch, len(steps))]
		outs := make([][]O, len(sides))
		for i, s := range sides {
			var err error
			if outs[i], err = s.run(ctx, part); err != nil {
				t.Fatalf("%s: %v", s.name(), err)
			}
		}
		ref = append(ref, outs[0]...)
		for j := range part {
			same := true
			for i := 1; i < len(sides); i++ {
				same = same && outs[i][j] == outs[0][j]
			}
			if same {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "-compat.seed=%d, step %d: now %d, %s\n", seed, from+j, part[j].at(), part[j].command())
			for i, s := range sides {
				fmt.Fprintf(&b, "  %-10s %v\n", s.name(), outs[i][j])
			}
			b.WriteString("earlier calls on its keys, latest last:\n")
			var earlier []string
			for e := from + j - 1; e >= 0 && len(earlier) < 8; e-- {
				if steps[e].sharesKey(part[j]) {
					earlier = append(earlier, fmt.Sprintf("  step %d: now %d, %s -> %v\n", e, steps[e].at(), steps[e].command(), ref[e]))
				}
			}
			slices.Reverse(earlier)
			b.WriteString(strings.Join(earlier, ""))
			t.Error(b.String())
			return
		}
	}
}

// seed is -compat.seed, or a fresh one, logged so that a failure can be replayed.
func seed(t *testing.T) uint64 {
	s := *compatSeed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -compat.seed=%d)", s, s)
	return s
}

// TestLuaMatchesAlgo replays random calls against the reference scripts on Redis and
// against package algo, on one injected clock: every reply, EXISTS and PTTL agree.
func TestLuaMatchesAlgo(t *testing.T) {
	r := needRedis(t)
	sd := seed(t)
	for _, ks := range differentialCases() {
		name := label(ks)
		t.Run(name, func(t *testing.T) {
			steps := genSteps(t, sd, name, *compatCalls, true, ks...)
			differential[step, outcome](t, sd, steps, scriptSide{r.client}, algoSide{map[string]*algoKey{}})
		})
	}
}

// TestServerMatchesLua replays random calls against the reference scripts on Redis and
// against rlserver, on one injected clock: every reply, EXISTS and PTTL agree. algo's
// outcome is shown beside them when they do not.
func TestServerMatchesLua(t *testing.T) {
	r, s := needRedis(t), needServer(t)
	t.Cleanup(func() { flush(t, r); flush(t, s) })
	sd := seed(t)
	for _, ks := range differentialCases() {
		name := label(ks)
		t.Run(name, func(t *testing.T) {
			steps := genSteps(t, sd, name, *compatCalls, true, ks...)
			differential[step, outcome](t, sd, steps, scriptSide{r.client}, serverSide{s.client}, algoSide{map[string]*algoKey{}})
		})
	}
}

// differentialCases are each algorithm on keys of its own, then all of them over
// shared keys ("mixed": WRONGTYPE, and kinds following each other on a key).
func differentialCases() [][]algo.Kind {
	var cases [][]algo.Kind
	for _, k := range kinds {
		cases = append(cases, []algo.Kind{k})
	}
	return append(cases, kinds)
}

func label(ks []algo.Kind) string {
	if len(ks) == 1 {
		return ks[0].Command()
	}
	return "mixed"
}
