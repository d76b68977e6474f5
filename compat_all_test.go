// The compatibility suite's part for RL.ALL and the leases: random calls replayed on
// rlserver, on Redis running the rl.all and lease scripts, and on package store
// directly, on one injected clock, with every reply, EXISTS and PTTL compared; then,
// on both servers at their own clocks, the two stories: no counter pollution
// under 50 concurrent clients, and a lease holder that crashes.
package rlserver_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/lua"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/store"
)

// op is what a multiStep does.
type op int

const (
	opAll     op = iota // RL.ALL
	opAcquire           // RL.ACQUIRE
	opRelease           // RL.RELEASE
	opRenew             // RL.RENEW
	opSingle            // one RL.<ALGO> call on a lease key's pool: WRONGTYPE both ways
)

// multiStep is one call of the RL.ALL and lease differential runs: what it means,
// parsed, and the command rlserver gets. keys are the keys whose EXISTS and PTTL are
// compared after the call.
type multiStep struct {
	now   int64
	op    op
	keys  []string
	args  []any             // the command rlserver gets
	rules []algo.Rule       // opAll; opSingle: its one request
	lease algo.LeaseRequest // opAcquire; ID nil: generated
	id    []byte            // opRelease, opRenew
	dur   int64             // opRenew: µs
}

// multiOutcome is what one side answers to a multiStep: the reply as text (a
// generated lease id replaced by "<generated>"), or the error, then each key's
// existence and PTTL.
type multiOutcome struct {
	reply, err string
	keys       string
}

func (o multiOutcome) String() string {
	if o.err != "" {
		return fmt.Sprintf("error %q, keys %s", o.err, o.keys)
	}
	return fmt.Sprintf("%s, keys %s", o.reply, o.keys)
}

// generatedID is the shape of a generated lease id, the only thing compared of it:
// each side draws its own.
var generatedID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// epoch is how many calls of a run share a key pool; then the next pool takes over.
// States of long windows and leases of long terms would otherwise pile up over a long
// run (-compat.calls=1000000): exhausted for a year, they refuse, or answer WRONGTYPE,
// to every call, and the run would compare little else.
const epoch = 20_000

func (st multiStep) at() int64       { return st.now }
func (st multiStep) command() string { return quoted(st.args) }
func (st multiStep) sharesKey(other multiStep) bool {
	return slices.ContainsFunc(st.keys, func(k string) bool { return slices.Contains(other.keys, k) })
}

// ---- The steps ----

// allWord is RL.ALL's ALGO word for kind.
func allWord(kind algo.Kind) string {
	return strings.TrimPrefix(strings.ToUpper(kind.Command()), "RL.")
}

// genAllSteps draws n RL.ALL calls of 1 to 4 rules over a pool of 6 keys (a new pool
// every epoch calls): each key has
// a usual kind that changes now and then, and parameters per key and kind (redrawn now
// and then), so rules overlap from call to call, small limits make one dimension refuse
// while others would admit, and a key still holding another kind's state gives
// WRONGTYPE. PEEK comes in a tenth of the calls, in one rule's options; one call in 40
// names a key twice. It fails t if rlcmd.ParseRLAll reads a command otherwise than the
// step means it.
func genAllSteps(t *testing.T, seed uint64, n int) []multiStep {
	rng := rand.New(rand.NewPCG(seed, 0xa11))
	kinds := []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken, algo.KindGCRA, algo.KindLeaky}
	const pool = 6
	type slot struct {
		key  int
		kind algo.Kind
	}
	params := map[slot]algo.Request{}
	kindOf := make([]algo.Kind, pool)
	holder := newStoreSide(t) // which kind each key holds, to keep WRONGTYPE occasional
	burst := false
	now := 1_750_000_000_000_000 + rng.Int64N(1_000_000_000_000)
	steps := make([]multiStep, n)
	for i := range steps {
		picked := rng.Perm(pool)[:1+rng.IntN(4)]
		if len(picked) > 1 && rng.IntN(40) == 0 {
			picked[len(picked)-1] = picked[0]
		}
		peekAt := -1
		if rng.IntN(10) == 0 {
			peekAt = rng.IntN(len(picked))
		}
		args := []any{lab.RandomCase(rng, "RL.ALL")}
		st := multiStep{op: opAll}
		for j, k := range picked {
			name := fmt.Sprintf("all:%d:%d", i/epoch, k)
			if kindOf[k] == 0 || rng.IntN(100) == 0 {
				kindOf[k] = kinds[rng.IntN(len(kinds))]
			}
			s := slot{k, kindOf[k]}
			if held, ok := holder.st.Type([]byte(name), now); ok && held != s.kind && rng.IntN(8) != 0 {
				s.kind = held
			}
			r, ok := params[s]
			if !ok || rng.IntN(30) == 0 {
				// Mostly windows of seconds: a long window's exhausted state would
				// refuse, or answer WRONGTYPE, for the rest of a long run.
				r = drawParams(rng, s.kind, rng.IntN(20) != 0)
				params[s] = r
			}
			// Mostly cost 1: with a few rules, any cost above a limit refuses the call.
			r.Cost = 1
			if rng.IntN(3) == 0 {
				r.Cost = drawCost(rng, r)
			}
			r.Peek = j == peekAt
			if !r.Peek && rng.IntN(12) == 0 { // a rule that gives back: it always admits
				r.Cost, r.Refund = 0, drawRefund(rng, r)
			}
			cmd := lab.Command(r, name, rng)
			cmd[0] = lab.RandomCase(rng, allWord(r.Kind))
			args = append(args, cmd...)
			r.Peek = peekAt >= 0
			st.rules = append(st.rules, algo.Rule{Key: []byte(name), Req: r})
			if !slices.Contains(st.keys, name) {
				st.keys = append(st.keys, name)
			}
		}
		if rng.IntN(40) == 0 {
			burst = !burst
		}
		now += drawStep(rng, st.rules[rng.IntN(len(st.rules))].Req, burst)
		st.now, st.args = now, args
		steps[i] = st
		holder.do(st)

		raw := make([][]byte, 0, len(args)-1)
		for _, a := range args[1:] {
			raw = append(raw, fmt.Append(nil, a))
		}
		parsed, err := rlcmd.ParseRLAll(raw, 100_000)
		if err != nil || fmt.Sprint(parsed) != fmt.Sprint(st.rules) {
			t.Fatalf("rlcmd.ParseRLAll(%v) = %+v, %v; the step means %+v", args, parsed, err, st.rules)
		}
	}
	return steps
}

// leaseIDs are the ids the lease runs give with ID: short, and one binary. A
// generated id is never given back (each side draws its own), so its lease ends only
// at its deadline: the crash case.
var leaseIDs = []string{"a", "b", "c", "d", "e", "\x00 l:\r\n"}

// genLeaseSteps draws n lease calls over 3 keys (a new pool every epoch calls), one
// of them hot (it fills up):
// RL.ACQUIRE with and without ID (limits 1 to 3 per key, redrawn now and then),
// RL.RENEW and RL.RELEASE of given ids, live or not, and now and then an RL.LOG or
// RL.FIXED call on the same keys
// (WRONGTYPE both ways, and kinds following each other on a key). Time steps land on
// the scales of the leases: none, sub-ms, within a lease, past it, and on a live
// lease's deadline, a µs before or after it.
func genLeaseSteps(t *testing.T, seed uint64, n int) []multiStep {
	rng := rand.New(rand.NewPCG(seed, 0x1ea5e))
	const pool = 3
	limits := make([]int64, pool)
	model := map[string][]algo.Lease{} // the live leases of each key, to aim at deadlines
	var generated uint64
	now := 1_750_000_000_000_000 + rng.Int64N(1_000_000_000_000)
	drawMs := func() int64 {
		switch n := rng.IntN(100); {
		case n < 30:
			return 1 + rng.Int64N(10)
		case n < 95:
			return 1 + rng.Int64N(2000)
		case n < 98:
			return 60_000
		case n < 99:
			return 3_600_000
		}
		return 31_536_000_000
	}
	steps := make([]multiStep, n)
	for i := range steps {
		k := max(0, rng.IntN(pool+1)-1) // key 0 hot: it fills up
		key := fmt.Sprintf("lease:%d:%d", i/epoch, k)
		if limits[k] == 0 || rng.IntN(30) == 0 {
			limits[k] = 1 + rng.Int64N(3)
		}
		switch d := rng.IntN(100); {
		case d < 45:
		case d < 65:
			now += 1 + rng.Int64N(1000)
		case d < 89:
			now += rng.Int64N(2_000_000)
		case d < 90:
			now += rng.Int64N(10_000_000_000)
		default:
			var live []int64
			for _, ls := range model {
				for _, l := range ls {
					if l.Deadline > now+1 && l.Deadline-now < 100_000_000_000 {
						live = append(live, l.Deadline)
					}
				}
			}
			if len(live) > 0 {
				now = live[rng.IntN(len(live))] + rng.Int64N(3) - 1
			}
		}
		// An id given: any, or one live in the key (in the model), which RL.RENEW and
		// RL.RELEASE mostly name, and RL.ACQUIRE now and then (an idempotent retry).
		id := leaseIDs[rng.IntN(len(leaseIDs))]
		var live []string
		for _, l := range model[key] {
			if l.Deadline > now && slices.Contains(leaseIDs, string(l.ID)) {
				live = append(live, string(l.ID))
			}
		}
		n := rng.IntN(100) // the op: < 50 acquire, < 70 renew, < 95 release
		if len(live) > 0 && (n < 50) == (rng.IntN(4) == 0) {
			id = live[rng.IntN(len(live))]
		}
		st := multiStep{now: now, keys: []string{key}}
		switch {
		case n < 50:
			st.op = opAcquire
			st.lease = algo.LeaseRequest{Limit: limits[k], Duration: drawMs() * 1000}
			// A generated id is never given back: its lease is at most a minute, or
			// leases for hours would fill a key for the rest of a long run.
			if rng.IntN(3) != 0 || st.lease.Duration > 60_000_000 {
				st.lease.ID = []byte(id)
			}
			st.args = []any{lab.RandomCase(rng, "RL.ACQUIRE"), key, st.lease.Limit, st.lease.Duration / 1000}
			if st.lease.ID != nil {
				st.args = append(st.args, lab.RandomCase(rng, "ID"), id)
			}
		case n < 70:
			st.op, st.id, st.dur = opRenew, []byte(id), drawMs()*1000
			st.args = []any{lab.RandomCase(rng, "RL.RENEW"), key, id, st.dur / 1000}
		case n < 95:
			st.op, st.id = opRelease, []byte(id)
			st.args = []any{lab.RandomCase(rng, "RL.RELEASE"), key, id}
		default:
			kind := []algo.Kind{algo.KindLog, algo.KindFixed}[rng.IntN(2)]
			r := algo.Request{Kind: kind, Limit: 1 + rng.Int64N(5), Window: (1 + rng.Int64N(1000)) * 1000, Cost: 1}
			st.op, st.rules = opSingle, []algo.Rule{{Key: []byte(key), Req: r}}
			st.args = lab.Command(r, key, rng)
		}
		steps[i] = st

		// The model: algo's own functions on the live leases; a key of another kind
		// is left to the sides.
		leases := model[key]
		switch st.op {
		case opAcquire:
			generated++
			leases, _ = algo.Acquire(slices.Clone(leases), st.lease, fmt.Appendf(nil, "%016x", generated), now)
		case opRenew:
			leases, _ = algo.Renew(slices.Clone(leases), st.id, st.dur, now)
		case opRelease:
			leases, _ = algo.Release(slices.Clone(leases), st.id, now)
		}
		model[key] = leases

		if st.op == opAcquire {
			raw := make([][]byte, 0, len(st.args)-2)
			for _, a := range st.args[2:] {
				raw = append(raw, fmt.Append(nil, a))
			}
			parsed, err := rlcmd.ParseAcquire(raw, 100_000)
			if err != nil || fmt.Sprint(parsed) != fmt.Sprint(st.lease) {
				t.Fatalf("rlcmd.ParseAcquire(%q) = %+v, %v; the step means %+v", raw, parsed, err, st.lease)
			}
		}
	}
	return steps
}

// ---- The sides ----

// multiScriptSide is Redis running the scripts, the clock injected through now_us.
type multiScriptSide struct{ client *redis.Client }

func (multiScriptSide) name() string { return "redis+lua" }

// script is the script call of st: script name, KEYS, ARGV with now_us last.
func (st multiStep) script() (string, []string, []any) {
	switch st.op {
	case opAll:
		keys, args := lua.ArgsAll(st.rules)
		return "rl.all", keys, append(args, st.now)
	case opAcquire:
		return "rl.acquire", st.keys, []any{st.lease.Limit, st.lease.Duration / 1000, string(st.lease.ID), st.now}
	case opRelease:
		return "rl.release", st.keys, []any{string(st.id), st.now}
	case opRenew:
		return "rl.renew", st.keys, []any{string(st.id), st.dur / 1000, st.now}
	}
	r := st.rules[0].Req
	return r.Kind.Command(), st.keys, append(lua.Args(r), st.now)
}

func (s multiScriptSide) run(ctx context.Context, steps []multiStep) ([]multiOutcome, error) {
	pipe := s.client.Pipeline()
	calls := make([]*redis.Cmd, len(steps))
	expires := make([][]*redis.Cmd, len(steps))
	for i, st := range steps {
		name, keys, args := st.script()
		calls[i] = pipe.EvalSha(ctx, lua.Named(name).SHA1, keys, args...)
		for _, k := range st.keys {
			// Under now_us a script's key expires at the µs its PEXPIRETIME holds: -2
			// absent, -1 none (never the case for a script's key).
			expires[i] = append(expires[i], pipe.Do(ctx, "PEXPIRETIME", k))
		}
	}
	pipe.Exec(ctx) // the errors are per command, read below
	outs := make([]multiOutcome, len(steps))
	for i, st := range steps {
		if err := readMulti(calls[i], st, &outs[i]); err != nil {
			return nil, err
		}
		var keys []string
		for _, e := range expires[i] {
			at, err := e.Int64()
			if err != nil {
				return nil, err
			}
			// A key whose moment has come is gone, though no script touched it to drop
			// it (an error before its rule ran).
			if at > 0 && at <= st.now {
				at = -2
			}
			keys = append(keys, keyState(at > 0 || at == -1, (at-st.now+999)/1000))
		}
		outs[i].keys = strings.Join(keys, " ")
	}
	return outs, nil
}

// keyState is one key's part of an outcome.
func keyState(exists bool, pttl int64) string {
	if !exists {
		return "absent"
	}
	return fmt.Sprintf("pttl %d", pttl)
}

// readMulti puts cmd's reply, as text, or its Redis error, in o; other errors are
// returned.
func readMulti(cmd *redis.Cmd, st multiStep, o *multiOutcome) error {
	v, err := cmd.Result()
	var rerr redis.Error
	switch {
	case err == nil:
		if a, ok := v.([]any); ok && st.op == opAcquire && st.lease.ID == nil && len(a) == 5 {
			if id, ok := a[4].(string); ok && generatedID.MatchString(id) {
				v = append(slices.Clone(a[:4]), "<generated>")
			}
		}
		o.reply = fmt.Sprint(v)
	case errors.As(err, &rerr):
		o.err = err.Error()
	default:
		return err
	}
	return nil
}

// multiServerSide is rlserver, its clock set by DEBUG CLOCK SET before each call.
type multiServerSide struct{ client *redis.Client }

func (multiServerSide) name() string { return "rlserver" }

func (s multiServerSide) run(ctx context.Context, steps []multiStep) ([]multiOutcome, error) {
	pipe := s.client.Pipeline()
	clocks := make([]*redis.Cmd, len(steps))
	calls := make([]*redis.Cmd, len(steps))
	ttls := make([][]*redis.Cmd, len(steps))
	for i, st := range steps {
		clocks[i] = pipe.Do(ctx, "DEBUG", "CLOCK", "SET", st.now)
		calls[i] = pipe.Do(ctx, st.args...)
		for _, k := range st.keys {
			ttls[i] = append(ttls[i], pipe.Do(ctx, "PTTL", k))
		}
	}
	pipe.Exec(ctx)
	outs := make([]multiOutcome, len(steps))
	for i, st := range steps {
		if err := clocks[i].Err(); err != nil {
			return nil, fmt.Errorf("DEBUG CLOCK SET: %w", err)
		}
		if err := readMulti(calls[i], st, &outs[i]); err != nil {
			return nil, err
		}
		var keys []string
		for _, c := range ttls[i] {
			pttl, err := c.Int64()
			if err != nil {
				return nil, err
			}
			keys = append(keys, keyState(pttl != -2, pttl))
		}
		outs[i].keys = strings.Join(keys, " ")
	}
	return outs, nil
}

// storeSide is package store, called directly at each step's now.
type storeSide struct{ st *store.Store }

func newStoreSide(t *testing.T) storeSide {
	t.Helper()
	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return storeSide{st}
}

func (storeSide) name() string { return "store" }

func (s storeSide) run(_ context.Context, steps []multiStep) ([]multiOutcome, error) {
	outs := make([]multiOutcome, len(steps))
	for i, st := range steps {
		outs[i] = s.do(st)
	}
	return outs, nil
}

func (s storeSide) do(st multiStep) multiOutcome {
	var o multiOutcome
	var err error
	switch st.op {
	case opAll:
		ds := make([]algo.Decision, len(st.rules))
		var ok bool
		if ok, err = s.st.DoAll(st.rules, ds, st.now); err == nil {
			reply := []any{boolInt(ok)}
			for i, d := range ds {
				reply = append(reply, replyOf(st.rules[i].Req.Kind, d))
			}
			o.reply = fmt.Sprint(reply)
		}
	case opAcquire:
		var d algo.LeaseDecision
		if d, err = s.st.Acquire([]byte(st.keys[0]), st.lease, st.now); err == nil {
			var id any // nil: a null
			switch {
			case d.Acquired && st.lease.ID == nil && generatedID.Match(d.ID):
				id = "<generated>"
			case d.Acquired:
				id = string(d.ID)
			}
			o.reply = fmt.Sprint([]any{boolInt(d.Acquired), d.Limit, d.Remaining, algo.Millis(d.RetryAfter), id})
		}
	case opRelease, opRenew:
		var ok bool
		if st.op == opRelease {
			ok, err = s.st.Release([]byte(st.keys[0]), st.id, st.now)
		} else {
			ok, err = s.st.Renew([]byte(st.keys[0]), st.id, st.dur, st.now)
		}
		o.reply = fmt.Sprint(boolInt(ok))
	case opSingle:
		var d algo.Decision
		rule := st.rules[0]
		if d, err = s.st.Do(rule.Key, rule.Req, st.now); err == nil {
			o.reply = fmt.Sprint(replyOf(rule.Req.Kind, d))
		}
	}
	if err != nil {
		o.reply, o.err = "", resp.ErrorReply(err)
	}
	var keys []string
	for _, k := range st.keys {
		left, ok := s.st.TTL([]byte(k), st.now)
		keys = append(keys, keyState(ok, (left+999)/1000))
	}
	o.keys = strings.Join(keys, " ")
	return o
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// quoted is a command's args, each quoted: lease ids may be binary.
func quoted(args []any) string {
	w := make([]string, len(args))
	for i, a := range args {
		w[i] = strconv.Quote(fmt.Sprint(a))
	}
	return strings.Join(w, " ")
}

// TestAllMatches replays random RL.ALL calls on rlserver, on Redis running the rl.all
// script and on store.DoAll, on one injected clock: every reply, and every rule key's
// EXISTS and PTTL, agree.
func TestAllMatches(t *testing.T) {
	r, s := needRedis(t), needServer(t)
	t.Cleanup(func() { flush(t, r); flush(t, s) })
	sd := seed(t)
	steps := genAllSteps(t, sd, *compatCalls)
	differential[multiStep, multiOutcome](t, sd, steps, multiScriptSide{r.client}, multiServerSide{s.client}, newStoreSide(t))
	checkMix(t, steps, "allowed", "refused", "WRONGTYPE", "ERR")
}

// TestLeasesMatch replays random lease calls (and some RL.LOG and RL.FIXED calls on
// the same keys) on rlserver, on Redis running the lease scripts and on package store,
// on one injected clock: every reply (a generated id by its shape), EXISTS and PTTL
// agree, leases never released included.
func TestLeasesMatch(t *testing.T) {
	r, s := needRedis(t), needServer(t)
	t.Cleanup(func() { flush(t, r); flush(t, s) })
	sd := seed(t)
	steps := genLeaseSteps(t, sd, *compatCalls)
	differential[multiStep, multiOutcome](t, sd, steps, multiScriptSide{r.client}, multiServerSide{s.client}, newStoreSide(t))
	checkMix(t, steps, "allowed", "refused", "reply 1", "reply 0", "WRONGTYPE")
}

// checkMix logs what the steps' replies were, as the store gives them, and fails t
// if one of the kinds of reply the run is drawn to compare (allowed, refused,
// WRONGTYPE, ...) came in fewer than 1 in 200 calls: a run that compares only
// refusals, say, would prove little.
func checkMix(t *testing.T, steps []multiStep, kinds ...string) {
	outs, _ := newStoreSide(t).run(context.Background(), steps)
	counts := map[string]int{}
	for _, o := range outs {
		switch {
		case o.err != "":
			counts[strings.Fields(o.err)[0]]++
		case strings.HasPrefix(o.reply, "[1"):
			counts["allowed"]++
		case strings.HasPrefix(o.reply, "[0"):
			counts["refused"]++
		default:
			counts["reply "+o.reply]++
		}
	}
	t.Logf("%d calls: %v", len(steps), counts)
	for _, k := range kinds {
		if len(steps) >= 1000 && counts[k] < len(steps)/200 {
			t.Errorf("%d calls gave %q %d times: too few to compare", len(steps), k, counts[k])
		}
	}
}

// allCall makes one RL.ALL call of rules on tg at its own time and returns the reply.
func (tg target) allCall(ctx context.Context, rules []algo.Rule) ([]any, error) {
	if tg.script {
		keys, args := lua.ArgsAll(rules)
		return tg.client.EvalSha(ctx, lua.Named("rl.all").SHA1, keys, args...).Slice()
	}
	args := []any{"RL.ALL"}
	for _, r := range rules {
		cmd := lab.Command(r.Req, string(r.Key), nil)
		cmd[0] = allWord(r.Req.Kind)
		args = append(args, cmd...)
	}
	return tg.client.Do(ctx, args...).Slice()
}

// TestAllNoPollution is the counter pollution, on both sides at their own
// clocks: 50 clients send 10 calls each, every call limited per user (100) and per IP
// (60) in one RL.ALL. Exactly 60 pass, and the user's counter holds 60, not the 500
// that checking the limits one by one would have consumed from it.
func TestAllNoPollution(t *testing.T) {
	const clients, calls = 50, 10
	ctx := context.Background()
	windowMs := int64(31_536_000_000) // no window boundary near: see TestAtomicity
	if w := windowMs * 1000; w-time.Now().UnixMicro()%w < 600_000_000 {
		windowMs -= 86_400_000
	}
	user := algo.Rule{Key: []byte("{p}user"), Req: lab.Request(algo.KindFixed, 100, windowMs)}
	ip := algo.Rule{Key: []byte("{p}ip"), Req: lab.Request(algo.KindLog, 60, windowMs)}
	for _, tg := range targets(t) {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := range clients {
			wg.Go(func() {
				rules := []algo.Rule{user, ip}
				if c%2 == 1 {
					rules = []algo.Rule{ip, user} // both key orders
				}
				for range calls {
					reply, err := tg.allCall(ctx, rules)
					if err != nil {
						errs <- err
						return
					}
					if reply[0] == int64(1) {
						admitted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		peek := user
		peek.Req.Peek = true
		reply, err := tg.allCall(ctx, []algo.Rule{peek})
		if err != nil {
			t.Fatal(err)
		}
		var fields any
		if len(reply) == 2 {
			if f, ok := reply[1].([]any); ok && len(f) == 5 {
				fields = f[:4] // reset_after depends on the moment
			}
		}
		if admitted.Load() != 60 || reply[0] != int64(1) || fmt.Sprint(fields) != "[1 100 39 0]" {
			t.Errorf("%s: %d of %d calls admitted, want 60; a PEEK of the user's limit then answers %v, want 39 remaining (40 less its own)",
				tg.name, admitted.Load(), clients*calls, reply)
		}
	}
}

// TestLeaseCrash is the crash case, on both sides at their own clocks: a
// worker takes 3 leases of a second and dies without releasing them. Until their
// deadline nobody else gets one; after it, with no call on the key in between, the
// key is gone and the next worker gets a lease.
func TestLeaseCrash(t *testing.T) {
	// A second: long enough that no loaded machine lets a lease end between the calls
	// that expect it live.
	const leaseMs = 1000
	ctx := context.Background()
	tgs := targets(t)
	acquire := func(tg target, id string) (string, []any) {
		var reply []any
		var err error
		if tg.script {
			reply, err = tg.client.EvalSha(ctx, lua.Named("rl.acquire").SHA1, []string{"crash"}, 3, leaseMs, id).Slice()
		} else {
			args := []any{"RL.ACQUIRE", "crash", 3, leaseMs}
			if id != "" {
				args = append(args, "ID", id)
			}
			reply, err = tg.client.Do(ctx, args...).Slice()
		}
		if err != nil {
			t.Fatalf("%s: RL.ACQUIRE crash 3 %d %q: %v", tg.name, leaseMs, id, err)
		}
		if len(reply) == 5 && generatedID.MatchString(fmt.Sprint(reply[4])) {
			reply[4] = "<generated>"
		}
		return fmt.Sprint(reply), reply
	}
	for _, tg := range tgs {
		for i, want := range []string{"[1 3 2 0 w1]", "[1 3 1 0 w2]", "[1 3 0 0 <generated>]"} {
			if got, _ := acquire(tg, []string{"w1", "w2", ""}[i]); got != want {
				t.Fatalf("%s: acquire %d: %s, want %s", tg.name, i, got, want)
			}
		}
		got, reply := acquire(tg, "w4")
		if len(reply) != 5 || reply[0] != int64(0) || reply[4] != nil {
			t.Fatalf("%s: a fourth acquire: %s, want refused", tg.name, got)
		}
		if retry, _ := reply[3].(int64); retry <= 0 || retry > leaseMs {
			t.Errorf("%s: a fourth acquire: %s: retry_after should be within the lease's %d ms", tg.name, got, leaseMs)
		}
		if pttl, err := tg.client.PTTL(ctx, "crash").Result(); err != nil || pttl <= 0 || pttl > leaseMs*time.Millisecond {
			t.Errorf("%s: PTTL %v, %v; want within the lease", tg.name, pttl, err)
		}
	}
	// The worker is gone: nothing calls the key until its leases have ended. rlserver
	// removes it on its own (within a second: TestExpiry's bound).
	time.Sleep((leaseMs + 50) * time.Millisecond)
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := tgs[1].client.Exists(ctx, "crash").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rlserver: the lease key still exists a second after its leases ended")
		}
	}
	for _, tg := range tgs {
		if n, err := tg.client.Exists(ctx, "crash").Result(); err != nil || n != 0 {
			t.Errorf("%s: EXISTS = %d, %v after the last deadline, want 0", tg.name, n, err)
		}
		if got, _ := acquire(tg, "next"); got != "[1 3 2 0 next]" {
			t.Errorf("%s: the next worker's acquire: %s, want [1 3 2 0 next]", tg.name, got)
		}
	}
}
