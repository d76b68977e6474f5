package rlserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// The differential run of Redis 8.8's native GCRA command: random GCRA calls mixed
// with RL.GCRA calls (each its own state: a key of one is WRONGTYPE to the other),
// sent to rlserver and to Redis running the reference scripts, at one injected clock
// in µs (GCRA floors it to the ms, RL.GCRA does not), with package algo beside them.
// Every reply, EXISTS and PTTL must match. A real Redis 8.8 is not at hand (Debian's
// redis-server is 7.x): the gcra script stands in for it, and algo's RedisGCRA is
// checked against gcra.tcl's numbers and Redis's source in package algo.

// periods are spellings of GCRA's float period: fractions of a second and of a µs,
// whole minutes and hours, and the forms fast_float reads (exponent, a sign).
var periods = []string{"0.5", "1", "1.5", "60", "3600.25", "0.25", "0.001", "1e-7", "0.0000015",
	"2.09583", "7.77", "1e3", "+16", "86400", "31536000"}

// genGCRASteps draws n calls over 4 keys: about 7 in 10 native GCRA calls (random
// max_burst, tokens_per_period, period and TOKENS, the command and TOKENS in random
// letter case), the rest RL.GCRA calls as the main suite draws them (PEEK and COST
// included). Each key has parameters per command, redrawn now and then. Time steps
// follow the call's own emission interval and tolerance. It fails t if rlserver's
// parser reads a command otherwise than the step means it.
func genGCRASteps(t *testing.T, seed uint64, n int) []step {
	rng := rand.New(rand.NewPCG(seed, 0x6c7261))
	type slot struct {
		key    int
		native bool
	}
	params := map[slot]algo.Request{}
	spelled := map[slot]string{} // each native slot's period as sent
	burst := false
	now := 1_750_000_000_000_000 + rng.Int64N(1_000_000_000_000)
	steps := make([]step, n)
	natives := 0
	for i := range steps {
		s := slot{rng.IntN(4), rng.IntN(10) < 7}
		// Key 0 takes both commands (WRONGTYPE, until its state is fresh); the others
		// are one command's.
		name := fmt.Sprintf("diff:gcra:%d", s.key)
		if s.key > 0 && s.native {
			name = fmt.Sprintf("diff:native:%d", s.key)
		}
		r, ok := params[s]
		for !ok || rng.IntN(30) == 0 {
			if s.native {
				r, spelled[s] = drawNative(t, rng)
			} else {
				r = drawParams(rng, algo.KindGCRA, true)
			}
			// Keys 0-2 keep their states within 10 s, so that they come back within
			// reach of every call's parameters; key 3 takes schedules up to 100 years.
			ok = s.key == 3 || tolerance(r) <= 10_000_000
			params[s] = r
		}
		if rng.IntN(40) == 0 {
			burst = !burst
		}
		var args []any
		if s.native {
			natives++
			r.Cost = drawTokens(rng, r)
			now += drawNativeStep(rng, r, burst)
			args = nativeCommand(rng, r, spelled[s], name)
			parsed, err := rlcmd.ParseGCRA(rawArgs(args[2:]))
			if err != nil || parsed != r {
				t.Fatalf("rlcmd.ParseGCRA(%v) = %+v, %v; the step means %+v", args, parsed, err, r)
			}
		} else {
			now += drawStep(rng, r, burst)
			r.Cost = drawCost(rng, r)
			r.Peek = rng.IntN(10) == 0
			args = lab.Command(r, name, rng)
			parsed, err := rlcmd.ParseRequest(r.Kind, rawArgs(args[2:]), 100_000)
			if err != nil || parsed != r {
				t.Fatalf("rlcmd.ParseRequest(%v) = %+v, %v; the step means %+v", args, parsed, err, r)
			}
		}
		steps[i] = step{key: name, now: now, req: r, args: args}
	}
	t.Logf("%d calls: %d GCRA, %d RL.GCRA", n, natives, n-natives)
	return steps
}

// drawNative draws a native GCRA call's parameters that rlserver accepts (TOKENS
// aside, drawn per call), and the spelling of its period.
func drawNative(t *testing.T, rng *rand.Rand) (algo.Request, string) {
	for {
		mb := drawCount(rng) - 1
		if rng.IntN(3) == 0 {
			mb = rng.Int64N(6) // reached within a burst
		}
		tpp := drawCount(rng)
		if rng.IntN(10) == 0 {
			tpp = 1 + rng.Int64N(1_000_000_000_000) // T of 1 µs, and below
		}
		p := periods[rng.IntN(len(periods))]
		switch rng.IntN(4) {
		case 0:
			p = strconv.FormatFloat(float64(1+rng.IntN(100_000))/1000, 'f', -1, 64)
		case 1:
			p = strconv.Itoa(1 + rng.IntN(3600))
		}
		r, err := rlcmd.ParseGCRA(rawArgs([]any{mb, tpp, p}))
		switch {
		case err == nil && r.Burst <= maxScriptSpan/r.Interval:
			return r, p
		case err != nil && !strings.Contains(err.Error(), "overflow"):
			t.Fatalf("drawNative: GCRA k %d %d %s: %v", mb, tpp, p, err)
		}
		// A tolerance past int64 µs (Redis's error), or past the script's exact doubles:
		// draw again.
	}
}

// maxScriptSpan is the longest tolerance drawn for GCRA, 100 years in µs: the gcra
// script's doubles are exact below 2^53, which now plus it stays under. rlserver takes
// any tolerance within int64 µs, as Redis does (package algo tests those).
const maxScriptSpan = 100 * 365 * 86_400 * 1_000_000

// tolerance is how far ahead of now a call of r may leave its key's state: T·b µs.
func tolerance(r algo.Request) int64 {
	if r.Cell {
		return r.Interval * r.Burst
	}
	b := r.Burst
	if b == 0 {
		b = r.Limit
	}
	return max(1, (2*r.Window+r.Limit)/(2*r.Limit)) * b // T rounded half up, as algo does
}

// drawTokens draws a call's TOKENS around the burst: mostly 1, up to it, just above
// it (never fits), or anywhere up to 1e12, within Redis's overflow check.
func drawTokens(rng *rand.Rand, r algo.Request) int64 {
	for {
		var c int64
		switch n := rng.IntN(100); {
		case n < 55:
			c = 1
		case n < 85:
			c = 1 + rng.Int64N(r.Burst)
		case n < 95:
			c = r.Burst + 1 + rng.Int64N(r.Burst)
		default:
			c = 1 + rng.Int64N(1_000_000_000_000)
		}
		if r.Interval <= maxScriptSpan/c { // T·c exact in the script's doubles
			return c
		}
	}
}

// drawNativeStep draws a time step (µs) at the scales of a native call: none, sub-ms,
// around its emission interval T, within its tolerance T·(max_burst+1), and past it.
// In a burst the steps stay small, so that the burst runs out.
func drawNativeStep(rng *rand.Rand, r algo.Request, burst bool) int64 {
	tol := r.Interval * r.Burst
	n := rng.IntN(100)
	if burst {
		n = n * 65 / 100
	}
	var d int64
	switch {
	case n < 30:
	case n < 45:
		d = 1 + rng.Int64N(1000)
	case n < 65:
		d = rng.Int64N(2*r.Interval + 1)
	case n < 85:
		d = rng.Int64N(tol + 1)
	default:
		d = tol + rng.Int64N(2*tol+1)
	}
	return min(d, maxStep)
}

// nativeCommand is the GCRA call r on key, its period spelled p: the command word and
// TOKENS in random case, TOKENS 1 sent or left to its default at random.
func nativeCommand(rng *rand.Rand, r algo.Request, p, key string) []any {
	args := []any{lab.RandomCase(rng, "GCRA"), key, r.Limit, r.Rate, p}
	if r.Cost != 1 || rng.IntN(2) == 0 {
		args = append(args, lab.RandomCase(rng, "TOKENS"), r.Cost)
	}
	return args
}

// rawArgs is args as the server reads them.
func rawArgs(args []any) [][]byte {
	raw := make([][]byte, len(args))
	for i, a := range args {
		raw[i] = fmt.Append(nil, a)
	}
	return raw
}

// gcraAlgoSide is algoSide with the wire's first field of a native GCRA step, which
// answers "limited" where algoSide's replyOf writes RL.GCRA's "allowed".
type gcraAlgoSide struct{ algoSide }

func (a gcraAlgoSide) run(_ context.Context, steps []step) ([]outcome, error) {
	outs := make([]outcome, len(steps))
	for i, st := range steps {
		outs[i] = a.do(st)
		if st.req.Cell && outs[i].err == "" {
			outs[i].reply[0] = 1 - outs[i].reply[0]
		}
	}
	return outs, nil
}

// TestGCRALuaMatchesAlgo: the gcra and rl.gcra scripts on Redis against package algo,
// GCRA and RL.GCRA calls mixed on shared keys, on one injected clock.
func TestGCRALuaMatchesAlgo(t *testing.T) {
	r := needRedis(t)
	sd := seed(t)
	steps := genGCRASteps(t, sd, *compatCalls)
	differential[step, outcome](t, sd, steps, scriptSide{r.client}, gcraAlgoSide{algoSide{map[string]*algoKey{}}})
}

// TestGCRAServerMatchesLua: rlserver against the scripts on Redis (algo beside them),
// GCRA and RL.GCRA calls mixed on shared keys: every reply, EXISTS and PTTL agree.
func TestGCRAServerMatchesLua(t *testing.T) {
	r, s := needRedis(t), needServer(t)
	t.Cleanup(func() { flush(t, r); flush(t, s) })
	sd := seed(t)
	steps := genGCRASteps(t, sd, *compatCalls)
	differential[step, outcome](t, sd, steps, scriptSide{r.client}, serverSide{s.client}, gcraAlgoSide{algoSide{map[string]*algoKey{}}})
}
