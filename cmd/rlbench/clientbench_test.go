package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestClientBench runs `rlbench client` small, on an rlserver it builds and starts:
// both tables print, no call fails, and the last line is the headline in its exact
// form, which make bench-client's readers parse.
func TestClientBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts an rlserver")
	}
	var out bytes.Buffer
	args := []string{"-time", "200ms", "-rounds", "1", "-goroutines", "16", "-keys", "100", "-lanes", "2"}
	if err := runClientBench(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	headline := regexp.MustCompile(`^bench-client: \d+ vs \d+ decisions/s = \d+\.\d\dx; p99 \d+\.\d\d vs \d+\.\d\d ms$`)
	if last := lines[len(lines)-1]; !headline.MatchString(last) {
		t.Errorf("last line %q, want the headline", last)
	}
	for _, row := range []string{"batched ", "unbatched ", "batched, 2 lanes ", "no limiter "} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no %q row in:\n%s", row, out.String())
		}
	}
	for _, line := range lines {
		row := strings.TrimSpace(line)
		if f := strings.Fields(row); (strings.HasPrefix(row, "batched") || strings.HasPrefix(row, "unbatched") ||
			strings.HasPrefix(row, "no limiter")) && f[len(f)-1] != "0" {
			t.Errorf("calls failed: %q", line)
		}
	}
}
