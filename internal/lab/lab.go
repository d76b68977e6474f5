// Package lab holds the measuring and calling helpers that the compatibility suite
// (../../compat_test.go) and the experiments (../../cmd/rlbench) share, so that both
// send the same calls and report the lesson's figures computed the same way.
package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxInWindow is the most of times that fit in any window of length d: the
// "most admitted in any sliding 1-s window" of the lesson's boundary test.
func MaxInWindow(times []time.Time, d time.Duration) int {
	times = slices.SortedFunc(slices.Values(times), time.Time.Compare)
	best, first := 0, 0
	for i, t := range times {
		for t.Sub(times[first]) >= d {
			first++
		}
		best = max(best, i-first+1)
	}
	return best
}

// SkipReply reads one RESP2 reply from r and discards it, returning it as an error
// if it is an error reply. Bulk loaders use it to drain pipelined replies without
// building them.
func SkipReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("bad reply line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return errors.New(body)
	case '$', '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad reply line %q", line)
		}
		if n < 0 {
			return nil // a null bulk or array ends with its header line
		}
		if line[0] == '$' {
			_, err = r.Discard(n + 2)
			return err
		}
		for range n {
			if err := SkipReply(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}

// Bulk sends cmd(0) .. cmd(n-1) to addr on a connection of its own, in pipelines
// of 1,000, failing on any error reply, calling done after each pipeline. It
// speaks RESP by hand: go-redis builds a Cmd per call, which makes loading a
// million keys take minutes instead of seconds. Short pipelines keep the servers'
// reply buffers small while their memory is measured.
func Bulk(ctx context.Context, addr string, n int, cmd func(i int) []string, done func(int)) error {
	const batch = 1000
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	var buf []byte
	for from := 0; from < n; from += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := min(from+batch, n)
		buf = buf[:0]
		for i := from; i < to; i++ {
			args := cmd(i)
			buf = append(buf, '*')
			buf = strconv.AppendInt(buf, int64(len(args)), 10)
			buf = append(buf, "\r\n"...)
			for _, a := range args {
				buf = append(buf, '$')
				buf = strconv.AppendInt(buf, int64(len(a)), 10)
				buf = append(buf, "\r\n"...)
				buf = append(buf, a...)
				buf = append(buf, "\r\n"...)
			}
		}
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		for i := from; i < to; i++ {
			if err := SkipReply(r); err != nil {
				return fmt.Errorf("%s: reply %d to %v: %w", addr, i, cmd(i), err)
			}
		}
		if done != nil {
			done(to - from)
		}
	}
	return nil
}

// RSS returns the resident set size of process pid in bytes, VmRSS in
// /proc/<pid>/status: what the OS charges the process, and what the memory
// experiments report per user (Linux only).
func RSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("RSS of process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("RSS of process %d: %q: %w", pid, line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("RSS of process %d: no VmRSS in /proc/%d/status", pid, pid)
}
