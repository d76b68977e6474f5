package gateway

import "testing"

// TestDrawn: a caller's sampled trace is always traced, whatever the rate; an
// unsampled or absent one is drawn at the rate.
func TestDrawn(t *testing.T) {
	const (
		sampledParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	for _, tc := range []struct {
		parent string
		rate   float64
		want   bool
	}{
		{sampledParent, 0, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", 0, true}, // sampled and another flag
		{unsampledParent, 0, false},
		{unsampledParent, 1, true},
		{"", 0, false},
		{"", 1, true},
		{"garbage", 0, false},
		{"00-x-y-0", 0, false}, // flags of one digit: not W3C's
	} {
		if got := drawn(tc.parent, tc.rate); got != tc.want {
			t.Errorf("drawn(%q, %v) = %v, want %v", tc.parent, tc.rate, got, tc.want)
		}
	}
	n := 0
	for range 10_000 {
		if drawn("", 0.01) {
			n++
		}
	}
	if n < 50 || n > 200 {
		t.Errorf("drawn at 1%%: %d of 10,000, want about 100", n)
	}
}
