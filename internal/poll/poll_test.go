package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps Fatalf's message instead of ending the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// TestUntil: a condition that holds on the third try returns without failing; one
// that never holds fails, naming what it waited for, once the bound has passed.
func TestUntil(t *testing.T) {
	tries := 0
	r := &recorder{TB: t}
	Until(r, time.Minute, "third try", func() bool { tries++; return tries == 3 })
	if r.msg != "" || tries != 3 {
		t.Fatalf("Until: %d tries, failed %q; want 3 tries and no failure", tries, r.msg)
	}
	took := Until(r, 30*time.Millisecond, "green light", func() bool { return false })
	if r.msg != "no green light within 30ms" || took < 30*time.Millisecond {
		t.Fatalf("Until on a false condition: %q after %v; want %q after 30ms", r.msg, took, "no green light within 30ms")
	}
}

// TestUntilOK: a check that never passes fails with its last error; one that
// passes does not fail.
func TestUntilOK(t *testing.T) {
	r := &recorder{TB: t}
	UntilOK(r, time.Minute, "ready", func() error { return nil })
	if r.msg != "" {
		t.Fatalf("UntilOK on a passing check failed: %q", r.msg)
	}
	UntilOK(r, 20*time.Millisecond, "ready", func() error { return errors.New("refused") })
	if want := "no ready within 20ms: refused"; r.msg != want {
		t.Fatalf("UntilOK failed with %q; want %q", r.msg, want)
	}
}
