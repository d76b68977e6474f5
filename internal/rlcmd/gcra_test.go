package rlcmd

import (
	"math"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// native is the request ParseGCRA builds for max_burst mb, tokens_per_period n,
// period p (seconds), TOKENS c and emission interval t (µs).
func native(mb, n int64, p float64, c, t int64) algo.Request {
	return algo.Request{Kind: algo.KindRedisGCRA, Limit: mb, Rate: n, Period: p, Burst: mb + 1, Cost: c, Interval: t, Cell: true}
}

func TestParseGCRA(t *testing.T) {
	for _, c := range []struct {
		args string
		want algo.Request
	}{
		{"10 5 60", native(10, 5, 60, 1, 12_000_000)},
		{"5 1 60 TOKENS 3", native(5, 1, 60, 3, 60_000_000)},
		{"5 1 60 tokens 3", native(5, 1, 60, 3, 60_000_000)},
		{"0 1 1", native(0, 1, 1, 1, 1_000_000)},
		{"10 5 0.5", native(10, 5, 0.5, 1, 100_000)},
		{"1 10000 1", native(1, 10000, 1, 1, 100)},
		{"15 30 60", native(15, 30, 60, 1, 2_000_000)}, // redis-cell's README example
		{"3 7 3600.25", native(3, 7, 3600.25, 1, 514_321_429)},
		// T = (long long)(period·1e6 / tokens_per_period + 0.5), at least 1.
		{"0 3 1", native(0, 3, 1, 1, 333_333)},
		{"0 6 1", native(0, 6, 1, 1, 166_667)},
		{"0 2 0.3", native(0, 2, 0.3, 1, 150_000)},          // 150000.5 rounds up
		{"0 2000000 1", native(0, 2_000_000, 1, 1, 1)},      // 0.5 rounds up to 1
		{"0 3000000 1", native(0, 3_000_000, 1, 1, 1)},      // 0.33: 0, raised to 1
		{"0 1 1e-7", native(0, 1, 1e-7, 1, 1)},              // 0.1 µs
		{"0 44 2.09583", native(0, 44, 2.09583, 1, 47_632)}, // exactly 47633 in decimals; 47632.99999999999 in doubles, as Redis computes
		{"0 178 4.0563530", native(0, 178, 4.056353, 1, 22_788)},
		// Periods spelled as fast_float reads them.
		{"0 1 1e3", native(0, 1, 1000, 1, 1_000_000_000)},
		{"0 1 +1.5", native(0, 1, 1.5, 1, 1_500_000)},
		{"0 1 .5", native(0, 1, 0.5, 1, 500_000)},
		{"0 1 007", native(0, 1, 7, 1, 7_000_000)},
		// No 100-year bound: Redis's own checks only.
		{"99 1 31536000", native(99, 1, 31_536_000, 1, year)},
		{"100 1 31536000", native(100, 1, 31_536_000, 1, year)},
		{"4000000000 1 1", native(4_000_000_000, 1, 1, 1, 1_000_000)},
		{"10 5 999999999999.99", native(10, 5, 999999999999.99, 1, 199999999999998016)},
		{"9223372036854775806 1000000 1", native(math.MaxInt64-1, 1_000_000, 1, 1, 1)},
		// Any TOKENS Redis takes: one that can never fit is answered, not refused.
		{"0 1000000 1 TOKENS 9223372036854775807", native(0, 1_000_000, 1, math.MaxInt64, 1)},
	} {
		got, err := ParseGCRA(split(c.args))
		if err != nil || got != c.want {
			t.Errorf("ParseGCRA(%q) = %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
}

func TestParseGCRAErrors(t *testing.T) {
	// Redis's texts: src/gcra.c and the helpers of src/object.c it calls.
	const (
		arity    = "ERR wrong number of arguments for 'gcra' command"
		positive = "ERR value is out of range, must be positive"
		notInt   = "ERR value is not an integer or out of range"
		atLeast1 = "ERR value is out of range, value must between 1 and 9223372036854775807"
		float    = "ERR value is not a valid float"
		period   = "ERR period must be > 0 and < 1e12"
		missing  = "ERR Missing TOKENS value"
		syntax   = "ERR syntax error"
		tokOvf   = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"
		burstOvf = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"
	)
	for _, c := range []struct {
		args []string
		want string
	}{
		// Redis's tests/unit/gcra.tcl, "argument validation" and "overflow".
		{nil, arity},
		{[]string{"10"}, arity},
		{[]string{"10", "5"}, arity},
		{[]string{"-1", "5", "10"}, positive},
		{[]string{"notanumber", "5", "10"}, positive},
		{[]string{"10", "0", "10"}, atLeast1},
		{[]string{"10", "-1", "10"}, atLeast1},
		{[]string{"10", "notanumber", "10"}, notInt},
		{[]string{"10", "5", "0"}, period},
		{[]string{"10", "5", "-1"}, period},
		{[]string{"10", "5", "notanumber"}, float},
		{[]string{"10", "5", "10", "TOKENS"}, missing},
		{[]string{"10", "5", "10", "TOKENS", "0"}, atLeast1},
		{[]string{"10", "5", "10", "TOKENS", "-1"}, atLeast1},
		{[]string{"10", "5", "10", "TOKENS", "notanumber"}, notInt},
		{[]string{"1", "1", "86400", "TOKENS", "200000000"}, tokOvf},
		{[]string{"200000000", "1", "86400"}, burstOvf},
		{[]string{"1", "1", "2147483647", "TOKENS", "2147483647"}, tokOvf},

		// Arity and options as gcraCommand checks them: more than 7 words first, then
		// the keyword before its value.
		{[]string{"10", "5", "10", "TOKENS", "1", "x"}, arity},
		{[]string{"x", "5", "10", "TOKENS", "1", "x"}, arity},
		{[]string{"10", "5", "10", "COST"}, syntax},
		{[]string{"10", "5", "10", "COST", "1"}, syntax},
		{[]string{"10", "5", "10", "1"}, syntax},
		{[]string{"-1", "0", "0", "FOO"}, positive}, // the first bad argument is named

		// Integers as string2ll reads them.
		{[]string{"+1", "5", "10"}, positive},
		{[]string{"01", "5", "10"}, positive},
		{[]string{"-0", "5", "10"}, positive},
		{[]string{" 1", "5", "10"}, positive},
		{[]string{"", "5", "10"}, positive},
		{[]string{"9223372036854775808", "5", "10"}, positive},
		{[]string{"10", "9223372036854775808", "10"}, notInt},
		{[]string{"10", "1.0", "10"}, notInt},
		{[]string{"10", "-9223372036854775808", "10"}, atLeast1},
		{[]string{"10", "5", "10", "TOKENS", "1e3"}, notInt},

		// Periods as string2d reads them, then Redis's range.
		{[]string{"10", "5", "1e12"}, period},
		{[]string{"10", "5", "inf"}, period},
		{[]string{"10", "5", "-Infinity"}, period},
		{[]string{"10", "5", "-0"}, period},
		{[]string{"10", "5", "0x0p-3"}, float}, // fast_float reads no hexadecimal
		{[]string{"10", "5", "0x10"}, float},
		{[]string{"10", "5", "0x1p3"}, float},
		{[]string{"10", "5", "nan"}, float},
		{[]string{"10", "5", " 1"}, float},
		{[]string{"10", "5", "1 "}, float},
		{[]string{"10", "5", ""}, float},
		{[]string{"10", "5", "1e400"}, float},  // overflows to inf: ERANGE
		{[]string{"10", "5", "1e-400"}, float}, // underflows to 0: ERANGE
		{[]string{"10", "5", "1_000"}, float},
		{[]string{"10", "5", "1,5"}, float},

		// Redis's overflow checks of int64 µs.
		{[]string{"9223372036854775807", "1", "1"}, burstOvf},
		{[]string{"200000000", "1", "86400"}, burstOvf},
		{[]string{"1", "1", "86400", "TOKENS", "200000000"}, tokOvf},
		{[]string{"1", "1", "2147483647", "TOKENS", "2147483647"}, tokOvf},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		got, err := ParseGCRA(args)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseGCRA(%q) = %+v, %v; want error %q", c.args, got, err, c.want)
		}
	}
}

// TestParseRedisDouble checks the period parser against what Redis's string2d
// answered for each spelling (Redis 8: fast_float, no hexadecimal; the value printed %.17g).
func TestParseRedisDouble(t *testing.T) {
	for _, c := range []struct {
		s    string
		ok   bool
		want float64
	}{
		{"1", true, 1}, {"0.5", true, 0.5}, {"3600.25", true, 3600.25},
		{"1e3", true, 1000}, {"1E3", true, 1000}, {"+1", true, 1}, {".5", true, 0.5}, {"5.", true, 5},
		{"00", true, 0}, {"007", true, 7}, {"0.000", true, 0}, {"-0", true, 0},
		{"0x10", false, 0}, {"0X10", false, 0}, {"-0x10", false, 0}, {"0x1.8", false, 0},
		{"0x1.8p1", false, 0}, {"0x1e5", false, 0}, {"0x1p3", false, 0}, // fast_float: no hexadecimal
		{"inf", true, math.Inf(1)}, {"INF", true, math.Inf(1)}, {"Infinity", true, math.Inf(1)},
		{"+inf", true, math.Inf(1)}, {"-inf", true, math.Inf(-1)},
		{"5e-324", true, 5e-324}, {"1e-310", true, 1e-310}, // subnormal: ERANGE, but not 0
		{"999999999999.99", true, 999999999999.99},
		{"0x", false, 0}, {"0xp1", false, 0}, {"0x1p", false, 0}, {"infinit", false, 0},
		{"nan", false, 0}, {"NaN", false, 0}, {"-nan", false, 0},
		{" 1", false, 0}, {"1 ", false, 0}, {"", false, 0}, {".", false, 0},
		{"1e", false, 0}, {"1e+", false, 0}, {"1,5", false, 0},
		{"1e-400", false, 0}, {"2e-324", false, 0}, {"0x1p-2000", false, 0}, // underflow to 0
		{"1e400", false, 0}, {"0x1p2000", false, 0}, // overflow
		{"1_000", false, 0}, {"0x1_0", false, 0},
	} {
		got, ok := parseRedisDouble([]byte(c.s))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("parseRedisDouble(%q) = %v, %v; want %v, %v", c.s, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseGCRA checks that any arguments parse without panic into either an error
// line starting "ERR " or a request GCRA decides within the integer state's bounds.
// Its seed corpus runs in plain go test.
func FuzzParseGCRA(f *testing.F) {
	for _, seed := range []string{"10 5 60", "0 1 1e-7 TOKENS 3", "5 1 1e1 tokens 7", "1 1 inf",
		"9223372036854775807 1000000 1", "1 1 86400 TOKENS 200000000", "1 2", "1 2 3 TOKENS", "-0 1 1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		r, err := ParseGCRA(split(args))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ERR ") {
				t.Fatalf("error %q does not start with ERR", err)
			}
			return
		}
		if r.Interval < 1 || r.Burst < 1 || r.Cost < 1 || r.Burst > math.MaxInt64/r.Interval || r.Cost > math.MaxInt64/r.Interval || !r.Cell {
			t.Fatalf("ParseGCRA(%q) = %+v: out of bounds", args, r)
		}
		tat := int64(0)
		for _, now := range []int64{base, base + 1000, base + 2000} {
			next, d, err := algo.RedisGCRA(tat, r, now)
			switch {
			case err != nil:
				if next != tat {
					t.Fatalf("ParseGCRA(%q) at %d: the overflow changed the state", args, now)
				}
			case d.Limit != r.Burst || d.Write && (next <= now-now%1000 || d.FreshAt < now):
				t.Fatalf("ParseGCRA(%q) at %d: tat %d, %+v", args, now, next, d)
			}
			tat = next
		}
	})
}
