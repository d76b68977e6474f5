package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/launch"
)

// TestBurst runs the lesson-002 figures briefly: each side admits what a token bucket
// can between the first call and the last answer, never more, and, unless the box
// starved the callers, nearly that.
func TestBurst(t *testing.T) {
	bin, err := launch.Built()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out strings.Builder
	args := []string{"-rlserver-bin", bin, "-goroutines", "4", "-sustain", "300ms", "-slow", "300ms", "-out", dir}
	if err := runBurstBench(context.Background(), args, &out); err != nil {
		t.Fatalf("rlbench burst %v: %v\n%s", args, err, out.String())
	}
	t.Log(out.String())
	var res burstResult
	b, err := os.ReadFile(filepath.Join(dir, "burst.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 6 {
		t.Fatalf("%d rows, want 3 figures × 2 sides", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.Admitted > r.Most || r.Admitted < r.Most*3/4 || r.Decisions < r.Admitted {
			t.Errorf("%s, %s: %d admitted of %d decisions, want at most %d and at least 3/4 of it", r.Figure, r.Side, r.Admitted, r.Decisions, r.Most)
		}
	}
}
