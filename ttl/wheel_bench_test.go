package ttl

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSchedule schedules unscheduled ids one minute ahead, spread over a second.
// The index arrays are grown beforehand: growing them is append's cost, not the wheel's.
func BenchmarkSchedule(b *testing.B) {
	const n = 1 << 20
	var w Wheel
	now := t0
	w.Advance(now, nil)
	w.Schedule(n, now)
	id := uint32(0)
	for b.Loop() {
		id++
		if id == n {
			b.StopTimer()
			now += 2 * 60 * sec
			w.Advance(now, func(uint32) {})
			id = 1
			b.StartTimer()
		}
		w.Schedule(id, now+60*sec+int64(id)%sec)
	}
}

// BenchmarkReschedule moves 1M scheduled ids to random deadlines within the next
// hour, earlier and later alike.
func BenchmarkReschedule(b *testing.B) {
	const n = 1 << 20
	var w Wheel
	w.Advance(t0, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	for id := uint32(1); id < n; id++ {
		w.Schedule(id, t0+rng.Int64N(hour))
	}
	for b.Loop() {
		w.Schedule(1+uint32(rng.IntN(n-1)), t0+rng.Int64N(hour))
	}
}

// BenchmarkRescheduleLater is the hot-key case: each call pushes the deadline out.
func BenchmarkRescheduleLater(b *testing.B) {
	var w Wheel
	w.Advance(t0, nil)
	d := t0 + sec
	for b.Loop() {
		d++
		w.Schedule(1, d)
	}
}

// BenchmarkAdvance steps 1 ms at a time through 1M ids spread over a minute, firing
// each and scheduling it again a minute ahead: ns/op is per tick, about 17 ids each.
func BenchmarkAdvance(b *testing.B) {
	const n = 1 << 20
	var w Wheel
	now := t0
	w.Advance(now, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	for id := uint32(1); id < n; id++ {
		w.Schedule(id, now+rng.Int64N(60*sec))
	}
	var fired []uint32
	for b.Loop() {
		now += ms
		fired = fired[:0]
		w.Advance(now, func(id uint32) { fired = append(fired, id) })
		for _, id := range fired {
			w.Schedule(id, now+60*sec)
		}
	}
}

// BenchmarkAdvanceJump is a clock jump of a day over 1M ids due within it.
func BenchmarkAdvanceJump(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		b.StopTimer()
		var w Wheel
		w.Advance(t0, nil)
		for id := uint32(1); id < n; id++ {
			w.Schedule(id, t0+rng.Int64N(day))
		}
		b.StartTimer()
		w.Advance(t0+day, func(uint32) {})
	}
}

// BenchmarkEarliest takes the earliest of 1M ids and schedules it again an hour on,
// as eviction under -maxmemory does with a group.
func BenchmarkEarliest(b *testing.B) {
	var w Wheel
	w.Advance(t0, func(uint32) {})
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	for id := uint32(1); id <= n; id++ {
		w.Schedule(id, t0+1+rng.Int64N(hour))
	}
	b.ResetTimer()
	for i := range b.N {
		id, d, ok := pop(&w)
		if !ok {
			b.Fatal("empty")
		}
		w.Schedule(id, d+hour+int64(i)) // keep the wheel full
	}
}
