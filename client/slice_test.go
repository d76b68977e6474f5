package client_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestMain runs the tests, or this process as a child of TestSliceOracle.
func TestMain(m *testing.M) {
	oracleChild()
	os.Exit(testenv.Main(m))
}

// year is the longest window: a test's key does not see its window turn.
const year = 365 * 24 * hour

// rlserverProcess starts the rlserver binary and returns a go-redis client on it; both
// end with t.
func rlserverProcess(t testing.TB) *redis.Client {
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return newRedis(t, p.Addr)
}

// TestTakeSlice takes slices of a Fixed key on a real rlserver and the embedded
// store: whole, partial, none; gives back part; and a request after it sees what the
// slices left.
func TestTakeSlice(t *testing.T) {
	open := map[string]func(t *testing.T) *client.Client{
		"rlserver": func(t *testing.T) *client.Client {
			c, err := client.New(rlserverProcess(t), client.Options{Timeout: testTimeout})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"embedded": func(t *testing.T) *client.Client { return embedded(t).client },
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			c, ctx := open(t), context.Background()
			l := client.Fixed(10, year)
			s, err := c.TakeSlice(ctx, "api", l, 4)
			if err != nil || s.Granted != 4 || s.Limit != 10 || s.Remaining != 6 || s.RetryAfter != 0 || s.Valid <= 0 {
				t.Fatalf("first slice: %+v, %v", s, err)
			}
			if sent := s.Until.Add(-s.Valid); time.Since(sent).Abs() > time.Minute {
				t.Fatalf("Until %v is not the time sent plus Valid %v", s.Until, s.Valid)
			}
			s, err = c.TakeSlice(ctx, "api", l, 10)
			if err != nil || s.Granted != 6 || s.Remaining != 0 {
				t.Fatalf("partial slice: %+v, %v; want 6 of 10 granted", s, err)
			}
			s, err = c.TakeSlice(ctx, "api", l, 1)
			if err != nil || s.Granted != 0 || s.RetryAfter <= 0 || s.Valid != 0 {
				t.Fatalf("slice of a spent key: %+v, %v; want none, a RetryAfter", s, err)
			}
			res, err := c.Refund(ctx, "api", l, 3)
			if err != nil || res.Remaining != 3 {
				t.Fatalf("Refund 3: %+v, %v; want 3 remaining", res, err)
			}
			res, err = c.AllowN(ctx, "api", l, 3)
			if err != nil || !res.Allowed || res.Remaining != 0 {
				t.Fatalf("AllowN 3 after the refund: %+v, %v", res, err)
			}
			// A Token bucket's slice lasts the time it refills from empty.
			s, err = c.TakeSlice(ctx, "bucket", client.Token(10, sec), 10)
			if err != nil || s.Granted != 10 || s.Valid != sec {
				t.Fatalf("token slice: %+v, %v; want 10 for 1s", s, err)
			}
		})
	}
}

// TestTakeSliceBadInput: a count of 0, below or above the limit, and a Log or Leaky
// limit get ErrBadLimit and spend nothing, on a real rlserver; Lua's Client has no
// slices (ErrNoSlice), and a refund out of range is refused.
func TestTakeSliceBadInput(t *testing.T) {
	rdb := rlserverProcess(t)
	c, err := client.New(rdb, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fixed := client.Fixed(10, year)
	for _, bad := range []struct {
		name string
		l    client.Limit
		n    int
	}{
		{"zero", fixed, 0},
		{"negative", fixed, -1},
		{"above the limit", fixed, 11},
		{"log", client.Log(10, year), 1},
		{"leaky", client.Leaky(10, year, 5), 1},
		{"zero limit", client.Limit{}, 1},
	} {
		if s, err := c.TakeSlice(ctx, "api", bad.l, bad.n); !errors.Is(err, client.ErrBadLimit) || s != (client.Slice{}) {
			t.Errorf("%s: %+v, %v; want ErrBadLimit", bad.name, s, err)
		}
	}
	if n, err := rdb.Exists(ctx, "api").Result(); err != nil || n != 0 {
		t.Fatalf("after the bad slices the key exists: %d, %v", n, err)
	}
	if _, err := c.Refund(ctx, "api", fixed, 0); !errors.Is(err, client.ErrBadLimit) {
		t.Fatalf("Refund 0: %v; want ErrBadLimit", err)
	}
	if res, err := c.Peek(ctx, "api", fixed); err != nil || res.Remaining != 9 {
		t.Fatalf("after the bad calls: %+v, %v; want the key fresh (9 left after the peeked call)", res, err)
	}

	lc, err := client.NewLua(rdb, client.LuaOptions{Options: client.Options{Fallback: &client.Fallback{Replicas: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.TakeSlice(ctx, "api", fixed, 1); !errors.Is(err, client.ErrNoSlice) {
		t.Fatalf("Lua: %v; want ErrNoSlice", err)
	}
}

// TestTakeSliceUnavailable: a server that does not answer gives ErrUnavailable, with
// or without a Fallback: a fallback decides requests, never slices.
func TestTakeSliceUnavailable(t *testing.T) {
	dead := newRedis(t, testenv.DeadAddr(t))
	for _, opts := range []client.Options{{}, {Fallback: &client.Fallback{Replicas: 2}}} {
		c, err := client.New(dead, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.TakeSlice(context.Background(), "api", client.Fixed(10, sec), 5); !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("fallback %v: %v; want ErrUnavailable", opts.Fallback != nil, err)
		}
	}
}
