package client_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
)

var (
	agreeSteps = flag.Int("agree.steps", 3000, "calls in TestBackendsAgree")
	agreeSeed  = flag.Uint64("agree.seed", 0, "seed of TestBackendsAgree; 0 draws one (logged, to replay a failure)")
)

// outcome is what one backend answered to a step: a Result, or the sentinel its error
// wraps.
type outcome struct {
	res client.Result
	err error
}

func (o outcome) String() string {
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	return fmt.Sprintf("%+v", o.res)
}

func outcomeOf(res client.Result, err error) outcome {
	for _, sentinel := range []error{client.ErrBadLimit, client.ErrWrongType, client.ErrUnavailable} {
		if errors.Is(err, sentinel) {
			return outcome{err: sentinel}
		}
	}
	if err != nil {
		return outcome{err: err}
	}
	return outcome{res: res}
}

// agreeSetup starts the three backends and the seeded random source of one agreement
// test (stream tells the tests' sequences apart), and logs and returns the seed, to
// replay a failure.
func agreeSetup(t *testing.T, stream uint64) ([]backend, *rand.Rand, uint64) {
	seed := *agreeSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -agree.seed=%d)", seed, seed)
	return []backend{embedded(t), rlserver(t), redisLua(t)}, rand.New(rand.NewPCG(seed, stream)), seed
}

// TestBackendsAgree replays seeded random calls on the three backends, each on the
// same frozen clock, and requires the same outcome from each, call by call: limits
// and costs around their edges, peeks, resets, keys changing algorithm (WRONGTYPE),
// and time steps from none to well past the window. The compatibility suite proves
// rlserver and the scripts reply alike on the wire; this proves the client reads
// them, and the embedded store, alike.
func TestBackendsAgree(t *testing.T) {
	bs, rng, seed := agreeSetup(t, 5)
	limits := map[string]client.Limit{}
	now := t0
	ctx := context.Background()
	for i := range *agreeSteps {
		key := fmt.Sprintf("agree:%d", rng.IntN(4))
		l, ok := limits[key]
		if !ok || rng.IntN(20) == 0 { // now and then, other parameters or another algorithm
			l = drawLimit(rng)
			limits[key] = l
		}
		now += drawStep(rng, l)
		call, cost := "allow", drawCost(rng, l)
		switch n := rng.IntN(100); {
		case n < 12:
			call, cost = "peek", 1
		case n < 15:
			call, cost = "reset", 0
		}
		outs := make([]outcome, len(bs))
		for j, b := range bs {
			b.setNow(t, now)
			switch call {
			case "allow":
				outs[j] = outcomeOf(b.client.AllowN(ctx, key, l, cost))
			case "peek":
				outs[j] = outcomeOf(b.client.Peek(ctx, key, l))
			default:
				outs[j] = outcomeOf(client.Result{}, b.client.Reset(ctx, key))
			}
		}
		for j := 1; j < len(bs); j++ {
			if outs[j] != outs[0] {
				t.Fatalf("-agree.seed=%d, step %d: %s %s %+v cost %d at %d µs:\n  %-9s %v\n  %-9s %v\n  %-9s %v",
					seed, i, call, key, l, cost, now, bs[0].name, outs[0], bs[1].name, outs[1], bs[2].name, outs[2])
			}
		}
	}
}

// drawLimit draws an algorithm and its parameters: mostly small counts and windows
// from 1 ms to seconds, sometimes the largest the contract accepts.
func drawLimit(rng *rand.Rand) client.Limit {
	count := func() int {
		switch n := rng.IntN(100); {
		case n < 60:
			return 1 + rng.IntN(10)
		case n < 90:
			return 1 + rng.IntN(1000)
		default:
			return 1 + rng.IntN(1_000_000_000)
		}
	}
	per := time.Duration(1+rng.IntN(5000)) * time.Millisecond
	if rng.IntN(10) == 0 {
		per = []time.Duration{time.Millisecond, time.Hour, 365 * 24 * time.Hour}[rng.IntN(3)]
	}
	switch rng.IntN(7) {
	case 0:
		return client.Fixed(count(), per)
	case 1:
		return client.Slide(count(), per)
	case 2:
		return client.Log(1+rng.IntN(200), per) // an entry per admitted call: keep logs short
	case 3:
		return client.Token(count(), per)
	case 4:
		return client.TokenRate(count(), per, count())
	case 5:
		return client.GCRA(count(), per, count())
	}
	return client.Leaky(count(), per, count()-1)
}

// drawCost draws a cost around the limit: 0, 1, up to it, just above, or far above.
func drawCost(rng *rand.Rand, l client.Limit) int {
	n, _ := l.Quota()
	switch k := rng.IntN(100); {
	case k < 8:
		return 0
	case k < 60:
		return 1
	case k < 88:
		return 1 + rng.IntN(n)
	default:
		return n + 1 + rng.IntN(n)
	}
}

// drawStep draws a time step in µs: none, sub-ms, around the time one request takes,
// within the window, or past it.
func drawStep(rng *rand.Rand, l client.Limit) int64 {
	n, per := l.Quota()
	w := per.Microseconds()
	interval := max(1, w/int64(n))
	switch k := rng.IntN(100); {
	case k < 30:
		return 0
	case k < 45:
		return 1 + rng.Int64N(1000)
	case k < 65:
		return rng.Int64N(2*interval + 1)
	case k < 85:
		return rng.Int64N(min(w, 10_000_000_000) + 1)
	}
	return min(w, 10_000_000_000) + rng.Int64N(min(2*w, 10_000_000_000)+1)
}
