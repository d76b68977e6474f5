//go:build unix

package cluster_test

import (
	"os"
	"syscall"
)

// freeze stops p (SIGSTOP) until thaw, so that what it has done can be looked at
// while it does nothing more.
func freeze(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// thaw lets a frozen p go on (SIGCONT).
func thaw(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
