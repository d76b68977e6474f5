//go:build unix

package main

import (
	"syscall"
	"testing"
)

// raiseFileLimit lifts the soft limit on open files toward want (the server, started
// after, inherits it), and skips when the hard limit is too low.
func raiseFileLimit(t *testing.T, want int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if uint64(lim.Cur) < uint64(want) {
		setLimit(&lim.Cur, min(uint64(want), uint64(lim.Max)))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if uint64(lim.Cur) < uint64(want) {
		t.Skipf("open files limited to %d, the soak needs %d", lim.Cur, want)
	}
}

// setLimit sets an rlimit field, uint64 on most systems and int64 on FreeBSD.
func setLimit[T int64 | uint64](field *T, v uint64) { *field = T(v) }
