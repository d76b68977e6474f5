package ttl

import (
	"math/rand/v2"
	"testing"
)

// popAll pops until the wheel is empty and returns the deadlines in pop order.
func popAll(t *testing.T, w *Wheel, want map[uint32]int64) []int64 {
	t.Helper()
	var got []int64
	for {
		id, d, ok := pop(w)
		if !ok {
			break
		}
		if wd, in := want[id]; !in || wd != d {
			t.Fatalf("Earliest = %d, %d; scheduled: %d, %v", id, d, wd, in)
		}
		delete(want, id)
		if _, still := w.Deadline(id); still {
			t.Fatalf("id %d still scheduled after pop", id)
		}
		got = append(got, d)
	}
	if len(want) != 0 {
		t.Fatalf("%d ids never popped", len(want))
	}
	return got
}

func TestEarliestOrder(t *testing.T) {
	tests := []struct {
		name   string
		spread int64 // deadlines in (now, now+spread]
		grain  int64 // the order must hold to this resolution: the bucket span
	}{
		{"level 0, exact to the ms", 63 * ms, ms},
		{"level 1, to 64 ms", 4 * sec, 64 * ms},
		{"level 2, to 4.1 s", 4 * 60 * sec, 4096 * ms},
		{"far, to 4.4 min", 4 * hour, 262144 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Wheel
			w.Advance(t0, func(uint32) {})
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[uint32]int64{}
			for id := uint32(1); id <= 500; id++ {
				d := t0 + 1 + rng.Int64N(tt.spread)
				w.Schedule(id, d)
				want[id] = d
			}
			got := popAll(t, &w, want)
			for i := 1; i < len(got); i++ {
				if got[i]/tt.grain < got[i-1]/tt.grain-1 {
					t.Fatalf("pop %d: deadline %d after %d, out of order beyond %d µs", i, got[i], got[i-1], tt.grain)
				}
			}
		})
	}
}

func TestEarliestOverdueFirst(t *testing.T) {
	var w Wheel
	w.Advance(t0, func(uint32) {})
	w.Schedule(1, t0+10*sec)
	w.Schedule(2, t0-5*ms) // due already, waiting for the next Advance
	w.Schedule(3, t0+20*ms)
	got := popAll(t, &w, map[uint32]int64{1: t0 + 10*sec, 2: t0 - 5*ms, 3: t0 + 20*ms})
	want := []int64{t0 - 5*ms, t0 + 20*ms, t0 + 10*sec}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order %v, want %v", got, want)
		}
	}
}

// A hot id whose deadline moved later stays in its first bucket (Schedule's shortcut):
// Earliest must see its real deadline, not the bucket's.
func TestEarliestSeesLaterDeadline(t *testing.T) {
	var w Wheel
	w.Advance(t0, func(uint32) {})
	w.Schedule(1, t0+5*ms)
	w.Schedule(2, t0+30*ms)
	w.Schedule(1, t0+hour) // later: id 1 stays in the 5 ms bucket
	id, d, ok := pop(&w)
	if !ok || id != 2 || d != t0+30*ms {
		t.Fatalf("Earliest = %d, %d, %v; want 2, %d", id, d, ok, t0+30*ms)
	}
	id, d, ok = pop(&w)
	if !ok || id != 1 || d != t0+hour {
		t.Fatalf("Earliest = %d, %d, %v; want 1, %d", id, d, ok, t0+hour)
	}
	if _, _, ok := pop(&w); ok {
		t.Fatal("Earliest on an empty wheel reported an id")
	}
}

// Popping must leave the wheel consistent: the rest still fire on time.
func TestEarliestThenAdvance(t *testing.T) {
	m := newModel(t, t0)
	for id := uint32(1); id <= 200; id++ {
		m.schedule(id, t0+int64(id)*7*ms)
	}
	for range 50 {
		id, _, ok := pop(&m.w)
		if !ok {
			t.Fatal("wheel empty too early")
		}
		delete(m.want, id)
	}
	if _, in := m.want[1]; in {
		t.Fatal("the earliest id was not popped")
	}
	for now := t0; now <= t0+201*7*ms; now += 3 * ms {
		m.advance(now) // fails if a popped id fires or a kept one does not
	}
	if len(m.want) != 0 {
		t.Fatalf("%d ids never fired", len(m.want))
	}
}

func TestBytesToSchedule(t *testing.T) {
	var w Wheel
	if got := w.BytesToSchedule(1); got != 64*BytesPerID {
		t.Fatalf("empty wheel: %d, want %d", got, 64*BytesPerID)
	}
	before := w.Bytes()
	predicted := w.BytesToSchedule(1)
	w.Schedule(1, t0)
	if w.Bytes()-before != predicted {
		t.Fatalf("Schedule grew %d bytes, predicted %d", w.Bytes()-before, predicted)
	}
	if got := w.BytesToSchedule(63); got != 0 {
		t.Fatalf("id within the arrays: %d, want 0", got)
	}
	before, predicted = w.Bytes(), w.BytesToSchedule(64)
	w.Schedule(64, t0)
	if predicted == 0 || w.Bytes()-before != predicted {
		t.Fatalf("Schedule grew %d bytes, predicted %d", w.Bytes()-before, predicted)
	}
}

// pop returns the earliest id, as Earliest, and unschedules it, as the store does
// with the key it evicts.
func pop(w *Wheel) (uint32, int64, bool) {
	id, d, ok := w.Earliest()
	if ok {
		w.Cancel(id)
	}
	return id, d, ok
}
