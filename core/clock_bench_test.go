package core

import (
	"testing"
	"time"
)

// BenchmarkClockNow is the price of one reading of the real clock, which is why
// the commands of a RESP pipeline share one (resp's serveCommand).
func BenchmarkClockNow(b *testing.B) {
	var c Clock
	c.real()
	var sum int64
	for b.Loop() {
		sum += c.Now()
	}
	if sum == 0 {
		b.Fatal("no time")
	}
}

// BenchmarkClockSince is the price of a command's run time (resp's execute): one reading of
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
	var c Clock
	c.set(t0)
	var sum int64
	for b.Loop() {
		sum += c.Now()
	}
	if sum == 0 {
		b.Fatal("no time")
	}
}

// BenchmarkExpireTick is the price of one tick of the expiry loop on an idle
// server (64 shards, nothing to remove), to choose DefaultExpireInterval.
func BenchmarkExpireTick(b *testing.B) {
	c, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	now := int64(t0)
	for b.Loop() {
		now += 10_000
		c.store.Expire(now)
	}
}

// t0 is a frozen test time at the start of a UTC day (2026-01-01).
const t0 = 1_767_225_600_000_000
