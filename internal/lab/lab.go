// Package lab holds the measuring helpers that the compatibility suite
// (../../compat_test.go) and the experiments (../../cmd/rlbench) share, so that both
// report the lesson's figures computed the same way.
package lab

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
