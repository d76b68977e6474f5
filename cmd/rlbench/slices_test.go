package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSlicesBench runs `rlbench slices` small, on an rlserver it builds and starts,
// with 4 client processes: the last line is the headline in its exact form, the
// Slicer over-admitted nothing in any window, and count-then-flush, on the same
// paced load, did: the windows' counting sees an over-admission when there is one.
func TestSlicesBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts an rlserver and client processes")
	}
	var out bytes.Buffer
	args := []string{"-children", "4", "-goroutines", "2", "-time", "300ms", "-window", "200ms", "-windows", "3",
		"-rate", "20000", "-flush", "50ms", "-server-cpu", "-1", "-load-cpu", "-1"}
	if err := runSlicesBench(context.Background(), args, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	headline := regexp.MustCompile(`^bench-slices: \d+\.\dx decisions/s of the batched client, \d+x fewer round trips, ` +
		`p99 \d+\.\d us, over-admitted (\S+) \(count-then-flush (\S+)\)$`)
	m := headline.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line %q, want the headline", lines[len(lines)-1])
	}
	if m[1] != "0" {
		t.Errorf("the Slicer over-admitted %s units", m[1])
	}
	if m[2] == "0" {
		t.Errorf("count-then-flush over-admitted nothing: the load did not reach the limit, or the windows were not counted")
	}
	near := regexp.MustCompile(`(?m)^ +slicer +3 +3600 +\d+ +(\d+) +\d+ +0 +\d+ +0$`).FindStringSubmatch(out.String())
	if near == nil {
		t.Fatalf("no Slicer row of 3 windows of 3600, none over, no error, in:\n%s", out.String())
	}
	if near[1] == "0" {
		t.Error("the Slicer admitted nothing near the limit")
	}
}

// TestAdmittedIn: a call's window is the one whose end its Result's ResetAfter
// points at, whether it began before the edge and was decided after it or the other
// way round.
func TestAdmittedIn(t *testing.T) {
	w := time.Second
	edge := time.Unix(100, 0) // the end of window 99, the start of window 100
	for _, c := range []struct {
		t0    time.Time
		reset time.Duration
		want  int64
	}{
		{edge.Add(-300 * time.Millisecond), 301 * time.Millisecond, 99},
		{edge.Add(-50 * time.Microsecond), time.Millisecond, 99},                         // decided just before the edge
		{edge.Add(-50 * time.Microsecond), time.Second, 100},                             // waited for a slice across it
		{edge.Add(2 * time.Millisecond), 999 * time.Millisecond, 100},                    // rounded up, a round trip late
		{edge.Add(999 * time.Millisecond), time.Millisecond + 200*time.Microsecond, 100}, // the last of window 100
	} {
		if got := admittedIn(c.t0, c.reset, w); got != c.want {
			t.Errorf("admittedIn(edge%+v, %v) = %d, want %d", c.t0.Sub(edge), c.reset, got, c.want)
		}
	}
}

// TestCountWindows counts only the run's whole windows, and over- and
// under-admission per window, never netted against each other.
func TestCountWindows(t *testing.T) {
	w := 100 * time.Millisecond
	r := slicesRun{start: time.Unix(0, 10*int64(w)), end: time.Unix(0, 13*int64(w)),
		out: slicesOut{Windows: map[int64]int64{9: 500, 10: 12, 11: 7, 13: 500}}}
	got := countWindows(r, 10, w)
	want := windowed{windows: 3, admitted: 19, most: 12, over: 2, unused: 3 + 10}
	if got != want {
		t.Errorf("countWindows = %+v, want %+v", got, want)
	}
	if s := thousands(2113); s != "2,113" {
		t.Errorf("thousands(2113) = %q", s)
	}
	if s := thousands(1234567); s != "1,234,567" {
		t.Errorf("thousands(1234567) = %q", s)
	}
}
