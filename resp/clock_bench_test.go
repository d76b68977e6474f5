package resp

import (
	"testing"
	"time"
)

// BenchmarkClockNow is the price of one reading of the real clock, which is why
// the commands of a pipeline share one (serveCommand).
func BenchmarkClockNow(b *testing.B) {
	var c clock
	c.real()
	var sum int64
	for b.Loop() {
		sum += c.now()
	}
	if sum == 0 {
		b.Fatal("no time")
	}
}

// BenchmarkClockSince is the price of a command's run time (execute): one reading of
// the monotonic clock alone, against BenchmarkClockNow's wall and monotonic pair.
func BenchmarkClockSince(b *testing.B) {
	start := time.Now()
	var sum time.Duration
	for b.Loop() {
		sum += time.Since(start)
	}
	if sum == 0 {
		b.Fatal("no time")
	}
}

// BenchmarkClockFrozen is the price with the debug clock frozen: one atomic load.
func BenchmarkClockFrozen(b *testing.B) {
	var c clock
	c.set(t0)
	var sum int64
	for b.Loop() {
		sum += c.now()
	}
	if sum == 0 {
		b.Fatal("no time")
	}
}

// BenchmarkExpireTick is the price of one tick of the expiry loop on an idle
// server (64 shards, nothing to remove), to choose DefaultExpireInterval.
func BenchmarkExpireTick(b *testing.B) {
	s, err := NewServer(Config{})
	if err != nil {
		b.Fatal(err)
	}
	now := int64(t0)
	for b.Loop() {
		now += 10_000
		s.store.Expire(now)
	}
}
