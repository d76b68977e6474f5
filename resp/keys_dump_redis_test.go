package resp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestRestoreRedisPayload: a real Redis's DUMP payload is refused as Redis refuses a
// payload it did not write, and Redis refuses ours the same way.
func TestRestoreRedisPayload(t *testing.T) {
	real := redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t)})
	t.Cleanup(func() { real.Close() })
	ctx := context.Background()
	real.Set(ctx, "s", "value", 0)
	theirs, err := real.Dump(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.StartServer(t, resp.Config{})})
	t.Cleanup(func() { rdb.Close() })
	rdb.Do(ctx, "GCRA", "k", 5, 1, 60)
	ours := rdb.Dump(ctx, "k").Val()
	const wrong = "ERR DUMP payload version or checksum are wrong"
	if err := rdb.Restore(ctx, "s", 0, theirs).Err(); err == nil || err.Error() != wrong {
		t.Errorf("rlserver RESTORE of Redis's payload: %v", err)
	}
	if err := real.Restore(ctx, "k", 0, ours).Err(); err == nil || err.Error() != wrong {
		t.Errorf("Redis RESTORE of rlserver's payload: %v", err)
	}
	// Both answer the same to the same bad RESTOREs.
	for _, args := range [][]any{
		{"RESTORE", "s", 0, theirs},
		{"RESTORE", "n", -1, theirs},
		{"RESTORE", "n", 0, theirs, "IDLETIME", -1},
		{"RESTORE", "n", 0, theirs, "FREQ", 300},
		{"RESTORE", "n", 0, theirs, "BAD"},
		{"RESTORE", "n", 0, "junk"},
		{"RESTORE", "n"},
		{"PEXPIRETIME", "n"},
		{"EXPIRETIME", "n"},
		{"DUMP", "n"},
		{"DUMP", "n", "m"},
		{"PEXPIRETIME"},
		{"FUNCTION", "FLUSH", "BAD"},
		{"FUNCTION", "FLUSH", "SYNC", "X"},
		{"FUNCTION", "FLUSH", "ASYNC"},
	} {
		if len(args) > 1 && args[1] == "s" {
			rdb.Do(ctx, "GCRA", "s", 5, 1, 60) // s exists on both: BUSYKEY first
		}
		a, errA := rdb.Do(ctx, args...).Result()
		b, errB := real.Do(ctx, args...).Result()
		if show(a, errA) != show(b, errB) {
			t.Errorf("%q: rlserver %s, Redis %s", args[:min(len(args), 2)], show(a, errA), show(b, errB))
		}
	}
}

// show is a reply or its error as text.
func show(v any, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(v)
}
