package resp

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// burstCase is one configuration whose burst, sent at one frozen instant, must be
// admitted whole: want calls of args on a fresh key pass with remaining counting down
// want−1, …, 0, and the next is refused.
type burstCase struct {
	args []any // the command and its arguments, the key second
	want int64
}

// TestBurstAdmitsCapacity plays, through go-redis on a listening server at a frozen
// clock, the sweeps that found the float tat's under-count: RL.GCRA with limits 1–150
// over windows from 7 ms to a day (750 pairs; 285 admitted one short) and CL.THROTTLE
// with max_burst 0–60 over six rates (366 configurations; 60 admitted max_burst
// instead of max_burst+1), and RL.LEAKY's queue+1 over the same grid.
func TestBurstAdmitsCapacity(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 2)
	var cases []burstCase
	for limit := int64(1); limit <= 150; limit++ {
		for _, window := range []int64{7, 1000, 60_000, 3_600_000, 86_400_000} {
			key := fmt.Sprintf("gcra:%d:%d", limit, window)
			cases = append(cases,
				burstCase{[]any{"RL.GCRA", key, limit, window}, limit},
				burstCase{[]any{"RL.LEAKY", "leaky:" + key, limit, window, "QUEUE", limit - 1}, limit})
		}
	}
	for burst := int64(0); burst <= 60; burst++ {
		for _, count := range []int64{1, 7, 30, 1000, 1_000_000, 1_000_000_000} {
			key := fmt.Sprintf("throttle:%d:%d", burst, count)
			cases = append(cases, burstCase{[]any{"CL.THROTTLE", key, burst, count, 1}, burst + 1})
		}
	}
	failed := 0
	for _, c := range cases {
		if err := checkBurst(rdb, c); err != nil {
			if failed++; failed <= 10 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d configurations did not admit their whole burst", failed, len(cases))
	}
}

// checkBurst sends c.want+1 calls in one pipeline and checks every reply.
func checkBurst(rdb *redis.Client, c burstCase) error {
	ctx := context.Background()
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, c.want+1)
	for i := range cmds {
		cmds[i] = pipe.Do(ctx, c.args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("%v: %w", c.args, err)
	}
	throttle := c.args[0] == "CL.THROTTLE"
	for i, cmd := range cmds {
		r, err := cmd.Int64Slice()
		if err != nil {
			return fmt.Errorf("%v: %w", c.args, err)
		}
		allowed := r[0] == 1 != throttle
		wantAllowed := int64(i) < c.want
		if allowed != wantAllowed || r[1] != c.want || wantAllowed && r[2] != c.want-1-int64(i) {
			return fmt.Errorf("%v, call %d of a burst of %d: %v", c.args, i+1, c.want, r)
		}
	}
	return nil
}
