package resp

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

func TestLeaseErrors(t *testing.T) {
	ts := startDebugServer(t)
	long := strings.Repeat("i", 129)
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		run(t, rdb, []call{
			{"FLUSHALL", "OK"},
			{"RL.TOKEN w 10 1000", "[1 10 9 0 100]"},
			{"RL.ACQUIRE l 1 60000 ID a", "[1 1 0 0 a]"},
			{"RL.ACQUIRE k 1", "ERR wrong number of arguments for 'rl.acquire' command"},
			{"RL.ACQUIRE k 0 1000", "ERR limit must be an integer between 1 and 100000"},
			{"RL.ACQUIRE k 100001 1000", "ERR limit must be an integer between 1 and 100000"},
			{"RL.ACQUIRE k x 1000", "ERR limit must be an integer between 1 and 100000"},
			{"RL.ACQUIRE k 1 0", "ERR lease_ms must be an integer between 1 and 31536000000"},
			{"RL.ACQUIRE k 1 31536000001", "ERR lease_ms must be an integer between 1 and 31536000000"},
			{"RL.ACQUIRE k 1 1000 ID", "ERR syntax error"},
			{"RL.ACQUIRE k 1 1000 NOPE x", "ERR syntax error"},
			{"RL.ACQUIRE k 1 1000 PEEK", "ERR syntax error"},
			{"RL.ACQUIRE k 1 1000 ID " + long, "ERR lease id must be 1 to 128 bytes"},
			{"RL.RELEASE k", "ERR wrong number of arguments for 'rl.release' command"},
			{"RL.RELEASE k a b", "ERR wrong number of arguments for 'rl.release' command"},
			{"RL.RENEW k a", "ERR wrong number of arguments for 'rl.renew' command"},
			{"RL.RENEW k a 1000 x", "ERR wrong number of arguments for 'rl.renew' command"},
			{"RL.RENEW k a 0", "ERR lease_ms must be an integer between 1 and 31536000000"},
			{"RL.RENEW k a x", "ERR lease_ms must be an integer between 1 and 31536000000"},
			// Another kind's key, and a lease key under another kind.
			{"RL.ACQUIRE w 1 1000", wrongType},
			{"RL.RELEASE w a", wrongType},
			{"RL.RENEW w a 1000", wrongType},
			{"RL.FIXED l 1 1000", wrongType},
			{"RL.LOG l 1 1000", wrongType},
			{"CL.THROTTLE l 1 1 1", wrongType},
			{"RL.ALL FIXED x 1 1000 TOKEN l 1 1000", wrongType},
			// Absent keys.
			{"RL.RELEASE k a", "0"},
			{"RL.RENEW k a 1000", "0"},
			// Nothing above changed anything.
			{"EXISTS k x", "0"},
			{"DBSIZE", "2"},
			{"TYPE l", "rl.lease"},
			{"PTTL l", "60000"},
			{"RL.ACQUIRE l 1 60000 ID b", "[0 1 0 60000 (nil)]"},
		})
		ctx := context.Background()
		if err := rdb.Do(ctx, "RL.ACQUIRE", "k", 1, 1000, "ID", "").Err(); err == nil ||
			err.Error() != "ERR lease id must be 1 to 128 bytes" {
			t.Errorf("an empty ID: %v", err)
		}
	}
}

// TestLeaseLifecycle takes, retries, renews and releases leases on the debug clock,
// and leaves one never released: it is gone at its deadline, and the key with it.
func TestLeaseLifecycle(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.ACQUIRE jobs 2 10000 ID a", "[1 2 1 0 a]"},
		{"RL.ACQUIRE jobs 2 20000 ID b", "[1 2 0 0 b]"},
		// Full: the earliest lease (a) ends in 10 s.
		{"RL.ACQUIRE jobs 2 5000 ID c", "[0 2 0 10000 (nil)]"},
		{"TYPE jobs", "rl.lease"},
		{"PTTL jobs", "20000"},
		// A retry with a's id extends a, taking no second place.
		{"RL.ACQUIRE jobs 2 12000 ID a", "[1 2 0 0 a]"},
		{"DEBUG CLOCK ADVANCE 11999000", "OK"},
		{"RL.ACQUIRE jobs 2 5000 ID c", "[0 2 0 1 (nil)]"},
		{"DEBUG CLOCK ADVANCE 1000", "OK"},
		// a ended at its deadline: not revived, not released, and its place is free.
		{"RL.RENEW jobs a 10000", "0"},
		{"RL.RELEASE jobs a", "0"},
		{"RL.ACQUIRE jobs 2 5000 ID c", "[1 2 0 0 c]"},
		{"PTTL jobs", "8000"},
		{"RL.RENEW jobs b 30000", "1"},
		{"PTTL jobs", "30000"},
		{"RL.RELEASE jobs b", "1"},
		{"RL.RELEASE jobs b", "0"},
		{"PTTL jobs", "5000"},
	})
	// c is never released, as by a process that crashed: it ends at its deadline,
	// and the key goes with it, without any request touching it.
	run(t, rdb, []call{
		{"DEBUG CLOCK ADVANCE 4999000", "OK"},
		{"EXISTS jobs", "1"},
		{"DEBUG CLOCK ADVANCE 1000", "OK"},
	})
	poll.Until(t, 10*time.Second, "the ticker to expire the last lease", func() bool { return ts.store.Stats().Keys == 0 })
	run(t, rdb, []call{
		{"EXISTS jobs", "0"},
		{"DBSIZE", "0"},
		{"PTTL jobs", "-2"},
		{"RL.RELEASE jobs c", "0"},
		// The key also goes when its last lease is released.
		{"RL.ACQUIRE lock 1 60000 ID z", "[1 1 0 0 z]"},
		{"DBSIZE", "1"},
		{"RL.RELEASE lock z", "1"},
		{"EXISTS lock", "0"},
		{"DBSIZE", "0"},
	})
}

// TestLeaseGeneratedID: without ID the server makes one, 16 lower-case hex digits,
// and another for each lease.
func TestLeaseGeneratedID(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for i := range 3 {
		v, err := rdb.Do(ctx, "RL.ACQUIRE", "gen", 3, 60000).Slice()
		if err != nil || len(v) != 5 {
			t.Fatalf("acquire %d: %v, %v", i, v, err)
		}
		id, _ := v[4].(string)
		if !hex16.MatchString(id) || seen[id] || v[2].(int64) != int64(2-i) {
			t.Fatalf("acquire %d: %v; want a new id of 16 hex digits and %d remaining", i, v, 2-i)
		}
		seen[id] = true
		if n, err := rdb.Do(ctx, "RL.RENEW", "gen", id, 1000).Int(); n != 1 || err != nil {
			t.Fatalf("renew %s: %d, %v", id, n, err)
		}
	}
}

// TestLeaseScanAndStats: SCAN TYPE rl.lease finds lease keys; RL.ACQUIRE counts in
// the lease kind's allowed and limited, in INFO and the metrics.
func TestLeaseScanAndStats(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	for _, line := range []string{"RL.ACQUIRE l1 1 1000 ID a", "RL.ACQUIRE l1 1 1000 ID b", "RL.ACQUIRE l2 5 1000 ID a",
		"RL.TOKEN t 1 1000"} {
		do(rdb, line)
	}
	keys, _, err := rdb.ScanType(ctx, 0, "*", 100, "rl.lease").Result()
	if err != nil || strings.Join(slices.Sorted(slices.Values(keys)), ",") != "l1,l2" {
		t.Errorf("SCAN TYPE rl.lease: %v, %v; want l1, l2", keys, err)
	}
	info := do(rdb, "INFO stats")
	for _, want := range []string{"rl_acquire_allowed:2\r\n", "rl_acquire_limited:1\r\n", "rl_token_allowed:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	text := scrape(t, ts)
	for _, want := range []string{
		`rlserver_requests_total{command="rl.acquire",result="allowed"} 2`,
		`rlserver_requests_total{command="rl.acquire",result="limited"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestLeaseNullReply: a lease not acquired answers a null id, RESP2's null bulk
// string and RESP3's null, byte for byte.
func TestLeaseNullReply(t *testing.T) {
	ts := startDebugServer(t)
	r := ts.raw(t)
	r.send("*6\r\n$10\r\nRL.ACQUIRE\r\n$1\r\nk\r\n$1\r\n1\r\n$5\r\n60000\r\n$2\r\nID\r\n$1\r\na\r\n")
	r.expect("*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n$1\r\na\r\n")
	r.send("*4\r\n$10\r\nRL.ACQUIRE\r\n$1\r\nk\r\n$1\r\n1\r\n$5\r\n60000\r\n")
	r.expect("*5\r\n:0\r\n:1\r\n:0\r\n:60000\r\n$-1\r\n")
	r.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	r.send("*4\r\n$10\r\nRL.ACQUIRE\r\n$1\r\nk\r\n$1\r\n1\r\n$5\r\n60000\r\n*1\r\n$4\r\nPING\r\n")
	var got []byte
	buf := make([]byte, 4096)
	for !strings.HasSuffix(string(got), "+PONG\r\n") {
		n, err := r.conn.Read(buf)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if want := "*5\r\n:0\r\n:1\r\n:0\r\n:60000\r\n_\r\n+PONG\r\n"; !strings.HasSuffix(string(got), want) {
		t.Fatalf("RESP3 reply ends %q, want %q", got[max(0, len(got)-len(want)):], want)
	}
}

// TestLeaseLimitLowered: called with a limit below its live leases, RL.ACQUIRE waits
// for as many to end as must, so that waiting retry_after_ms then succeeds.
func TestLeaseLimitLowered(t *testing.T) {
	ts := startDebugServer(t)
	run(t, ts.client(t, 3), []call{
		{"RL.ACQUIRE k 3 10000 ID a", "[1 3 2 0 a]"},
		{"RL.ACQUIRE k 3 20000 ID b", "[1 3 1 0 b]"},
		{"RL.ACQUIRE k 3 30000 ID c", "[1 3 0 0 c]"},
		{"RL.ACQUIRE k 2 5000 ID d", "[0 2 0 20000 (nil)]"},
		{"DEBUG CLOCK ADVANCE 19999000", "OK"},
		{"RL.ACQUIRE k 2 5000 ID d", "[0 2 0 1 (nil)]"},
		{"DEBUG CLOCK ADVANCE 1000", "OK"},
		{"RL.ACQUIRE k 2 5000 ID d", "[1 2 0 0 d]"},
	})
}
