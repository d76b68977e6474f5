package resp

import (
	"fmt"
	"strconv"
	"strings"
)

// memoryUnits are Redis's memory suffixes: k, m, g are powers of 1000, kb, mb, gb
// powers of 1024 (redis.conf's "1k => 1000 bytes, 1kb => 1024 bytes").
var memoryUnits = []struct {
	suffix string
	scale  int64
}{
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1},
}

// ParseMemory reads a byte count as redis.conf writes it: "1073741824", "100mb",
// "1gb", "500k", in any case. As Redis's memtoull, the count is decimal digits
// only: no sign, space or exponent.
func ParseMemory(s string) (int64, error) {
	num, scale := strings.ToLower(s), int64(1)
	for _, u := range memoryUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, scale = strings.TrimSuffix(num, u.suffix), u.scale
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num == "" || num[0] < '0' || num[0] > '9' || n > (1<<62)/scale {
		return 0, fmt.Errorf("memory size must be a non-negative byte count with an optional k, kb, m, mb, g or gb suffix, got %q", s)
	}
	return n * scale, nil
}
