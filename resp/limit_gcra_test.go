package resp

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGCRARedisSuite replays Redis's own tests of GCRA (tests/unit/gcra.tcl in
// redis/redis) at a frozen clock, each with the exact reply Redis's arithmetic gives
// where the Tcl test checks only a sign or a bound. Left out: a list or set on the
// key (rlserver has neither; another algorithm's state stands in), RDB and AOF
// reloads and Redis's replication, which rlserver does not have.
func TestGCRARedisSuite(t *testing.T) {
	const (
		positive = "ERR value is out of range, must be positive"
		atLeast1 = "ERR value is out of range, value must between 1 and 9223372036854775807"
		notInt   = "ERR value is not an integer or out of range"
		period   = "ERR period must be > 0 and < 1e12"
		tokOvf   = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"
		burstOvf = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"
	)
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"argument validation", []call{
			{"GCRA", "ERR wrong number of arguments for 'gcra' command"},
			{"GCRA mykey", "ERR wrong number of arguments for 'gcra' command"},
			{"GCRA mykey 10", "ERR wrong number of arguments for 'gcra' command"},
			{"GCRA mykey 10 5", "ERR wrong number of arguments for 'gcra' command"},
			{"GCRA mykey -1 5 10", positive},
			{"GCRA mykey notanumber 5 10", positive},
			{"GCRA mykey 10 0 10", atLeast1},
			{"GCRA mykey 10 -1 10", atLeast1},
			{"GCRA mykey 10 notanumber 10", notInt},
			{"GCRA mykey 10 5 0", period},
			{"GCRA mykey 10 5 -1", period},
			{"GCRA mykey 10 5 notanumber", "ERR value is not a valid float"},
			{"GCRA mykey 10 5 10 TOKENS", "ERR Missing TOKENS value"},
			{"GCRA mykey 10 5 10 TOKENS 0", atLeast1},
			{"GCRA mykey 10 5 10 TOKENS -1", atLeast1},
			{"GCRA mykey 10 5 10 TOKENS notanumber", notInt},
			{"EXISTS mykey", "0"}, // no error wrote anything
			{"GCRA mykey 10 5 60", "[0 11 10 -1 12]"},
			{"DEL mykey", "1"},
			{"GCRA mykey 10 5 60 TOKENS 2", "[0 11 9 -1 24]"},
			{"DEL mykey", "1"},
			{"GCRA mykey 10 5 0.5", "[0 11 10 -1 1]"},
		}},
		{"first request is allowed", []call{
			{"GCRA mykey 5 10 60", "[0 6 5 -1 6]"},
		}},
		{"sub-millisecond TaT does not expire key at current ms", []call{
			{"GCRA mykey 1 10000 1", "[0 2 1 -1 1]"},
			{"EXISTS mykey", "1"},
			{"PTTL mykey", "1"},
		}},
		{"requests within burst are allowed", []call{
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
			{"GCRA mykey 5 1 60", "[0 6 4 -1 120]"},
			{"GCRA mykey 5 1 60", "[0 6 3 -1 180]"},
			{"GCRA mykey 5 1 60", "[0 6 2 -1 240]"},
			{"GCRA mykey 5 1 60", "[0 6 1 -1 300]"},
			{"GCRA mykey 5 1 60", "[0 6 0 -1 360]"},
			{"GCRA mykey 5 1 60", "[1 6 0 60 360]"},
		}},
		{"retry_after is positive when limited", []call{
			{"GCRA mykey 2 1 60", "[0 3 2 -1 60]"},
			{"GCRA mykey 2 1 60", "[0 3 1 -1 120]"},
			{"GCRA mykey 2 1 60", "[0 3 0 -1 180]"},
			{"GCRA mykey 2 1 60", "[1 3 0 60 180]"},
		}},
		{"retry_after is negative when allowed", []call{
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
		}},
		{"num_avail_req decreases with each request", []call{
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
			{"GCRA mykey 5 1 60", "[0 6 4 -1 120]"},
		}},
		{"multiple tokens consumed per request", []call{
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
			{"DEL mykey", "1"},
			{"GCRA mykey 5 1 60 TOKENS 3", "[0 6 3 -1 180]"},
		}},
		{"rate recovery over time", []call{
			{"GCRA mykey 1 1 1", "[0 2 1 -1 1]"},
			{"GCRA mykey 1 1 1", "[0 2 0 -1 2]"},
			{"GCRA mykey 1 1 1", "[1 2 0 1 2]"},
			{"DEBUG CLOCK ADVANCE 1100000", "OK"}, // Tcl: after 1100
			{"GCRA mykey 1 1 1", "[0 2 0 -1 2]"},
		}},
		{"full_burst_after indicates time to full recovery", []call{
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
			{"GCRA mykey 5 1 60", "[0 6 4 -1 120]"},
			{"GCRA mykey 5 1 60", "[0 6 3 -1 180]"}, // Tcl: >= 179
			{"DEL mykey", "1"},
			{"GCRA mykey 5 1 60", "[0 6 5 -1 60]"},
			{"GCRA mykey 5 1 60 TOKENS 4", "[0 6 1 -1 300]"}, // Tcl: >= 299
		}},
		{"different keys are independent", []call{
			{"GCRA key1 2 1 60", "[0 3 2 -1 60]"},
			{"GCRA key1 2 1 60", "[0 3 1 -1 120]"},
			{"GCRA key1 2 1 60", "[0 3 0 -1 180]"},
			{"GCRA key1 2 1 60", "[1 3 0 60 180]"},
			{"GCRA key2 2 1 60", "[0 3 2 -1 60]"},
		}},
		{"max_burst of 0 allows only sustained rate", []call{
			{"GCRA mykey 0 1 1", "[0 1 0 -1 1]"},
			{"GCRA mykey 0 1 1", "[1 1 0 1 1]"},
		}},
		{"wrong type error", []call{
			{"RL.TOKEN mykey 5 60000", "[1 5 4 0 12000]"},
			{"GCRA mykey 5 1 60", "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"DEL mykey", "1"},
			{"CL.THROTTLE mykey 5 1 60", "[0 6 5 -1 60]"},
			{"GCRA mykey 5 1 60", "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"DEL mykey", "1"},
			{"RL.GCRA mykey 1 60000", "[1 1 0 0 60000]"},
			{"GCRA mykey 5 1 60", "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"GCRASETVALUE mykey 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		}},
		{"GCRASETVALUE basic functionality", []call{
			{"GCRASETVALUE mykey 1767225660000000", "OK"}, // t0 + 60 s
			{"TYPE mykey", "gcra"},
			{"PTTL mykey", "60000"},
			{"GCRASETVALUE mykey x", "ERR Invalid TaT value"},
			{"GCRASETVALUE mykey -1", "ERR Invalid negative TaT value"},
			{"GCRASETVALUE mykey", "ERR wrong number of arguments for 'gcrasetvalue' command"},
			{"PTTL mykey", "60000"},
			{"GCRASETVALUE mykey 1767225600000001", "OK"}, // the ms after t0
			{"PEXPIRETIME mykey", "1767225600001"},
			{"GCRASETVALUE mykey 1", "OK"}, // long past: gone
			{"EXISTS mykey", "0"},
		}},
		{"overflow", []call{
			{"GCRA mykey 1 1 86400 TOKENS 200000000", tokOvf},
			{"GCRA mykey 200000000 1 86400", burstOvf},
			{"GCRA mykey 1 1 2147483647 TOKENS 2147483647", tokOvf},
			{"EXISTS mykey", "0"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startDebugServer(t)
			for _, proto := range []int{3, 2} {
				ts.core.SetClock(t0)
				rdb := ts.client(t, proto)
				run(t, rdb, tc.calls)
				run(t, rdb, []call{{"FLUSHALL", "OK"}})
			}
		})
	}
}

// TestGCRAErrorsChangeNothing: a bad call on a key that holds a state leaves it as
// it was; a schedule over 100 years is taken, as Redis takes it.
func TestGCRAErrorsChangeNothing(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"GCRA k 5 1 60", "[0 6 5 -1 60]"},
		{"GCRA k 5 1 60 TOKENS 1 x", "ERR wrong number of arguments for 'gcra' command"},
		{"GCRA k 5 1 60 COST 1", "ERR syntax error"},
		{"GCRA k 5 1 60 PEEK", "ERR syntax error"},
		{"GCRA k 5 1 inf", "ERR period must be > 0 and < 1e12"},
		{"GCRA k 5 1 1e12", "ERR period must be > 0 and < 1e12"},
		{"GCRA k 5 1 nan", "ERR value is not a valid float"},
		{"GCRA k 5 1 1e400", "ERR value is not a valid float"},
		{"GCRA k 5 1 0x10", "ERR value is not a valid float"},
		{"GCRA k 5 1 0x1p3", "ERR value is not a valid float"},
		{"GCRA k 5 1 60 TOKENS 7", "[1 6 5 -1 60]"}, // 7 of 6 never fits: limited, not refused
		{"PTTL k", "60000"},
		{"TYPE k", "gcra"},
		{"GCRA long 4000000000 1 1", "[0 4000000001 4000000000 -1 1]"},
		{"GCRA long 4000000000 1 1 TOKENS 4000000000", "[0 4000000001 0 -1 4000000001]"},
		{"EXPIRETIME long", "5767225601"}, // 126 years on
	})
}

// TestGCRAClock: Redis's GCRA decides on the command's time in whole ms and keeps
// its key until its tat rounded up to the ms; RL.GCRA keeps its µs.
func TestGCRAClock(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		// T = 100 µs, burst 1: within one ms one call passes, as in Redis.
		{"DEBUG CLOCK SET 1750000000000300", "OK"},
		{"GCRA k 0 10000 1", "[0 1 0 -1 1]"},
		{"PEXPIRETIME k", "1750000000001"},
		{"DEBUG CLOCK ADVANCE 400", "OK"},
		{"GCRA k 0 10000 1", "[1 1 0 1 1]"},
		{"DEBUG CLOCK ADVANCE 299", "OK"}, // 999 µs into the ms
		{"GCRA k 0 10000 1", "[1 1 0 1 1]"},
		{"DEBUG CLOCK ADVANCE 1", "OK"}, // the next ms: the key is gone
		{"EXISTS k", "0"},
		{"GCRA k 0 10000 1", "[0 1 0 -1 1]"},
		// RL.GCRA on the same numbers, in µs: 100 µs later one more passes.
		{"RL.GCRA u 1 0", "ERR window_ms must be an integer between 1 and 31536000000"},
		{"RL.GCRA u 10 1", "[1 10 9 0 1]"},
		{"DEBUG CLOCK ADVANCE 100", "OK"},
		{"RL.GCRA u 10 1", "[1 10 9 0 1]"},
		{"TYPE u", "rl.gcra"},
		{"TYPE k", "gcra"},
		{"GCRA u 0 10000 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.GCRA k 10 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	})
}

// TestGCRACommandInfo: COMMAND INFO gives Redis's arity and key positions, which
// cluster clients route by; COMMAND DOCS the arguments redis-cli shows as hints; a
// cluster node redirects a key of another node's slot.
func TestGCRACommandInfo(t *testing.T) {
	ts := startServer(t, Config{Cluster: testTopology(t)})
	ts.core.SetClock(t0)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	info, err := rdb.Command(ctx).Result() // what go-redis cluster routing reads
	if err != nil {
		t.Fatal(err)
	}
	c := info["gcra"]
	if c == nil || c.Arity != -5 || c.FirstKeyPos != 1 || c.LastKeyPos != 1 || c.StepCount != 1 ||
		!slices.Contains(c.Flags, "write") {
		t.Errorf("COMMAND INFO gcra = %+v", c)
	}
	docs := do(rdb, "COMMAND DOCS gcra")
	for _, want := range []string{"tokens_per_period", "type:double", "token:TOKENS"} {
		if !strings.Contains(docs, want) {
			t.Errorf("COMMAND DOCS gcra lacks %q: %s", want, docs)
		}
	}
	run(t, rdb, []call{
		{"GCRA bar 15 30 60", "[0 16 15 -1 2]"},
		{"GCRA foo 15 30 60", "MOVED 12182 127.0.0.1:7001"},
	})
}

// TestGCRAGoRedis calls GCRA through go-redis v9 on a listening server on the real
// clock, as an application would. go-redis v9.23 has no GCRA method (the command is
// newer), so Do sends it, which is what its GCRA method would send.
func TestGCRAGoRedis(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		key := "app:" + string(rune('0'+proto))
		r, err := rdb.Do(ctx, "GCRA", key, 15, 30, 60).Int64Slice()
		if err != nil || !slices.Equal(r, []int64{0, 16, 15, -1, 2}) {
			t.Errorf("RESP%d: GCRA %s 15 30 60 = %v, %v", proto, key, r, err)
		}
		r, err = rdb.Do(ctx, "GCRA", key, 15, 30, 60, "TOKENS", 17).Int64Slice()
		if err != nil || !slices.Equal(r, []int64{1, 16, 15, -1, 2}) {
			t.Errorf("RESP%d: GCRA %s 15 30 60 TOKENS 17 = %v, %v", proto, key, r, err)
		}
		err = rdb.Do(ctx, "GCRA", key, 15, 30, 0).Err()
		if err == nil || err.Error() != "ERR period must be > 0 and < 1e12" {
			t.Errorf("RESP%d: GCRA %s 15 30 0: %v", proto, key, err)
		}
	}
}

// TestGCRARedisCLI runs GCRA from redis-cli, the way a shell script would.
func TestGCRARedisCLI(t *testing.T) {
	cli := needTool(t, "redis-cli", "apt-get install redis-tools")
	ts := startServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"GCRA", "user123", "15", "30", "60"}, "0\n16\n15\n-1\n2\n"},
		{[]string{"gcra", "user123", "15", "30", "60", "TOKENS", "16"}, "1\n16\n15\n2\n2\n"},
		{[]string{"GCRA", "user123", "15", "30", "0"}, "ERR period must be > 0 and < 1e12\n\n"}, // redis-cli's blank line after an error
		{[]string{"TYPE", "user123"}, "gcra\n"},
	} {
		out, err := exec.CommandContext(ctx, cli, append([]string{"-p", port}, c.args...)...).CombinedOutput()
		if err != nil || string(out) != c.want {
			t.Errorf("redis-cli %s: %q, %v; want %q", strings.Join(c.args, " "), out, err, c.want)
		}
	}
}
