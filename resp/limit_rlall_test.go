package resp

import (
	"context"
	"strings"
	"sync"
	"testing"
)

const errUnknownAlgo = "in RL.ALL: expected FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY"

func TestAllErrors(t *testing.T) {
	ts := startDebugServer(t)
	long := strings.Repeat("X", 33)
	var rules65 strings.Builder
	rules65.WriteString("RL.ALL")
	for i := range 65 {
		rules65.WriteString(" FIXED k" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + " 1 1000")
	}
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		run(t, rdb, []call{
			{"FLUSHALL", "OK"},
			{"RL.TOKEN w 10 1000", "[1 10 9 0 100]"},
			{"RL.ALL FIXED a 1", "ERR wrong number of arguments for 'rl.all' command"},
			{"RL.ALL FIXED a 1 1000 TOKEN b 1", "ERR wrong number of arguments for 'rl.all' command"},
			{"RL.ALL NOPE a 1 1000", "ERR unknown algorithm 'NOPE' " + errUnknownAlgo},
			{"RL.ALL THROTTLE a 1 1 1", "ERR unknown algorithm 'THROTTLE' " + errUnknownAlgo},
			{"RL.ALL " + long + " a 1 1000", "ERR unknown algorithm " + errUnknownAlgo},
			{"RL.ALL FIXED a 0 1000", "ERR limit must be an integer between 1 and 1000000000"},
			{"RL.ALL FIXED a 1 1000 TOKEN b 1 0", "ERR window_ms must be an integer between 1 and 31536000000"},
			{"RL.ALL FIXED a 1 1000 RATE 2", "ERR syntax error"},
			{"RL.ALL TOKEN a 1 1000 RATE 2 GCRA b 5 1000 QUEUE 1", "ERR syntax error"},
			{"RL.ALL FIXED a 1 1000 COST", "ERR syntax error"},
			{"RL.ALL FIXED a 1 1000 COST 1001", "ERR cost must be an integer between 0 and 1000"},
			{"RL.ALL LOG a 100001 1000", "ERR limit must be an integer between 1 and 100000"},
			{"RL.ALL FIXED a 1 1000 SLIDE a 5 1000", "ERR RL.ALL names the same key in two rules"},
			{rules65.String(), "ERR RL.ALL takes at most 64 rules"},
			{"RL.ALL FIXED a 10 1000 FIXED w 10 1000", "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"RL.ALL FIXED w 10 1000 PEEK", "WRONGTYPE Operation against a key holding the wrong kind of value"},
			// Nothing above changed anything: only w exists, as it was.
			{"EXISTS a b", "0"},
			{"DBSIZE", "1"},
			{"RL.TOKEN w 10 1000 PEEK", "[1 10 8 0 200]"},
		})
	}
}

func TestAllAtomic(t *testing.T) {
	ts := startDebugServer(t)
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		do(rdb, "FLUSHALL")
		run(t, rdb, []call{
			// b admits, a refuses: nothing consumed from b, not even created.
			{"RL.TOKEN a 1 1000", "[1 1 0 0 1000]"},
			{"RL.ALL FIXED b 10 60000 TOKEN a 1 1000", "[0 [1 10 9 0 60000] [0 1 0 1000 1000]]"},
			{"EXISTS b", "0"},
			// Case-insensitive words; PEEK among any rule's options writes nothing.
			{"rl.all fixed c 10 60000 peek gcra d 10 1000 burst 2 cost 2", "[1 [1 10 9 0 60000] [1 2 0 0 200]]"},
			{"EXISTS c d", "0"},
			// All admit: all consume, each its own answer; LEAKY's field 4 is its delay.
			{"RL.ALL LEAKY q 2 1000 QUEUE 1 SLIDE s 4 60000 COST 2", "[1 [1 2 1 0 500] [1 4 2 0 120000]]"},
			{"RL.ALL LEAKY q 2 1000 QUEUE 1 SLIDE s 4 60000 COST 2", "[1 [1 2 0 500 1000] [1 4 0 0 120000]]"},
			// The slide refuses now: the leaky queue's place is not taken.
			{"RL.ALL SLIDE s 4 60000 LEAKY q 2 1000 QUEUE 1", "[0 [0 4 0 75000 120000] [0 2 0 500 1000]]"},
			{"DEBUG CLOCK ADVANCE 500000", "OK"},
			{"RL.ALL LEAKY q 2 1000 QUEUE 1 LOG l 3 1000", "[1 [1 2 0 500 1000] [1 3 2 0 1000]]"},
			// PEEK reports 1 when every rule would admit.
			{"RL.ALL LOG l 3 1000 COST 2 PEEK", "[1 [1 3 0 0 1000]]"},
			{"RL.ALL LOG l 3 1000 COST 3 PEEK", "[0 [0 3 2 1000 1000]]"},
			{"DEBUG CLOCK SET 1767225600000000", "OK"},
		})
	}
}

// TestAllStats: each rule's own answer counts in its kind's counters, INFO and metrics.
func TestAllStats(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.ALL FIXED a 1 60000 TOKEN b 1 1000", "[1 [1 1 0 0 60000] [1 1 0 0 1000]]"},
		{"RL.ALL FIXED c 5 60000 TOKEN b 1 1000", "[0 [1 5 4 0 60000] [0 1 0 1000 1000]]"},
	})
	info := do(rdb, "INFO stats")
	for _, want := range []string{"rl_fixed_allowed:2\r\n", "rl_fixed_limited:0\r\n",
		"rl_token_allowed:1\r\n", "rl_token_limited:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	text := scrape(t, ts)
	for _, want := range []string{
		`rlserver_requests_total{command="rl.fixed",result="allowed"} 2`,
		`rlserver_requests_total{command="rl.token",result="limited"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestAllCommandInfo: RL.ALL's keys move, as COMMAND INFO says, and go-redis's
// cluster routing reads the first key where it always is.
func TestAllCommandInfo(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	info, err := rdb.Command(context.Background()).Result() // what go-redis cluster routing reads
	if err != nil {
		t.Fatal(err)
	}
	all, acq := info["rl.all"], info["rl.acquire"]
	if all == nil || acq == nil {
		t.Fatalf("COMMAND INFO: %v", info)
	}
	if all.Arity != -5 || all.FirstKeyPos != 2 || !strings.Contains(strings.Join(all.Flags, " "), "movablekeys") {
		t.Errorf("rl.all: %+v, want arity -5, first key 2, movablekeys", all)
	}
	if acq.Arity != -4 || acq.FirstKeyPos != 1 || acq.LastKeyPos != 1 {
		t.Errorf("rl.acquire: %+v, want arity -4, key at 1", acq)
	}
	syntax := lookupFull("rl.all").syntax()
	if !strings.HasPrefix(syntax, "RL.ALL FIXED|SLIDE|LOG|TOKEN|GCRA|LEAKY key limit window_ms [COST cost|") {
		t.Errorf("RL.ALL syntax: %s", syntax)
	}
}

// TestAllConcurrent runs overlapping RL.ALL calls on two keys in both orders from
// many connections (run with -race): the shards are locked in one order, so nothing
// deadlocks, and exactly limit calls pass, each consuming from both keys.
func TestAllConcurrent(t *testing.T) {
	ts := startDebugServer(t)
	const workers, each, limit = 8, 40, 97
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for w := range workers {
		rdb := ts.client(t, 3)
		first, second := "x:1", "y:2"
		if w%2 == 1 {
			first, second = second, first
		}
		wg.Go(func() {
			for range each {
				v, err := rdb.Do(context.Background(), "RL.ALL", "FIXED", first, limit, 60000,
					"FIXED", second, limit, 60000).Slice()
				if err != nil {
					t.Error(err)
					return
				}
				if v[0].(int64) == 1 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != limit {
		t.Errorf("%d of %d calls allowed, want exactly %d", allowed, workers*each, limit)
	}
	run(t, ts.client(t, 3), []call{
		{"RL.FIXED x:1 97 60000 PEEK", "[0 97 0 60000 60000]"},
		{"RL.FIXED y:2 97 60000 PEEK", "[0 97 0 60000 60000]"},
	})
}

// TestAllManyRules: a call of more rules than fit the handler's stack buffer.
func TestAllManyRules(t *testing.T) {
	ts := startDebugServer(t)
	cmd, first, second := "RL.ALL", "[1", "[0"
	for i := range 9 {
		cmd += " FIXED k" + string(rune('1'+i)) + " 1 60000"
		first += " [1 1 0 0 60000]"
		second += " [0 1 0 60000 60000]"
	}
	run(t, ts.client(t, 3), []call{{cmd, first + "]"}, {cmd, second + "]"}, {"DBSIZE", "9"}})
}
