package resp

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDumpRestore: DUMP and RESTORE carry every kind's state, with RESTORE's options
// and TTL as Redis reads them, and DEBUG DIGEST-VALUE tells equal states.
func TestDumpRestore(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	run(t, rdb, []call{
		{"RL.FIXED fixed 10 60000", "[1 10 9 0 60000]"},
		{"RL.SLIDE slide 10 60000", "[1 10 9 0 120000]"},
		{"RL.LOG log 10 60000 COST 3", "[1 10 7 0 60000]"},
		{"RL.TOKEN token 10 60000", "[1 10 9 0 6000]"},
		{"RL.GCRA gcra 10 60000", "[1 10 9 0 6000]"},
		{"RL.LEAKY leaky 10 60000", "[1 10 0 0 6000]"},
		{"CL.THROTTLE cell 5 1 60", "[0 6 5 -1 60]"},
		{"GCRA native 5 1 60", "[0 6 5 -1 60]"},
		{"RL.ACQUIRE lease 3 60000 ID id1", "[1 3 2 0 id1]"},
	})
	keys := []string{"fixed", "slide", "log", "token", "gcra", "leaky", "cell", "native", "lease"}
	for _, k := range keys {
		payload, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		pttl := do(rdb, "PTTL "+k)
		if got := rdb.Restore(ctx, k+"2", 0, payload).Val(); got != "OK" {
			t.Fatalf("RESTORE %s2 0: %q", k, got)
		}
		for _, c := range []string{"TYPE ", "PTTL ", "PEXPIRETIME "} {
			if a, b := do(rdb, c+k), do(rdb, c+k+"2"); a != b {
				t.Errorf("%s%s = %s, of its restored copy %s", c, k, a, b)
			}
		}
		digests := do(rdb, "DEBUG DIGEST-VALUE "+k+" "+k+"2 nosuchkey")
		d := strings.Fields(strings.Trim(digests, "[]"))
		if len(d) != 3 || d[0] != d[1] || len(d[0]) != 40 || d[2] != strings.Repeat("0", 40) {
			t.Errorf("DEBUG DIGEST-VALUE %s %s2 nosuchkey = %s", k, k, digests)
		}
		// BUSYKEY without REPLACE, then REPLACE with a TTL of its own.
		err = rdb.Restore(ctx, k+"2", 0, payload).Err()
		if err == nil || err.Error() != "BUSYKEY Target key name already exists." {
			t.Errorf("RESTORE %s2 again: %v", k, err)
		}
		if err := rdb.RestoreReplace(ctx, k+"2", 5000*time.Second, payload).Err(); err != nil {
			t.Errorf("RESTORE %s2 REPLACE: %v", k, err)
		}
		if got := do(rdb, "PTTL "+k+"2"); got != "5000000" || pttl == "5000000" {
			t.Errorf("PTTL %s2 after RESTORE ... 5000000 REPLACE = %s", k, got)
		}
	}
	// The restored states decide as the originals.
	run(t, rdb, []call{
		{"RL.FIXED fixed2 10 60000", "[1 10 8 0 60000]"},
		{"RL.LOG log2 10 60000", "[1 10 6 0 60000]"},
		{"GCRA native2 5 1 60", "[0 6 4 -1 120]"},
		{"RL.RELEASE lease2 id1", "1"},
		// ABSTTL: the expire time in Unix ms; one already past creates nothing, and with
		// REPLACE removes the old key.
		{"DEBUG CLOCK SET 1767225600000000", "OK"},
	})
	payload := rdb.Dump(ctx, "gcra").Val()
	restore := func(args ...any) string {
		v, err := rdb.Do(ctx, append([]any{"RESTORE"}, args...)...).Result()
		return format(v, err)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"abs", 1767225700000, payload, "ABSTTL"}, "OK"},
		{[]any{"past", 1767225500000, payload, "ABSTTL"}, "OK"},
		{[]any{"gcra", 1, payload, "REPLACE", "ABSTTL"}, "OK"},
		// Redis's order and texts: options, BUSYKEY, TTL, payload.
		{[]any{"abs", -1, payload}, "BUSYKEY Target key name already exists."},
		{[]any{"new", -1, payload}, "ERR Invalid TTL value, must be >= 0"},
		{[]any{"new", "x", payload}, "ERR value is not an integer or out of range"},
		{[]any{"new", 0, payload, "FOO"}, "ERR syntax error"},
		{[]any{"new", 0, payload, "IDLETIME"}, "ERR syntax error"},
		{[]any{"new", 0, payload, "IDLETIME", -1}, "ERR Invalid IDLETIME value, must be >= 0"},
		{[]any{"new", 0, payload, "FREQ", 256}, "ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{[]any{"new", 0, payload, "FREQ", 1, "IDLETIME", 1}, "ERR syntax error"},
		{[]any{"new", 0, "short"}, "ERR DUMP payload version or checksum are wrong"},
		{[]any{"new", 0, payload[:len(payload)-1] + "x"}, "ERR DUMP payload version or checksum are wrong"},
		{[]any{"new", 0, "x" + payload[1:]}, "ERR DUMP payload version or checksum are wrong"},
		{[]any{"new", 0, payload, "IDLETIME", 5, "REPLACE"}, "OK"},
		{[]any{"new"}, "ERR wrong number of arguments for 'restore' command"},
	} {
		if got := restore(c.args...); got != c.want {
			t.Errorf("RESTORE %q = %s, want %s", c.args[:min(len(c.args), 2)], got, c.want)
		}
	}
	run(t, rdb, []call{
		{"PEXPIRETIME abs", "1767225700000"},
		{"EXPIRETIME abs", "1767225700"},
		{"EXISTS past gcra", "0"},
		{"PEXPIRETIME nosuchkey", "-2"},
		{"EXPIRETIME nosuchkey", "-2"},
		{"DUMP nosuchkey", "(nil)"},
		{"DEBUG DIGEST-VALUE", "[]"},
	})
}
