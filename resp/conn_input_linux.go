package resp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unreadBytes is how many received bytes the kernel holds for raw, unread (SIOCINQ).
func unreadBytes(raw syscall.RawConn) int {
	if raw == nil {
		return 0
	}
	n := 0
	raw.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return n
}

// receivedBytes is how many bytes raw's TCP connection received since it opened
// (TCP_INFO's tcpi_bytes_received, Linux 4.1 on), read or not.
func receivedBytes(raw syscall.RawConn) (n uint64, ok bool) {
	if raw == nil {
		return 0, false
	}
	raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		n, ok = info.Bytes_received, err == nil && info.Bytes_received > 0
	})
	return n, ok
}
