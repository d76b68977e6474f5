package ttl

import (
	"math/rand/v2"
	"slices"
	"testing"
)

const (
	ms   = int64(1000)
	sec  = 1000 * ms
	hour = 3600 * sec
	day  = 24 * hour
	year = 365 * day
)

// t0 is an arbitrary present: 2026-01-01T00:00:00.123456Z in µs.
const t0 = int64(1767225600123456)

// model is a Wheel checked against a map of what it should hold: every Advance must
// fire exactly the scheduled ids whose deadline is at or before now, each once.
type model struct {
	t    *testing.T
	w    Wheel
	want map[uint32]int64
}

func newModel(t *testing.T, now int64) *model {
	m := &model{t: t, want: map[uint32]int64{}}
	m.advance(now)
	return m
}

func (m *model) schedule(id uint32, deadline int64) {
	m.t.Helper()
	m.w.Schedule(id, deadline)
	m.want[id] = deadline
	if got, ok := m.w.Deadline(id); !ok || got != deadline {
		m.t.Fatalf("Deadline(%d) = %d, %v after Schedule(%d)", id, got, ok, deadline)
	}
}

func (m *model) cancel(id uint32) {
	m.t.Helper()
	m.w.Cancel(id)
	delete(m.want, id)
	if _, ok := m.w.Deadline(id); ok {
		m.t.Fatalf("Deadline(%d) still set after Cancel", id)
	}
}

// advance moves the wheel to now and returns the ids it fired, sorted.
func (m *model) advance(now int64) []uint32 {
	m.t.Helper()
	var fired, due []uint32
	m.w.Advance(now, func(id uint32) { fired = append(fired, id) })
	for id, d := range m.want {
		if d <= now {
			due = append(due, id)
			delete(m.want, id)
		}
	}
	slices.Sort(fired)
	slices.Sort(due)
	if !slices.Equal(fired, due) {
		m.t.Fatalf("Advance(t0%+d): fired %v, want %v", now-t0, head(fired), head(due))
	}
	for _, id := range fired {
		if _, ok := m.w.Deadline(id); ok {
			m.t.Fatalf("id %d fired but still scheduled", id)
		}
	}
	return fired
}

func head(ids []uint32) []uint32 { return ids[:min(len(ids), 20)] }

func TestFiresAtDeadlineNotBefore(t *testing.T) {
	tests := []struct {
		name  string
		delay int64
	}{
		{"1µs", 1},
		{"999µs", 999},
		{"1ms", ms},
		{"1.5ms", ms + 500},
		{"63ms", 63 * ms},
		{"64ms", 64 * ms},
		{"65ms", 65 * ms},
		{"1s", sec},
		{"4.096s", 4096 * ms},
		{"1min", 60 * sec},
		{"1h", hour},
		{"1day", day},
		{"30days", 30 * day},
		{"1year", year},
		{"3years beyond the wheel", 3 * year},
		{"100years", 100 * year},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, t0)
			d := t0 + tt.delay
			m.schedule(7, d)
			// Walk up in uneven steps so that every level cascades on the way.
			for now := t0; now < d-1; now += max(1, (d-1-now)/3) {
				if got := m.advance(now); len(got) != 0 {
					t.Fatalf("fired early at deadline%+dµs", now-d)
				}
			}
			if got := m.advance(d - 1); len(got) != 0 {
				t.Fatal("fired 1µs before the deadline")
			}
			if got := m.advance(d); !slices.Equal(got, []uint32{7}) {
				t.Fatalf("at the deadline fired %v, want [7]", got)
			}
		})
	}
}

func TestJumps(t *testing.T) {
	tests := []struct {
		name string
		jump int64
	}{
		{"within a tick", 300},
		{"one tick", ms},
		{"63 ticks", 63 * ms},
		{"one level-1 bucket", 64 * ms},
		{"10s", 10 * sec},
		{"suspended for hours", 7 * hour},
		{"two years", 2 * year},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.jump)))
			m := newModel(t, t0)
			for id := uint32(1); id <= 20000; id++ {
				span := 2 * tt.jump // half around the jump, half up to 10s past it
				if id%2 == 0 {
					span += 10 * sec
				}
				m.schedule(id, t0+1+rng.Int64N(span))
			}
			fired := m.advance(t0 + tt.jump) // the model checks the exact set
			if len(fired) == 0 {
				t.Fatal("nothing fired; the test lost its point")
			}
			m.advance(t0 + 2*tt.jump + 10*sec)
			if len(m.want) != 0 {
				t.Fatalf("%d ids left", len(m.want))
			}
		})
	}
}

func TestClockBackwards(t *testing.T) {
	m := newModel(t, t0+hour)
	m.schedule(1, t0+hour-5*sec) // in the past of the wheel
	m.schedule(2, t0+10*sec)     // in the past, and ahead of the clock set back below
	m.schedule(3, t0+hour+ms)
	if got := m.advance(t0); len(got) != 0 { // clock set back an hour: nothing is due yet
		t.Fatalf("fired %v with the clock set back", got)
	}
	if got := m.advance(t0 + 10*sec - 1); len(got) != 0 {
		t.Fatalf("fired %v 1µs early", got)
	}
	if got := m.advance(t0 + 10*sec); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("fired %v, want [2]", got)
	}
	m.schedule(4, t0+20*sec) // scheduled while the clock is behind the wheel
	if got := m.advance(t0 + hour - 5*sec); !slices.Equal(got, []uint32{1, 4}) {
		t.Fatalf("fired %v, want [1 4]", got)
	}
	m.advance(t0 + hour + ms - 1)
	if got := m.advance(t0 + hour + ms); !slices.Equal(got, []uint32{3}) {
		t.Fatalf("fired %v, want [3]", got)
	}
}

func TestRescheduleAndCancel(t *testing.T) {
	m := newModel(t, t0)
	for i := range 1000 { // later, earlier, far and near, many times over
		m.schedule(1, t0+int64(i%7)*hour+int64(i)*ms+1)
		m.schedule(2, t0+int64(1000-i)*sec)
	}
	m.schedule(3, t0+sec)
	m.cancel(3)
	m.cancel(3) // twice is harmless
	m.cancel(99)
	m.advance(t0 + hour) // id 1 is at t0+6h+999ms+1, id 2 at t0+1s
	if _, ok := m.w.Deadline(1); !ok {
		t.Fatal("id 1 fired at its old deadline")
	}
	m.advance(t0 + 7*hour)
	if len(m.want) != 0 {
		t.Fatalf("left %v", m.want)
	}
}

func TestRandomAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	now := t0
	m := newModel(t, now)
	spans := []int64{ms, 64 * ms, sec, 5 * sec, hour, day, year}
	for range 200000 {
		id := uint32(1 + rng.IntN(3000))
		switch r := rng.IntN(100); {
		case r < 60:
			m.schedule(id, now-sec+rng.Int64N(spans[rng.IntN(len(spans))]+sec))
		case r < 75:
			m.cancel(id)
		case r < 98:
			now += rng.Int64N(spans[rng.IntN(4)] / 50)
			m.advance(now)
		case r < 99:
			now += rng.Int64N(spans[4+rng.IntN(3)])
			m.advance(now)
		default: // a debug clock set back
			now -= rng.Int64N(hour)
			m.advance(now)
		}
	}
}

func TestScheduleRejectsReservedIDs(t *testing.T) {
	for _, id := range []uint32{0, 1 << 31, 1<<32 - 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Schedule(%d) did not panic", id)
				}
			}()
			var w Wheel
			w.Schedule(id, t0)
		}()
	}
}

func TestBytes(t *testing.T) {
	var w Wheel
	before := w.Bytes()
	w.Schedule(1000, t0)
	if got := w.Bytes() - before; got < 1001*BytesPerID {
		t.Fatalf("Bytes grew by %d for 1001 ids, want ≥ %d", got, 1001*BytesPerID)
	}
}
