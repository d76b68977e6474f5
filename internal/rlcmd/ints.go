package rlcmd

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// ParseInt parses b as Redis's string2ll does: an optional '-', then decimal digits
// without a leading zero ("0" alone excepted), within int64; no '+', no spaces.
func ParseInt(b []byte) (int64, bool) {
	digits := bytes.TrimPrefix(b, []byte("-"))
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || digits[0] == '0' && len(b) > 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// parseRedisDouble parses b as Redis 8's string2d does, with fast_float (built with a
// leading '+' allowed) over the whole argument: decimal digits with an optional point
// and exponent, or inf, infinity or nan in any case, signed or not; no hexadecimal
// ("0x10", "0x1p3"), no white space, nothing left over. Refused as string2d refuses
// them: NaN, and a range error (ERANGE) to ±Inf or to 0, "1e400" or "1e-400". Go's
// ParseFloat reads the same decimal syntax but for hexadecimal and digit separators
// ("1_000"), refused here first, and reports underflow to 0 as no error, checked here.
func parseRedisDouble(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || strings.ContainsAny(s, "xX_") {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	mantissa := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa = s[:i]
	}
	switch {
	case err != nil, math.IsNaN(v): // overflow is an error here too
		return 0, false
	case v == 0 && strings.ContainsAny(mantissa, "123456789"):
		return 0, false // a nonzero number that underflowed: ERANGE with 0
	}
	return v, true
}

// ParseIntIn parses b as Redis parses an integer argument and reports whether it is
// one within [lo, hi]. hi must be below 1e18, so 18 digits never overflow.
func ParseIntIn(b []byte, lo, hi int64) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	// No digit, a leading zero ("0" alone excepted) or more digits than any bound has.
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, v >= lo && v <= hi
}
