package lab

import (
	"context"
	"math/rand/v2"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
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

// Command is r as rlserver takes it, a refund as REFUND n. With rng, the command name and options come in
// random letter case, the options in random order, and COST 1 is sent or left to its
// default at random; without, the options are upper case in a fixed order.
func Command(r algo.Request, key string, rng *rand.Rand) []any {
	sendCost := r.Refund == 0 && (r.Cost != 1 || rng == nil || rng.IntN(2) == 0)
	args := []any{strings.ToUpper(r.Kind.Command()), key}
	if r.Kind == algo.KindThrottle {
		args = append(args, r.Limit, r.Rate, r.Window/1_000_000)
		if r.Refund > 0 {
			args = append(args, "REFUND", r.Refund)
		} else if sendCost {
			args = append(args, r.Cost)
		}
		return args
	}
	args = append(args, r.Limit, r.Window/1000)
	var opts [][]any
	if sendCost {
		opts = append(opts, []any{"COST", r.Cost})
	}
	if r.Peek {
		opts = append(opts, []any{"PEEK"})
	}
	if r.Refund > 0 {
		opts = append(opts, []any{"REFUND", r.Refund})
	}
	switch {
	case r.Kind == algo.KindToken && r.Rate > 0:
		opts = append(opts, []any{"RATE", r.Rate})
	case r.Kind == algo.KindGCRA && r.Burst > 0:
		opts = append(opts, []any{"BURST", r.Burst})
	case r.Kind == algo.KindLeaky && (r.Queue > 0 || rng != nil && rng.IntN(2) == 0):
		opts = append(opts, []any{"QUEUE", r.Queue})
	}
	if rng != nil {
		args[0] = RandomCase(rng, args[0].(string))
		rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
		for _, o := range opts {
			o[0] = RandomCase(rng, o[0].(string))
		}
	}
	for _, o := range opts {
		args = append(args, o...)
	}
	return args
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
