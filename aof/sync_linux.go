package aof

import (
	"os"
	"syscall"
)

// datasync makes f's data durable: fdatasync, as Redis's redis_fsync on Linux, which
// skips the inode's times when the size did not change.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
