package client_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestWait blocks on a real rlserver and its real clock, as a caller would.
func TestWait(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(newRedis(t, testenv.StartServer(t, resp.Config{})), client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	limit := client.Token(2, 200*time.Millisecond) // one token every 100 ms
	start := time.Now()
	for i := range 3 {
		if err := c.Wait(ctx, "wait", limit); err != nil {
			t.Fatalf("Wait %d: %v", i+1, err)
		}
	}
	// The third waited for a token: 100 ms, never less.
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("three Waits on a bucket of 2 took %v, want at least 100 ms", took)
	}
	if res, err := c.Peek(ctx, "wait", limit); err != nil || res.Remaining != 0 {
		t.Errorf("after three Waits: %+v, %v; want the bucket empty", res, err)
	}

	// A cost that can never pass, and a wait past the deadline, return at once.
	if err := c.WaitN(ctx, "wait", limit, 3); !errors.Is(err, client.ErrBadLimit) {
		t.Errorf("WaitN of 3 on a capacity of 2: %v, want ErrBadLimit", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := c.WaitN(short, "wait", limit, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitN needing 200 ms within 20: %v, want DeadlineExceeded", err)
	}

	// Leaky: an allowed call waits its turn in the queue before Wait returns.
	queue := client.Leaky(10, time.Second, 1) // one leaves every 100 ms, one may wait
	start = time.Now()
	for i := range 2 {
		if err := c.Wait(ctx, "queue", queue); err != nil {
			t.Fatalf("Wait %d on the queue: %v", i+1, err)
		}
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("the second of a queue at 10/s returned after %v, want its turn 100 ms later", took)
	}
}

// TestWaitTakesTurns: 20 callers of one Client waiting on one key take turns, so
// rlserver sees about two calls a caller (asked at the head, denied, asked again
// after the wait), not every waiter asking at every refill (about 20 × 21 / 2).
// The calls are counted by the real server's INFO commandstats.
func TestWaitTakesTurns(t *testing.T) {
	ctx := context.Background()
	rdb := newRedis(t, testenv.StartServer(t, resp.Config{}))
	c, err := client.New(rdb, client.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		t.Helper()
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`cmdstat_rl\.token:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	const waiters = 20
	limit := client.Token(1, 20*time.Millisecond) // one token every 20 ms
	before := calls()
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Go(func() { errs <- c.Wait(ctx, "turns", limit) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := calls() - before; n < waiters || n > 3*waiters {
		t.Errorf("%d waiters made %d RL.TOKEN calls, want %d to %d", waiters, n, waiters, 3*waiters)
	}
}
