//go:build !unix

package client_test

import "testing"

// pauseProcess skips: there is no SIGSTOP to pause a process with on this platform.
func pauseProcess(t *testing.T, pid int) (resume func()) {
	t.Skipf("no SIGSTOP here to pause process %d", pid)
	return nil
}
