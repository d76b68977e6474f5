//go:build !linux

package resp

import "syscall"

// unreadBytes is 0 where the kernel's count of unread bytes is not read: PUBLISH then
// waits only for requests a subscriber has read but not served.
func unreadBytes(syscall.RawConn) int { return 0 }

// receivedBytes is not known here.
func receivedBytes(syscall.RawConn) (uint64, bool) { return 0, false }
