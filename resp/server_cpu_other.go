//go:build !unix

package resp

// cpuInfo is INFO cpu where the process's CPU time is not read (no getrusage): zeros.
func cpuInfo() [][2]string {
	return [][2]string{
		{"used_cpu_sys", "0.000000"},
		{"used_cpu_user", "0.000000"},
		{"used_cpu_sys_children", "0.000000"},
		{"used_cpu_user_children", "0.000000"},
	}
}
