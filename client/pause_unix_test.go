//go:build unix

package client_test

import (
	"syscall"
	"testing"
)

// pauseProcess stops process pid (SIGSTOP) and returns what resumes it (SIGCONT).
func pauseProcess(t *testing.T, pid int) (resume func()) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return func() { syscall.Kill(pid, syscall.SIGCONT) }
}
