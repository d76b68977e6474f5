//go:build !unix

package main

import "testing"

// raiseFileLimit skips: there is no RLIMIT_NOFILE to raise on this platform.
func raiseFileLimit(t *testing.T, want int) {
	t.Skipf("no RLIMIT_NOFILE here to raise toward %d open files", want)
}
