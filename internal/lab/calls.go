package lab

import (
	"context"
	"math/rand/v2"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/lua"
)

// Caller is a go-redis client or pipeline.
type Caller interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// Call makes (or, on a pipeline, queues) one call of r on key, at the server's own
// time: its reference script when script (Redis + Lua), else rlserver's command.
func Call(ctx context.Context, c Caller, script bool, key string, r algo.Request) *redis.Cmd {
	if script {
		return c.EvalSha(ctx, lua.Named(r.Kind.Command()).SHA1, []string{key}, lua.Args(r)...)
	}
	return c.Do(ctx, Command(r, key, nil)...)
}

// Request is a cost-1 call of kind at limit per windowMs (CL.THROTTLE: max_burst
// limit-1 and limit per windowMs/1000 s, the same capacity).
func Request(kind algo.Kind, limit, windowMs int64) algo.Request {
	r := algo.Request{Kind: kind, Limit: limit, Window: windowMs * 1000, Cost: 1}
	if kind == algo.KindThrottle {
		r.Limit, r.Rate = limit-1, limit
	}
	return r
}

// Command is r as rlserver takes it (rlcmd.AppendRequest), a refund as REFUND n.
// With rng, the command name and options come in random letter case, the options in
// random order, COST 1 is sent or left to its default at random, and so is RL.LEAKY's
// QUEUE 0; without, the words are rlcmd's.
func Command(r algo.Request, key string, rng *rand.Rand) []any {
	args := rlcmd.AppendRequest([]any{rlcmd.Name(r.Kind), key}, r)
	if rng == nil {
		return args
	}
	dropCost := r.Refund == 0 && r.Cost == 1 && rng.IntN(2) == 0
	if r.Kind == algo.KindThrottle {
		if dropCost {
			args = args[:len(args)-1] // the quantity, 1 by default
		}
		return args
	}
	const positional = 4 // name, key, limit, window_ms
	var opts [][]any
	for _, o := range options(args[positional:]) {
		if !(dropCost && o[0] == "COST") {
			opts = append(opts, o)
		}
	}
	if r.Kind == algo.KindLeaky && r.Queue == 0 && rng.IntN(2) == 0 {
		opts = append(opts, []any{"QUEUE", int64(0)})
	}
	args[0] = RandomCase(rng, args[0].(string))
	rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args = args[:positional]
	for _, o := range opts {
		o[0] = RandomCase(rng, o[0].(string))
		args = append(args, o...)
	}
	return args
}

// options cuts words into options: a word, and the number that follows it if any.
func options(words []any) [][]any {
	var opts [][]any
	for _, w := range words {
		if _, word := w.(string); word {
			opts = append(opts, []any{w})
		} else {
			opts[len(opts)-1] = append(opts[len(opts)-1], w)
		}
	}
	return opts
}

// RandomCase is s with each letter lower-cased or not at random.
func RandomCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if rng.IntN(2) == 0 {
			b[i] = strings.ToLower(string(c))[0]
		}
	}
	return string(b)
}
