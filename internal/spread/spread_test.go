package spread

import (
	"math"
	"testing"
	"time"
)

// TestWait checks the bounds, and that 1,000 callers told the same wait come back
// spread over the jitter rather than together: no 1-ms slot holds more than a few.
func TestWait(t *testing.T) {
	for _, tc := range []struct{ d, j time.Duration }{
		{time.Millisecond, MinJitter},
		{200 * time.Millisecond, 20 * time.Millisecond},
		{time.Minute, MaxJitter},
	} {
		if j := Jitter(tc.d); j != tc.j {
			t.Errorf("Jitter(%v) = %v, want %v", tc.d, j, tc.j)
		}
		slots := map[time.Duration]int{}
		for range 1000 {
			w := Wait(tc.d)
			if w < tc.d || w >= tc.d+tc.j {
				t.Fatalf("Wait(%v) = %v, outside [%v, %v)", tc.d, w, tc.d, tc.d+tc.j)
			}
			slots[(w-tc.d)/time.Millisecond]++
		}
		want := int(tc.j / time.Millisecond) // 1-ms slots available
		if len(slots) < min(want, 1000)/2 {
			t.Errorf("Wait(%v): 1,000 waits fell in %d 1-ms slots of %d", tc.d, len(slots), want)
		}
	}
	if w := Wait(0); w != 0 {
		t.Errorf("Wait(0) = %v", w)
	}
}

// TestWaitUnspread: no wait, and "never" (the longest Duration), stay as they are:
// jitter on the latter would overflow to a negative wait.
func TestWaitUnspread(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, math.MaxInt64, math.MaxInt64 - MaxJitter + 1} {
		if w := Wait(d); w != d {
			t.Errorf("Wait(%v) = %v, want it unchanged", d, w)
		}
	}
}
