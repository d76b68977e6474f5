package store

import (
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// A call that read the clock before a later call took the lock arrives second, with
// the earlier time. Under MonotonicTime it is decided at the later time, so the
// fixed window's count is not reset by a flip back to the previous window.
func TestMonotonicTime(t *testing.T) {
	const window = sec
	boundary := (t0/window + 1) * window
	tests := []struct {
		name      string
		monotonic bool
		reset     bool // ResetTime between the calls
		wantCount int64
	}{
		{"monotonic: decided at the later time", true, false, 2},
		{"off: decided at the time given", false, false, 1},
		{"monotonic after ResetTime: the time given", true, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, Config{Shards: 1, MonotonicTime: tt.monotonic})
			r := request(algo.KindFixed, 10, window)
			if _, err := s.Do([]byte("k"), r, boundary+ms); err != nil {
				t.Fatal(err)
			}
			if tt.reset {
				s.ResetTime()
			}
			d, err := s.Do([]byte("k"), r, boundary-ms) // read before the first, arrived after
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Limit - d.Remaining; got != tt.wantCount {
				t.Fatalf("count after the late call = %d, want %d", got, tt.wantCount)
			}
		})
	}
}
