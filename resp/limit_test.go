package resp

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestAcceptance: a fresh server on the real clock answers
// RL.TOKEN user:1 10 1000 with 1 10 9 0 100, in RESP3 (go-redis's default) and RESP2.
func TestAcceptance(t *testing.T) {
	for _, proto := range []int{3, 2} {
		ts := startServer(t, Config{})
		run(t, ts.client(t, proto), []call{{"RL.TOKEN user:1 10 1000", "[1 10 9 0 100]"}})
	}
}

// TestExamples replays the examples of docs/commands.md, each command's on a
// fresh key at t0, and requires the documented replies.
func TestExamples(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	n := 0
	for _, cm := range commands {
		for _, ex := range cm.examples {
			want := ex.reply // a single integer (RL.RELEASE), else an array's elements
			if strings.Contains(want, " ") {
				want = "[" + want + "]"
			}
			run(t, rdb, []call{{ex.command, want}})
			n++
		}
	}
	if n < 7 {
		t.Errorf("only %d examples; every RL.* command and CL.THROTTLE needs one", n)
	}
}

func TestLimiterErrors(t *testing.T) {
	ts := startDebugServer(t)
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		run(t, rdb, []call{
			{"RL.TOKEN k", "ERR wrong number of arguments for 'rl.token' command"},
			{"rl.token k 10", "ERR wrong number of arguments for 'rl.token' command"},
			{"RL.TOKEN k 0 1000", "ERR limit must be an integer between 1 and 1000000000"},
			{"RL.TOKEN k x 1000", "ERR limit must be an integer between 1 and 1000000000"},
			{"RL.TOKEN k 10 0", "ERR window_ms must be an integer between 1 and 31536000000"},
			{"RL.TOKEN k 10 1000 FOO", "ERR syntax error"},
			{"RL.TOKEN k 10 1000 COST", "ERR syntax error"},
			{"RL.TOKEN k 10 1000 COST -1", "ERR cost must be an integer between 0 and 10000"},
			{"RL.TOKEN k 10 1000 BURST 2", "ERR syntax error"},
			{"RL.LOG k 100001 1000", "ERR limit must be an integer between 1 and 100000"},
			{"RL.FIXED k", "ERR wrong number of arguments for 'rl.fixed' command"},
			{"RL.SLIDE k 1", "ERR wrong number of arguments for 'rl.slide' command"},
			{"RL.GCRA k 1", "ERR wrong number of arguments for 'rl.gcra' command"},
			{"RL.LEAKY k 1", "ERR wrong number of arguments for 'rl.leaky' command"},
			{"RL.LOG k 1", "ERR wrong number of arguments for 'rl.log' command"},
			{"CL.THROTTLE k 1 2", "ERR wrong number of arguments for 'cl.throttle' command"},
			{"CL.THROTTLE k 1 2 3 4 5", "ERR wrong number of arguments for 'cl.throttle' command"},
			// Nothing above created the key.
			{"EXISTS k", "0"},
			{"DBSIZE", "0"},
		})
	}
}

func TestLimiterWrongTypeChangesNothing(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		{"RL.TOKEN k 10 1000", "[1 10 9 0 100]"},
		{"RL.FIXED k 10 1000", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"CL.THROTTLE k 1 1 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"TYPE k", "rl.token"},
		{"PTTL k", "100"},
		{"RL.TOKEN k 10 1000", "[1 10 8 0 200]"},
	})
}

func TestLimiterCaseAndOptions(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 2), []call{
		{"rl.token k 10 1000 peek cost 2", "[1 10 8 0 200]"},
		{"EXISTS k", "0"}, // PEEK writes nothing
		{"Rl.Token k 10 1000 CoSt 2", "[1 10 8 0 200]"},
		{"RL.TOKEN k 10 1000 RATE 5", "[1 10 7 0 600]"},
	})
}

// TestLimiterClock moves the debug clock and sees the bucket refill.
func TestLimiterClock(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		{"RL.TOKEN k 10 1000 COST 10", "[1 10 0 0 1000]"},
		{"RL.TOKEN k 10 1000", "[0 10 0 100 1000]"},
		{"DEBUG CLOCK ADVANCE 100000", "OK"},
		{"RL.TOKEN k 10 1000", "[1 10 0 0 1000]"},
		{"DEBUG CLOCK SET 1767225602000000", "OK"}, // t0 + 2s: full again
		{"RL.TOKEN k 10 1000", "[1 10 9 0 100]"},
	})
}

// TestLimiterConcurrent runs many clients on one key: the store decides atomically,
// so exactly limit calls are allowed in the window (run with -race).
func TestLimiterConcurrent(t *testing.T) {
	ts := startDebugServer(t)
	const workers, each, limit = 8, 50, 123
	rdb := ts.client(t, 3)
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe := rdb.Pipeline()
			cmds := make([]*redis.Cmd, each)
			for i := range cmds {
				cmds[i] = pipe.Do(context.Background(), "RL.FIXED", "shared", limit, 60000)
			}
			if _, err := pipe.Exec(context.Background()); err != nil {
				t.Error(err)
				return
			}
			for _, c := range cmds {
				v, err := c.Result()
				if err != nil {
					t.Error(err)
					return
				}
				if v.([]any)[0].(int64) == 1 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
		// Readers of shared server state at the same time.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				for _, line := range []string{"INFO", "CLIENT LIST", "DBSIZE", "KEYS *"} {
					if got := do(rdb, line); strings.HasPrefix(got, "ERR") {
						t.Errorf("%s: %s", line, got)
					}
				}
			}
		}()
	}
	wg.Wait()
	if allowed != limit {
		t.Errorf("allowed %d of %d calls, want exactly %d", allowed, workers*each, limit)
	}
	run(t, rdb, []call{{"RL.FIXED shared 123 60000 PEEK", "[0 123 0 60000 60000]"}})
}
