package httpdesc

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/policy"
)

// Names are the headers an answer tells the shown status in (see Answer): the
// limit, the remaining and the seconds until reset, each under its name and under
// X-RateLimit-*. Made once by NewNames, canonical: setting them canonicalizes nothing.
type Names struct{ keys [6]string }

// NewNames is Names of limit, remaining and reset, with X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset.
func NewNames(limit, remaining, reset string) Names {
	var n Names
	for i, k := range [6]string{limit, remaining, reset, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		n.keys[i] = http.CanonicalHeaderKey(k)
	}
	return n
}

// DefaultNames are RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (the IETF
// draft's, envoyproxy/ratelimit's defaults) and X-RateLimit-*.
var DefaultNames = NewNames("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")

// Shown is the index of the status the headers tell, as envoyproxy/ratelimit picks
// it: the last one over its limit, else the one with a rule nearest its limit (the
// first of equals); -1 when no status has a rule.
func Shown(sts []policy.Status) int {
	pick := -1
	least := uint32(math.MaxUint32)
	for i, st := range sts {
		switch {
		case st.Limit == nil:
		case st.Code == policy.CodeOverLimit:
			pick, least = i, 0
		case st.Remaining < least:
			pick, least = i, st.Remaining
		}
	}
	return pick
}

// Answer sets on h the headers of a decision of statuses sts, as /check answers and
// the middleware in policy mode: Names of the status Shown (none when no status has
// a rule) and, when refused, Retry-After: the wait until every descriptor over its
// limit admits again, spread (package spread: never early, a bounded jitter later,
// so that callers refused together do not return together), in whole seconds
// rounded up and at least 1. It returns that spread wait unrounded, 0 when not
// refused.
func (n Names) Answer(h http.Header, sts []policy.Status, refused bool) time.Duration {
	var retry time.Duration
	if refused {
		for _, st := range sts {
			if st.Code == policy.CodeOverLimit {
				d := st.RetryAfter
				if d == 0 { // a rule that tells only its reset
					d = st.ResetAfter
				}
				retry = max(retry, d)
			}
		}
		retry = spread.Wait(retry)
	}
	i := Shown(sts)
	if i < 0 && !refused {
		return 0
	}
	// The figures in one string, the header values in one array: two allocations.
	var buf [4 * 20]byte
	var ends [4]int
	b := buf[:0]
	if i >= 0 {
		st := sts[i]
		b = strconv.AppendUint(b, uint64(st.Limit.RequestsPerUnit), 10)
		ends[0] = len(b)
		b = strconv.AppendUint(b, uint64(st.Remaining), 10)
		ends[1] = len(b)
		b = strconv.AppendInt(b, ceilSeconds(st.ResetAfter), 10)
		ends[2] = len(b)
	}
	b = strconv.AppendInt(b, max(1, ceilSeconds(retry)), 10)
	ends[3] = len(b)
	s := string(b)
	vals := make([]string, 7)
	if i >= 0 {
		start := 0
		for j := range 3 {
			vals[j], vals[j+3] = s[start:ends[j]], s[start:ends[j]]
			start = ends[j]
		}
		for j, k := range n.keys {
			h[k] = vals[j : j+1 : j+1]
		}
	}
	if refused {
		vals[6] = s[ends[2]:ends[3]]
		h["Retry-After"] = vals[6:7:7]
	}
	return retry
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
