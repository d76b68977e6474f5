// Package poll is the tests' one way to wait for what another goroutine or process
// does: a condition polled until it holds, the test failing after a bound. It
// imports nothing of the module's, so that every package's tests can use it,
// package resp's included (package testenv imports resp).
//
// The bound only ends a hung test: a condition that holds returns at once, so a
// generous bound costs nothing on a quiet machine and spares a false failure on a
// loaded one.
package poll

import (
	"testing"
	"time"
)

// Poll intervals: the first try is immediate, then the interval doubles from
// minWait to maxWait, so an in-process effect (the expiry ticker, a replica's
// apply) is seen within a millisecond or two, and a process's start or a Sentinel's
// failover is timed to within 10 ms without a busy loop.
const (
	minWait = time.Millisecond
	maxWait = 10 * time.Millisecond
)

// Until calls cond until it holds and returns how long that took, or fails tb
// ("no <what> within <within>") once within has passed.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	took, ok := wait(within, cond)
	if !ok {
		tb.Fatalf("no %s within %v", what, within)
	}
	return took
}

// UntilOK calls ready until it returns nil and returns how long that took, or fails
// tb with ready's last error once within has passed.
func UntilOK(tb testing.TB, within time.Duration, what string, ready func() error) time.Duration {
	tb.Helper()
	var err error
	took, ok := wait(within, func() bool {
		err = ready()
		return err == nil
	})
	if !ok {
		tb.Fatalf("no %s within %v: %v", what, within, err)
	}
	return took
}

// wait calls cond until it holds (true) or within has passed (false).
func wait(within time.Duration, cond func() bool) (time.Duration, bool) {
	begin := time.Now()
	for pause := minWait; ; pause = min(2*pause, maxWait) {
		if cond() {
			return time.Since(begin), true
		}
		if time.Since(begin) > within {
			return time.Since(begin), false
		}
		time.Sleep(pause)
	}
}
