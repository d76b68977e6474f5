//go:build unix

package resp

import (
	"strconv"
	"syscall"
	"time"
)

// cpuInfo is INFO cpu: the process's CPU time, system and user, in seconds, as Redis's.
func cpuInfo() [][2]string {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	sec := func(tv syscall.Timeval) string {
		return strconv.FormatFloat(time.Duration(tv.Nano()).Seconds(), 'f', 6, 64)
	}
	return [][2]string{
		{"used_cpu_sys", sec(self.Stime)},
		{"used_cpu_user", sec(self.Utime)},
		{"used_cpu_sys_children", sec(children.Stime)},
		{"used_cpu_user_children", sec(children.Utime)},
	}
}
