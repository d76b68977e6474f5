package lab

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func TestMaxInWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	tests := []struct {
		times []time.Time
		want  int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 999), 2},
		{at(0, 1000), 1}, // a window of 1 s holds [t, t+1s)
		{at(1500, 0, 900, 1200, 1300), 4},
	}
	for _, tt := range tests {
		if got := MaxInWindow(tt.times, time.Second); got != tt.want {
			t.Errorf("MaxInWindow(%v) = %d, want %d", tt.times, got, tt.want)
		}
	}
}

func TestSkipReply(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("+OK\r\n:5\r\n$3\r\nabc\r\n*2\r\n$-1\r\n:1\r\n-ERR bad\r\n"))
	for range 4 {
		if err := SkipReply(r); err != nil {
			t.Fatalf("SkipReply: %v", err)
		}
	}
	if err := SkipReply(r); err == nil || err.Error() != "ERR bad" {
		t.Fatalf("SkipReply on an error reply = %v, want ERR bad", err)
	}
}
