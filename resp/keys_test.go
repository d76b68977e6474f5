package resp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

func TestKeyCommands(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ts := startDebugServer(t)
			run(t, ts.client(t, proto), []call{
				{"RL.TOKEN a 10 1000", "[1 10 9 0 100]"},
				{"RL.FIXED b 5 60000", "[1 5 4 0 60000]"},
				{"RL.LOG c 5 10000", "[1 5 4 0 10000]"},
				{"EXISTS a b c d a", "4"},
				{"TYPE a", "rl.token"},
				{"TYPE b", "rl.fixed"},
				{"TYPE c", "rl.log"},
				{"TYPE d", "none"},
				{"PTTL a", "100"},
				{"TTL a", "1"}, // 100 ms, rounded up
				{"PTTL b", "60000"},
				{"TTL b", "60"},
				{"PTTL d", "-2"},
				{"TTL d", "-2"},
				{"DBSIZE", "3"},
				{"SCAN 0 TYPE rl.fixed", "[0 [b]]"},
				{"SCAN 0 TYPE RL.LOG COUNT 100", "[0 [c]]"},
				{"SCAN 0 MATCH b", "[0 [b]]"},
				{"SCAN 0 MATCH z*", "[0 []]"},
				{"SCAN 0 TYPE string", "[0 []]"},
				{"SCAN x", "ERR invalid cursor"},
				{"SCAN -1", "ERR invalid cursor"},
				{"SCAN 0 COUNT 0", "ERR syntax error"},
				{"SCAN 0 COUNT x", "ERR value is not an integer or out of range"},
				{"SCAN 0 MATCH", "ERR syntax error"},
				{"SCAN 0 FOO bar", "ERR syntax error"},
				{"KEYS", "ERR wrong number of arguments for 'keys' command"},
				{"MEMORY USAGE d", "(nil)"},
				{"MEMORY USAGE a SAMPLES x", "ERR value is not an integer or out of range"},
				{"MEMORY USAGE a SAMPLES -1", "ERR syntax error"},
				{"MEMORY USAGE a FOO 1", "ERR syntax error"},
				{"MEMORY USAGE", "ERR wrong number of arguments for 'memory|usage' command"},
				{"MEMORY", "ERR wrong number of arguments for 'memory' command"},
				{"MEMORY PURGE", "OK"},
				{"MEMORY PURGE x", "ERR wrong number of arguments for 'memory|purge' command"},
				{"DEL a d", "1"},
				{"DEL a", "0"},
				{"UNLINK b", "1"},
				{"RL.RESET c", "1"},
				{"RL.RESET c", "0"},
				{"RL.RESET", "ERR wrong number of arguments for 'rl.reset' command"},
				{"DEL", "ERR wrong number of arguments for 'del' command"},
				{"DBSIZE", "0"},
				{"RL.TOKEN a 10 1000", "[1 10 9 0 100]"},
				{"FLUSHALL foo", "ERR syntax error"},
				{"FLUSHALL SYNC SYNC", "ERR syntax error"},
				{"DBSIZE", "1"},
				{"FLUSHALL", "OK"},
				{"DBSIZE", "0"},
				{"RL.TOKEN a 10 1000", "[1 10 9 0 100]"},
				{"FLUSHDB async", "OK"},
				{"FLUSHALL SYNC", "OK"},
				{"EXISTS a", "0"},
			})
		})
	}
}

// TestKeysTyped drives the key commands through go-redis's typed API, which parses
// each reply into its Go type: the shapes must be what go-redis expects.
func TestKeysTyped(t *testing.T) {
	for _, proto := range []int{3, 2} {
		ts := startDebugServer(t)
		rdb := ts.client(t, proto)
		ctx := context.Background()
		var want []string
		for i := 0; i < 250; i++ {
			key := "user:" + strconv.Itoa(i)
			want = append(want, key)
			if err := rdb.Do(ctx, "RL.GCRA", key, 10, 1000).Err(); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want)

		var scanned []string
		iter := rdb.Scan(ctx, 0, "user:*", 7).Iterator()
		for iter.Next(ctx) {
			scanned = append(scanned, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(scanned)
		scanned = slices.Compact(scanned) // SCAN may return a key twice
		if !slices.Equal(scanned, want) {
			t.Errorf("SCAN found %d keys, want %d", len(scanned), len(want))
		}
		keys, err := rdb.Keys(ctx, "user:1?").Result()
		slices.Sort(keys)
		if err != nil || strings.Join(keys, ",") != "user:10,user:11,user:12,user:13,user:14,user:15,user:16,user:17,user:18,user:19" {
			t.Errorf("KEYS user:1? = %v, %v", keys, err)
		}
		if n, err := rdb.DBSize(ctx).Result(); n != 250 || err != nil {
			t.Errorf("DBSIZE = %d, %v", n, err)
		}
		if n, err := rdb.Exists(ctx, "user:1", "user:2", "nope").Result(); n != 2 || err != nil {
			t.Errorf("EXISTS = %d, %v", n, err)
		}
		if s, err := rdb.Type(ctx, "user:1").Result(); s != "rl.gcra" || err != nil {
			t.Errorf("TYPE = %q, %v", s, err)
		}
		if d, err := rdb.PTTL(ctx, "user:1").Result(); d.Milliseconds() != 100 || err != nil {
			t.Errorf("PTTL = %v, %v", d, err)
		}
		if d, err := rdb.TTL(ctx, "nope").Result(); d != -2 || err != nil {
			t.Errorf("TTL of a missing key = %v, %v", d, err)
		}
		if n, err := rdb.MemoryUsage(ctx, "user:1").Result(); n <= 0 || err != nil {
			t.Errorf("MEMORY USAGE = %d, %v", n, err)
		}
		if _, err := rdb.MemoryUsage(ctx, "nope").Result(); err != redis.Nil {
			t.Errorf("MEMORY USAGE of a missing key: err = %v, want redis.Nil", err)
		}
		if n, err := rdb.Del(ctx, "user:1", "user:2", "nope").Result(); n != 2 || err != nil {
			t.Errorf("DEL = %d, %v", n, err)
		}
		if n, err := rdb.Unlink(ctx, "user:3").Result(); n != 1 || err != nil {
			t.Errorf("UNLINK = %d, %v", n, err)
		}
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Error(err)
		}
		if err := rdb.FlushDBAsync(ctx).Err(); err != nil {
			t.Error(err)
		}
		if n, err := rdb.DBSize(ctx).Result(); n != 0 || err != nil {
			t.Errorf("DBSIZE after FLUSHALL = %d, %v", n, err)
		}
	}
}

// TestExpiryWithoutTraffic: once a state is fresh again the key is gone at once,
// and the server's ticker removes it without any request touching it.
func TestExpiryWithoutTraffic(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.TOKEN a 10 1000", "[1 10 9 0 100]"},
		{"DEBUG CLOCK ADVANCE 99999", "OK"},
		{"EXISTS a", "1"},
		{"PTTL a", "1"},
		{"DEBUG CLOCK ADVANCE 1", "OK"},
		{"EXISTS a", "0"},
		{"PTTL a", "-2"},
	})
	poll.Until(t, 10*time.Second, "the ticker to expire the key", func() bool {
		return ts.store.Stats().Keys == 0
	})
	if got := do(rdb, "INFO stats"); !strings.Contains(got, "expired_keys:1\r\n") {
		t.Errorf("INFO stats has no expired_keys:1:\n%s", got)
	}
}

// TestGetKeysRLAll: COMMAND GETKEYS finds RL.ALL's keys among its rules, as redis-py's
// RedisCluster asks for a movablekeys command; rules that do not parse have none.
func TestGetKeysRLAll(t *testing.T) {
	ts := startServer(t, Config{})
	run(t, ts.client(t, 2), []call{
		{"COMMAND GETKEYS RL.ALL TOKEN a 1 1000 FIXED b 2 1000 COST 1", "[a b]"},
		{"COMMAND GETKEYSANDFLAGS RL.ALL TOKEN a 1 1000", "[[a [RW update]]]"},
		{"COMMAND GETKEYS RL.ALL NOPE a 1 1000", "ERR Invalid arguments specified for command"},
		{"COMMAND GETKEYS RL.ALL TOKEN a", "ERR Invalid number of arguments specified for command"},
		{"COMMAND GETKEYS RL.TOKEN k 1 1000", "[k]"},
		{"COMMAND GETKEYS COMMAND INFO", "ERR The command has no key arguments"},
		{"DBSIZE", "0"},
	})
}
