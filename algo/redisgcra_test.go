package algo

import (
	"errors"
	"math"
	"testing"
)

// gcraKey is a key of Redis's GCRA: its tat (0 when fresh) and when it goes; the
// store forgets it then, and so does call.
type gcraKey struct {
	tat, freshAt int64
}

// call decides one GCRA call with these arguments at now, and answers its reply.
func (k *gcraKey) call(t *testing.T, args string, now int64) [5]int64 {
	t.Helper()
	r, err := parseNative(args)
	if err != nil {
		t.Fatal(err)
	}
	if k.freshAt <= now {
		*k = gcraKey{}
	}
	tat, d, err := RedisGCRA(k.tat, r, now)
	if err != nil {
		t.Fatalf("GCRA %s at %d: %v", args, now, err)
	}
	if !d.Write && tat != k.tat {
		t.Fatalf("GCRA %s at %d: a limited call changed the state", args, now)
	}
	if d.Write {
		k.tat, k.freshAt = tat, d.FreshAt
	}
	var limited int64
	if !d.Allowed {
		limited = 1
	}
	// Redis's seconds: ceil of the float64 quotient, as C computes it; -1 stays.
	retry := int64(-1)
	if d.RetryAfter >= 0 {
		retry = int64(math.Ceil(float64(d.RetryAfter) / 1e6))
	}
	return [5]int64{limited, d.Limit, d.Remaining, retry, int64(math.Ceil(float64(d.ResetAfter) / 1e6))}
}

// TestRedisGCRATcl: the cases of Redis's tests/unit/gcra.tcl, with the numbers Redis's
// gcraCommand computes for them.
func TestRedisGCRATcl(t *testing.T) {
	const now = 1_750_000_000_123_456
	var k gcraKey
	for i := range 6 { // requests within burst
		if got := k.call(t, "5 1 60", now); got != [5]int64{0, 6, int64(5 - i), -1, int64(60 * (i + 1))} {
			t.Fatalf("call %d: %v", i, got)
		}
	}
	if got := k.call(t, "5 1 60", now); got != [5]int64{1, 6, 0, 60, 360} {
		t.Fatalf("7th call: %v", got)
	}
	k = gcraKey{}
	if got := k.call(t, "5 1 60 TOKENS 3", now); got != [5]int64{0, 6, 3, -1, 180} { // multiple tokens
		t.Fatalf("TOKENS 3: %v", got)
	}
	k = gcraKey{}
	k.call(t, "5 1 60", now)
	if got := k.call(t, "5 1 60 TOKENS 4", now); got[4] != 300 { // full_burst_after >= 299
		t.Fatalf("full burst after: %v", got)
	}
	k = gcraKey{} // rate recovery: 2 pass, the 3rd not, one more 1.1 s on
	k.call(t, "1 1 1", now)
	k.call(t, "1 1 1", now)
	if got := k.call(t, "1 1 1", now); got != [5]int64{1, 2, 0, 1, 2} {
		t.Fatalf("3rd of 1 1 1: %v", got)
	}
	if got := k.call(t, "1 1 1", now+1_100_000); got[0] != 0 {
		t.Fatalf("after recovery: %v", got)
	}
	k = gcraKey{} // max_burst 0
	if got := k.call(t, "0 1 1", now); got != [5]int64{0, 1, 0, -1, 1} {
		t.Fatalf("max_burst 0: %v", got)
	}
	if got := k.call(t, "0 1 1", now); got != [5]int64{1, 1, 0, 1, 1} {
		t.Fatalf("max_burst 0, 2nd: %v", got)
	}
	for args, want := range map[string]error{ // overflow
		"1 1 86400 TOKENS 200000000":       ErrCostOverflow,
		"200000000 1 86400":                ErrBurstOverflow,
		"1 1 2147483647 TOKENS 2147483647": ErrCostOverflow,
		"4000000000 1 1":                   nil, // past rlserver's 100 years, as Redis takes it
	} {
		if _, err := parseNative(args); !errors.Is(err, want) {
			t.Errorf("GCRA k %s: %v, want %v", args, err, want)
		}
	}
}

// TestRedisGCRAClock: Redis decides on the command's time in whole ms and expires the
// key at its tat rounded up to the ms.
func TestRedisGCRAClock(t *testing.T) {
	const ms0 = 1_750_000_000_000_000
	var k gcraKey
	// PXAT ceil: T = 100 µs, the tat 100 µs into the ms; the key lives to the next ms.
	if got := k.call(t, "1 10000 1", ms0+300); got != [5]int64{0, 2, 1, -1, 1} {
		t.Fatalf("first: %v", got)
	}
	if k.tat != ms0+100 || k.freshAt != ms0+1000 {
		t.Fatalf("tat %d, fresh at %d; want ms0+100 and ms0+1000", k.tat-ms0, k.freshAt-ms0)
	}
	// 200 calls of GCRA k 0 10000 1, 65 µs apart (13 ms): one a ms passes, as in Redis.
	k = gcraKey{}
	passed := 0
	for i := range 200 {
		if got := k.call(t, "0 10000 1", ms0+int64(i)*65); got[0] == 0 {
			passed++
		}
	}
	if passed != 13 {
		t.Errorf("%d of 200 calls passed in 13 ms, want 13", passed)
	}
	// A tat near 2^63 µs: Redis's overflow check of the new tat, and nothing changes.
	r, _ := parseNative("0 1 1")
	if tat, _, err := RedisGCRA(math.MaxInt64-10, r, ms0); !errors.Is(err, ErrCostOverflow) || tat != math.MaxInt64-10 {
		t.Errorf("RedisGCRA near 2^63: %d, %v", tat, err)
	}
	if got := GCRAExpireAt(math.MaxInt64); got != math.MaxInt64/1000*1000 {
		t.Errorf("GCRAExpireAt(MaxInt64) = %d", got)
	}
}
