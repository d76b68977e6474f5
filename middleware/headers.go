package middleware

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/spread"
)

// policyItem is d's RateLimit-Policy item: "name";q=quota[;w=seconds].
func policyItem(d Dimension) string {
	n, per := d.Limit.Quota()
	item := `"` + d.Name + `";q=` + strconv.Itoa(n)
	if per%time.Second == 0 {
		item += ";w=" + strconv.FormatInt(int64(per/time.Second), 10)
	}
	return item
}

// mostRestrictive is the answer with the least remaining; of equals, the one longest
// to reset.
func mostRestrictive(answers []decided) decided {
	best := answers[0]
	for _, a := range answers[1:] {
		if a.res.Remaining < best.res.Remaining || a.res.Remaining == best.res.Remaining && a.res.ResetAfter > best.res.ResetAfter {
			best = a
		}
	}
	return best
}

// setHeaders writes the informational headers: X-RateLimit-* of shown, and the IETF
// fields of every dimension that applies (RateLimit-Policy, RateLimit).
func setHeaders(h http.Header, policies []string, answers []decided, shown decided) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(shown.res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(shown.res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilDiv(shown.res.ResetAfter, time.Second), 10))
	h.Set("RateLimit-Policy", strings.Join(policies, ", "))
	var b strings.Builder
	for i, a := range answers {
		if i > 0 {
			b.WriteString(", ")
		}
		t := a.res.ResetAfter
		if !a.res.Allowed {
			t = max(time.Second, a.res.RetryAfter) // as Retry-After
		}
		b.WriteString(a.dim.item)
		b.WriteString(strconv.Itoa(a.res.Remaining))
		b.WriteString(";t=")
		b.WriteString(strconv.FormatInt(ceilDiv(t, time.Second), 10))
	}
	h.Set("RateLimit", b.String())
}

// informational are the headers setHeaders writes.
var informational = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

// clearInformational removes the headers setHeaders wrote, for a refusal by another
// limit: a response carries one limit's figures, never a mix.
func clearInformational(h http.Header) {
	for _, name := range informational {
		h.Del(name)
	}
}

// refuse writes the 429 for a wait of d: Retry-After in whole seconds, at least 1,
// rounded up (to the nearest second if nearest: d is an estimate), and the body. Both
// carry d spread (internal/spread: up to a tenth more, at most a second, never less),
// so that clients refused together do not all come back at the same instant.
func refuse(w http.ResponseWriter, code string, d time.Duration, nearest bool) {
	d = spread.Wait(d)
	secs := ceilDiv(d, time.Second)
	if nearest {
		secs = int64((d + time.Second/2) / time.Second)
	}
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, secs), 10))
	writeDenied(w, code, d)
}

// refuseClosed answers a request FallbackClosed refuses: a wait of a second, and no
// limit's figures, there being none to give.
func refuseClosed(w http.ResponseWriter) {
	clearInformational(w.Header())
	refuse(w, "rate_limited", time.Second, false)
}

// writeDenied writes the 429 and its body, with the error code ("rate_limited",
// "concurrency_limited") and retry rounded up to the ms.
func writeDenied(w http.ResponseWriter, code string, retry time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	body := append([]byte(`{"error":"`+code+`","retryAfterMs":`), strconv.FormatInt(ceilDiv(retry, time.Millisecond), 10)...)
	w.Write(append(body, '}'))
}

// ceilDiv is d in units, rounded up, without overflow for any d ≥ 0.
func ceilDiv(d, unit time.Duration) int64 {
	n := d / unit
	if d%unit > 0 {
		n++
	}
	return int64(n)
}
