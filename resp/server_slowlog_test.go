package resp

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowlog: with a threshold of 0 every command is logged, newest first, with
// Redis's fields and cuts; LEN, RESET, slowlog-max-len and a negative threshold
// behave as Redis's.
func TestSlowlog(t *testing.T) {
	ts := startServer(t, Config{})
	rdb := ts.client(t, 2)
	ctx := context.Background()
	run(t, rdb, []call{
		{"SLOWLOG LEN", "0"},
		{"RL.TOKEN k 10 1000", "[1 10 9 0 100]"}, // 10 ms threshold: not logged
		{"SLOWLOG LEN", "0"},
		{"CLIENT SETNAME watcher", "OK"},
		{"CONFIG SET slowlog-log-slower-than 0", "OK"},
		{"PING", "PONG"},
		{"AUTH default anything", "OK"},
	})
	long := strings.Repeat("x", 200)
	args := []any{"EXISTS", long}
	for range 40 {
		args = append(args, "k")
	}
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.Do(ctx, "SLOWLOG", "GET", "3").Slice()
	if err != nil || len(got) != 3 {
		t.Fatalf("SLOWLOG GET 3: %v, %v", got, err)
	}
	exists := got[0].([]any)
	if exists[0].(int64) != 3 || time.Since(time.Unix(exists[1].(int64), 0)) > time.Minute || exists[2].(int64) < 0 ||
		!strings.HasPrefix(exists[4].(string), "127.0.0.1:") || exists[5] != "watcher" {
		t.Errorf("entry: %v", exists)
	}
	words := exists[3].([]any)
	if len(words) != 32 || words[1] != strings.Repeat("x", 128)+"... (72 more bytes)" || words[31] != "... (11 more arguments)" {
		t.Errorf("arguments: %d, %v ... %v", len(words), words[1], words[31])
	}
	if f := format(got[1], nil); !strings.Contains(f, " [AUTH (redacted) (redacted)] ") {
		t.Errorf("AUTH entry: %s", f)
	}
	if f := format(got[2], nil); !strings.Contains(f, " [PING] ") {
		t.Errorf("PING entry: %s", f)
	}
	run(t, rdb, []call{
		{"SLOWLOG LEN", "5"}, // CONFIG SET and SLOWLOG GET themselves too
		{"SLOWLOG GET x", "ERR count should be greater than or equal to -1"},
		{"SLOWLOG GET -2", "ERR count should be greater than or equal to -1"},
	})
	if all, err := rdb.Do(ctx, "SLOWLOG", "GET", "-1").Slice(); err != nil || len(all) < 6 {
		t.Errorf("SLOWLOG GET -1: %d entries, %v", len(all), err)
	}
	run(t, rdb, []call{
		{"CONFIG SET slowlog-max-len 2", "OK"},
		{"SLOWLOG LEN", "2"},
		{"CONFIG SET slowlog-log-slower-than -1", "OK"},
		{"SLOWLOG RESET", "OK"},
		{"PING", "PONG"},
		{"SLOWLOG LEN", "0"},
	})
}

// TestSlowlogThreshold: a command enters when it ran at least the threshold, with
// its time; KEYS over 100,000 keys takes milliseconds, and more than a second under
// -race on a loaded machine, never a minute.
func TestSlowlogThreshold(t *testing.T) {
	ts := startServer(t, Config{SlowlogLogSlowerThan: time.Millisecond})
	rdb := ts.client(t, 2)
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := range 100_000 {
		pipe.Do(ctx, "RL.TOKEN", i, 10, 60000)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, threshold := range []int64{1000, 60_000_000} {
		run(t, rdb, []call{{"CONFIG SET slowlog-log-slower-than " + strconv.FormatInt(threshold, 10), "OK"}, {"SLOWLOG RESET", "OK"}})
		if err := rdb.Do(ctx, "KEYS", "*").Err(); err != nil {
			t.Fatal(err)
		}
		entries, err := rdb.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
		if err != nil {
			t.Fatal(err)
		}
		keys := false
		for _, e := range entries {
			e := e.([]any)
			keys = keys || format(e[3], nil) == "[KEYS *]"
			if e[2].(int64) < threshold {
				t.Errorf("threshold %d µs: logged %v", threshold, e)
			}
		}
		if keys != (threshold == 1000) {
			t.Errorf("threshold %d µs: KEYS * over 100,000 keys logged: %v", threshold, keys)
		}
	}
}
