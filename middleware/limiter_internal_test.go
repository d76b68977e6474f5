package middleware

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFailureBeforeBack: a failed call begun before the limiter was logged back is
// counted but not logged (it met the outage that ended); one begun after is.
func TestFailureBeforeBack(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1_750_000_000, 0)
	l := &Limiter{limiterState: &limiterState{log: slog.New(slog.NewTextHandler(&logs, nil)), logInterval: time.Millisecond, now: func() time.Time { return now }}}
	r := httptest.NewRequest("GET", "/", nil)
	down := errors.New("connection refused")

	l.fail(r, now, down)
	now = now.Add(time.Second)
	l.answered(r, false)
	l.fail(r, now.Add(-time.Millisecond), down) // in flight when the limiter came back
	now = now.Add(time.Second)
	l.answered(r, false)
	if got := strings.Count(logs.String(), "rate limiter failed"); got != 1 {
		t.Fatalf("a failure begun before the back line: %d failure lines, want 1:\n%s", got, &logs)
	}
	if got := strings.Count(logs.String(), "rate limiter back"); got != 1 {
		t.Fatalf("%d back lines, want 1:\n%s", got, &logs)
	}
	l.fail(r, now, down) // begun after
	if got, total := strings.Count(logs.String(), "rate limiter failed"), l.failed.Load(); got != 2 || total != 3 {
		t.Fatalf("a failure begun after the back line: %d failure lines and %d failures, want 2 and 3:\n%s", got, total, &logs)
	}
}
