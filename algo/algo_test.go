package algo

import "testing"

// year is one year in µs; yearEnd is the end of the year-long window holding base
// (windows are aligned to multiples of W since the epoch), yearLeft the ms until then.
const (
	year     = int64(31_536_000_000_000)
	yearEnd  = (base/year + 1) * year
	yearLeft = (yearEnd - base) / 1000
)

func TestFixed(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		runSteps(t, KindFixed, []step{
			{0, "3 1000 COST 0", [5]int64{1, 3, 3, 0, 0}}, // a fresh key, and COST 0 keeps it so
			{0, "3 1000", [5]int64{1, 3, 2, 0, 1000}},
			{ms(100), "3 1000", [5]int64{1, 3, 1, 0, 900}},
			{ms(200), "3 1000 COST 2", [5]int64{0, 3, 1, 800, 800}},
			{ms(200), "3 1000 PEEK", [5]int64{1, 3, 0, 0, 800}}, // answers as if consumed
			{ms(250), "3 1000", [5]int64{1, 3, 0, 0, 750}},      // so the PEEK wrote nothing
			{300_500, "3 1000", [5]int64{0, 3, 0, 700, 700}},    // 699.5 ms round up
			{999_999, "3 1000", [5]int64{0, 3, 0, 1, 1}},
			{ms(1000), "3 1000", [5]int64{1, 3, 2, 0, 1000}}, // the next window
			{ms(1000), "3 1000 COST 4", [5]int64{0, 3, 2, -1, 1000}},
			{ms(1000), "3 1000 COST 0", [5]int64{1, 3, 2, 0, 1000}},
			{ms(1000), "3 1000 COST 2", [5]int64{1, 3, 0, 0, 1000}},
		})
	})
	t.Run("parameter changes", func(t *testing.T) {
		runSteps(t, KindFixed, []step{
			{0, "3 1000 COST 3", [5]int64{1, 3, 0, 0, 1000}},
			{ms(10), "5 1000", [5]int64{1, 5, 1, 0, 990}},          // a higher limit counts what was used
			{ms(20), "2 1000", [5]int64{0, 2, 0, 980, 980}},        // a lower one: remaining clamps at 0
			{ms(20), "2 1000 COST 0", [5]int64{1, 2, 0, 0, 980}},   // COST 0 still passes
			{ms(1500), "3 2000", [5]int64{1, 3, 2, 0, 500}},        // another window size: another index
			{ms(1600), "3 2000 COST 2", [5]int64{1, 3, 0, 0, 400}}, // and counts from there
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindFixed, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{500, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{999, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{1000, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{1000, "1 1 COST 2", [5]int64{0, 1, 0, -1, 1}},
		})
	})
	t.Run("limit 1e9, window a year", func(t *testing.T) {
		runSteps(t, KindFixed, []step{
			{0, "1000000000 31536000000 COST 999999999", [5]int64{1, 1e9, 1, 0, yearLeft}},
			{0, "1000000000 31536000000 COST 2", [5]int64{0, 1e9, 1, yearLeft, yearLeft}},
			{0, "1000000000 31536000000 COST 1000000000000", [5]int64{0, 1e9, 1, -1, yearLeft}},
			{0, "1000000000 31536000000", [5]int64{1, 1e9, 0, 0, yearLeft}},
			{yearEnd - base, "1000000000 31536000000", [5]int64{1, 1e9, 1e9 - 1, 0, 31_536_000_000}},
		})
	})
}

func TestSlide(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		runSteps(t, KindSlide, []step{
			{0, "10 1000 COST 4", [5]int64{1, 10, 6, 0, 2000}},
			{ms(500), "10 1000 COST 6", [5]int64{1, 10, 0, 0, 1500}},
			// Full: passes in the next window once 9 of the 10 weigh, at 1100 ms.
			{ms(600), "10 1000", [5]int64{0, 10, 0, 500, 1400}},
			{ms(1099), "10 1000", [5]int64{0, 10, 0, 1, 901}},  // only prev: fresh when w+1 ends
			{ms(1100), "10 1000", [5]int64{1, 10, 0, 0, 1900}}, // est = 1 + 10·0.9
			{ms(1500), "10 1000 COST 2", [5]int64{1, 10, 2, 0, 1500}},
			// cur 3 + 5 <= 10: passes in this window once prev weighs 2, at 1800 ms.
			{ms(1500), "10 1000 COST 5", [5]int64{0, 10, 2, 300, 1500}},
			{ms(1500), "10 1000 COST 11", [5]int64{0, 10, 2, -1, 1500}},
			{ms(1500), "10 1000 COST 2 PEEK", [5]int64{1, 10, 0, 0, 1500}},
			{ms(1799), "10 1000 COST 5", [5]int64{0, 10, 4, 1, 1201}}, // est = 3 + 10·0.201
			{ms(1800), "10 1000 COST 5 PEEK", [5]int64{1, 10, 0, 0, 1200}},
			// Only prev left: the key is fresh once window w+1 ends.
			{ms(2100), "10 1000 COST 0", [5]int64{1, 10, 7, 0, 900}}, // est = 3·0.9
			{ms(3000), "10 1000 COST 0", [5]int64{1, 10, 10, 0, 0}},
		})
	})
	t.Run("parameter changes", func(t *testing.T) {
		runSteps(t, KindSlide, []step{
			{0, "10 1000 COST 8", [5]int64{1, 10, 2, 0, 2000}},
			{ms(100), "4 1000 COST 0", [5]int64{1, 4, 0, 0, 1900}},
			// cur 8 > 4 - 1: the next window, where 8·w <= 3 once w <= 3/8, at 1625 ms.
			{ms(100), "4 1000", [5]int64{0, 4, 0, 1525, 1900}},
			{ms(1625), "4 1000", [5]int64{1, 4, 0, 0, 1375}},
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindSlide, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 2}},
			{999, "1 1", [5]int64{0, 1, 0, 2, 2}}, // prev weighs 1 until the end of the next window
			{2000, "1 1", [5]int64{1, 1, 0, 0, 2}},
		})
	})
	t.Run("limit 1e9, window a year", func(t *testing.T) {
		runSteps(t, KindSlide, []step{
			{0, "1000000000 31536000000 COST 1000000000", [5]int64{1, 1e9, 0, 0, yearLeft + 31_536_000_000}},
			// Full: passes 31.536 ms into the next window, once the full one weighs 1 - 1e-9.
			{0, "1000000000 31536000000", [5]int64{0, 1e9, 0, yearLeft + 32, yearLeft + 31_536_000_000}},
		})
	})
}

func TestLog(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		runSteps(t, KindLog, []step{
			{0, "3 1000", [5]int64{1, 3, 2, 0, 1000}},
			{ms(100), "3 1000 COST 2", [5]int64{1, 3, 0, 0, 1000}},
			{ms(200), "3 1000", [5]int64{0, 3, 0, 800, 900}},        // the entry at 0 must leave
			{ms(200), "3 1000 COST 3", [5]int64{0, 3, 0, 900, 900}}, // both must leave
			{ms(200), "3 1000 COST 4", [5]int64{0, 3, 0, -1, 900}},
			{ms(1000), "3 1000", [5]int64{1, 3, 0, 0, 1000}}, // ts <= now - W has left
			{ms(1100), "3 1000 COST 2 PEEK", [5]int64{1, 3, 0, 0, 1000}},
			{ms(1100), "3 1000 COST 2", [5]int64{1, 3, 0, 0, 1000}},
			{ms(1100), "3 1000", [5]int64{0, 3, 0, 900, 1000}},
			{ms(1100), "3 1000 COST 0", [5]int64{1, 3, 0, 0, 1000}},
			{ms(5000), "3 1000 COST 0", [5]int64{1, 3, 3, 0, 0}},
		})
	})
	t.Run("parameter changes", func(t *testing.T) {
		runSteps(t, KindLog, []step{
			{0, "5 1000 COST 4", [5]int64{1, 5, 1, 0, 1000}},
			{ms(10), "2 1000", [5]int64{0, 2, 0, 990, 990}},
			{ms(100), "2 100", [5]int64{1, 2, 1, 0, 100}}, // a shorter window: the old entry is out
			// and the write dropped it: a longer window later cannot bring it back.
			{ms(120), "8 1000", [5]int64{1, 8, 6, 0, 1000}},
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindLog, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{1, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{1000, "1 1", [5]int64{1, 1, 0, 0, 1}},
		})
	})
	t.Run("a year", func(t *testing.T) {
		runSteps(t, KindLog, []step{
			{0, "100000 31536000000 COST 100000", [5]int64{1, 1e5, 0, 0, 31_536_000_000}},
			{ms(1), "100000 31536000000", [5]int64{0, 1e5, 0, 31_535_999_999, 31_535_999_999}},
		})
	})
}

func TestLogReusesEntries(t *testing.T) {
	r := mustParse(t, KindLog, "10 1000")
	buf := make([]LogEntry, 0, 16)
	buf = append(buf, LogEntry{TS: base - ms(2000), Cost: 1}, LogEntry{TS: base - ms(500), Cost: 2})
	got, d := Log(buf, r, base)
	want := []LogEntry{{TS: base - ms(500), Cost: 2}, {TS: base, Cost: 1}}
	if !d.Write || !sameEntries(got, want) || &got[0] != &buf[0] {
		t.Fatalf("got %v (Write %v), want %v in the input's array", got, d.Write, want)
	}
	// A second call in the same µs adds to that entry.
	got, _ = Log(got, r, base)
	if want[1].Cost = 2; !sameEntries(got, want) {
		t.Fatalf("same µs: got %v, want %v", got, want)
	}
	allocs := testing.AllocsPerRun(100, func() {
		buf = append(buf[:0], LogEntry{TS: base - ms(2000), Cost: 1}, LogEntry{TS: base - ms(500), Cost: 2})
		Log(buf, r, base)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}

func sameEntries(a, b []LogEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestToken(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		// 10 tokens, refilled at 10 per second: one every 100 ms.
		runSteps(t, KindToken, []step{
			{0, "10 1000", [5]int64{1, 10, 9, 0, 100}},
			{0, "10 1000 COST 9", [5]int64{1, 10, 0, 0, 1000}},
			{ms(50), "10 1000", [5]int64{0, 10, 0, 50, 950}},
			{ms(100), "10 1000", [5]int64{1, 10, 0, 0, 1000}},
			{ms(100), "10 1000 COST 11", [5]int64{0, 10, 0, -1, 1000}},
			{ms(100), "10 1000 COST 0", [5]int64{1, 10, 0, 0, 1000}},
			{ms(350), "10 1000 COST 2 PEEK", [5]int64{1, 10, 0, 0, 950}},
			{ms(350), "10 1000 COST 3", [5]int64{0, 10, 2, 50, 750}},
			{ms(400), "10 1000 COST 3", [5]int64{1, 10, 0, 0, 1000}},
			{ms(5000), "10 1000 COST 0", [5]int64{1, 10, 10, 0, 0}},
		})
	})
	t.Run("rate", func(t *testing.T) {
		runSteps(t, KindToken, []step{
			{0, "10 1000 RATE 1 COST 10", [5]int64{1, 10, 0, 0, 10000}},
			{ms(500), "10 1000 RATE 1", [5]int64{0, 10, 0, 500, 9500}},
			{ms(1000), "10 1000 RATE 1", [5]int64{1, 10, 0, 0, 10000}},
			// A faster refill reads the same state: 4.5 tokens after 450 ms at 10/s.
			{ms(1450), "10 1000 RATE 10 COST 5", [5]int64{0, 10, 4, 50, 550}},
			// A smaller bucket clamps it.
			{ms(9000), "3 1000 RATE 10", [5]int64{1, 3, 2, 0, 100}},
		})
	})
	t.Run("a fresh key is full", func(t *testing.T) {
		// capacity·W/r is far beyond now: a zero state must not be refilled from 1970.
		runSteps(t, KindToken, []step{
			{0, "1000000 31536000000 RATE 1 COST 1000000", [5]int64{1, 1e6, 0, 0, maxDuration/1000 + 1}},
			{ms(1), "1000000 31536000000 RATE 1", [5]int64{0, 1e6, 0, 31_535_999_999, maxDuration/1000 + 1}},
		})
	})
	t.Run("limit 1e9, window a year", func(t *testing.T) {
		runSteps(t, KindToken, []step{
			{0, "1000000000 31536000000 COST 1000000000", [5]int64{1, 1e9, 0, 0, 31_536_000_000}},
			{0, "1000000000 31536000000", [5]int64{0, 1e9, 0, 32, 31_536_000_000}}, // a token per 31.536 ms
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindToken, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{999, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{1000, "1 1", [5]int64{1, 1, 0, 0, 1}},
		})
	})
	t.Run("10000 per second", func(t *testing.T) {
		runSteps(t, KindToken, []step{
			{0, "10000 1000 COST 10000", [5]int64{1, 10000, 0, 0, 1000}},
			{50, "10000 1000", [5]int64{0, 10000, 0, 1, 1000}}, // half a token after 50 µs
			{100, "10000 1000", [5]int64{1, 10000, 0, 0, 1000}},
			{250, "10000 1000", [5]int64{1, 10000, 0, 0, 1000}},
			{299, "10000 1000", [5]int64{0, 10000, 0, 1, 1000}},
		})
	})
}

func TestGCRA(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		// 5 per second: T = 200 ms, τ = 1 s.
		runSteps(t, KindGCRA, []step{
			{0, "5 1000", [5]int64{1, 5, 4, 0, 200}},
			{0, "5 1000 COST 4", [5]int64{1, 5, 0, 0, 1000}},
			{ms(100), "5 1000", [5]int64{0, 5, 0, 100, 900}},
			{ms(200), "5 1000", [5]int64{1, 5, 0, 0, 1000}},
			{ms(200), "5 1000 COST 6", [5]int64{0, 5, 0, -1, 1000}},
			{ms(200), "5 1000 COST 0", [5]int64{1, 5, 0, 0, 1000}},
			{ms(700), "5 1000 PEEK", [5]int64{1, 5, 1, 0, 700}},
			{ms(700), "5 1000 COST 3", [5]int64{0, 5, 2, 100, 500}},
			{ms(800), "5 1000 COST 3", [5]int64{1, 5, 0, 0, 1000}},
			{ms(5000), "5 1000 COST 0", [5]int64{1, 5, 5, 0, 0}},
		})
	})
	t.Run("burst", func(t *testing.T) {
		runSteps(t, KindGCRA, []step{
			{0, "5 1000 BURST 2", [5]int64{1, 2, 1, 0, 200}},
			{0, "5 1000 BURST 2", [5]int64{1, 2, 0, 0, 400}},
			{0, "5 1000 BURST 2", [5]int64{0, 2, 0, 200, 400}},
			{0, "5 1000 BURST 2 COST 3", [5]int64{0, 2, 0, -1, 400}},
			// A bigger burst reads the same tat: 400 ms of 2 s used.
			{0, "5 1000 BURST 10", [5]int64{1, 10, 7, 0, 600}},
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindGCRA, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{1, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{1000, "1 1", [5]int64{1, 1, 0, 0, 1}},
		})
	})
	t.Run("limit 1e9, window a year", func(t *testing.T) {
		runSteps(t, KindGCRA, []step{
			{0, "1000000000 31536000000 COST 1000000000", [5]int64{1, 1e9, 0, 0, 31_536_000_000}},
			{0, "1000000000 31536000000", [5]int64{0, 1e9, 0, 32, 31_536_000_000}}, // T = 31.536 ms
		})
	})
	t.Run("10000 per second", func(t *testing.T) {
		// T = 100 µs: the 10,001st call of a burst waits one interval, less than a ms.
		steps := make([]step, 0, 10005)
		for i := int64(1); i <= 10000; i++ {
			steps = append(steps, step{0, "10000 1000", [5]int64{1, 10000, 10000 - i, 0, (100*i + 999) / 1000}})
		}
		steps = append(steps,
			step{0, "10000 1000", [5]int64{0, 10000, 0, 1, 1000}},
			step{99, "10000 1000", [5]int64{0, 10000, 0, 1, 1000}},
			step{100, "10000 1000", [5]int64{1, 10000, 0, 0, 1000}},
			step{150, "10000 1000", [5]int64{0, 10000, 0, 1, 1000}},
			step{200, "10000 1000", [5]int64{1, 10000, 0, 0, 1000}},
		)
		runSteps(t, KindGCRA, steps)
	})
}

func TestLeaky(t *testing.T) {
	t.Run("sequence", func(t *testing.T) {
		// One leaves every 200 ms; 2 may wait. Field 4 of an allowed call is its delay.
		runSteps(t, KindLeaky, []step{
			{0, "5 1000 QUEUE 2", [5]int64{1, 5, 2, 0, 200}},
			{0, "5 1000 QUEUE 2", [5]int64{1, 5, 1, 200, 400}},
			{0, "5 1000 QUEUE 2", [5]int64{1, 5, 0, 400, 600}},
			{0, "5 1000 QUEUE 2", [5]int64{0, 5, 0, 200, 600}}, // until the queue has room
			{ms(199), "5 1000 QUEUE 2", [5]int64{0, 5, 0, 1, 401}},
			{ms(200), "5 1000 QUEUE 2 PEEK", [5]int64{1, 5, 0, 400, 600}},
			{ms(200), "5 1000 QUEUE 2", [5]int64{1, 5, 0, 400, 600}},
			{ms(200), "5 1000 QUEUE 2 COST 0", [5]int64{1, 5, 0, 600, 600}},
			// A cost above the limit is not refused: it takes T·c of the schedule.
			{ms(1000), "5 1000 QUEUE 2 COST 10", [5]int64{1, 5, 0, 0, 2000}},
			{ms(5000), "5 1000 QUEUE 2 COST 0", [5]int64{1, 5, 3, 0, 0}},
		})
	})
	t.Run("no queue", func(t *testing.T) {
		runSteps(t, KindLeaky, []step{
			{0, "5 1000", [5]int64{1, 5, 0, 0, 200}},
			{0, "5 1000", [5]int64{0, 5, 0, 200, 200}},
			{ms(200), "5 1000", [5]int64{1, 5, 0, 0, 200}},
			// A longer queue reads the same tat.
			{ms(200), "5 1000 QUEUE 3", [5]int64{1, 5, 2, 200, 400}},
		})
	})
	t.Run("limit 1, window 1 ms", func(t *testing.T) {
		runSteps(t, KindLeaky, []step{
			{0, "1 1", [5]int64{1, 1, 0, 0, 1}},
			{1, "1 1", [5]int64{0, 1, 0, 1, 1}},
			{1000, "1 1", [5]int64{1, 1, 0, 0, 1}},
		})
	})
	t.Run("limit 1e9, window a year", func(t *testing.T) {
		// T = 31.536 ms.
		runSteps(t, KindLeaky, []step{
			{0, "1000000000 31536000000 QUEUE 1000000000", [5]int64{1, 1e9, 1e9, 0, 32}},
			{0, "1000000000 31536000000", [5]int64{0, 1e9, 0, 32, 32}},
		})
	})
	t.Run("10000 per second", func(t *testing.T) {
		runSteps(t, KindLeaky, []step{
			{0, "10000 1000", [5]int64{1, 10000, 0, 0, 1}},
			{50, "10000 1000", [5]int64{0, 10000, 0, 1, 1}},
			{100, "10000 1000", [5]int64{1, 10000, 0, 0, 1}},
			{100, "10000 1000 QUEUE 10", [5]int64{1, 10000, 9, 1, 1}}, // waits 100 µs: 1 ms
		})
	})
}

func TestThrottle(t *testing.T) {
	t.Run("redis-cell README", func(t *testing.T) {
		runSteps(t, KindThrottle, []step{
			{0, "15 30 60", [5]int64{0, 16, 15, -1, 2}},
		})
	})
	t.Run("redis-cell's own test sequence", func(t *testing.T) {
		// RateLimiter::rate_limit's test cases: limit 5 (max_burst 4), 1 per second.
		runSteps(t, KindThrottle, []step{
			{0, "4 1 1 6", [5]int64{1, 5, 5, -1, 0}}, // never larger than the maximum
			{0, "4 1 1", [5]int64{0, 5, 4, -1, 1}},
			{0, "4 1 1", [5]int64{0, 5, 3, -1, 2}},
			{0, "4 1 1", [5]int64{0, 5, 2, -1, 3}},
			{0, "4 1 1", [5]int64{0, 5, 1, -1, 4}},
			{0, "4 1 1", [5]int64{0, 5, 0, -1, 5}},
			{0, "4 1 1", [5]int64{1, 5, 0, 1, 5}},
			{ms(3000), "4 1 1", [5]int64{0, 5, 2, -1, 3}},
			{ms(3100), "4 1 1", [5]int64{0, 5, 1, -1, 4}}, // reset 3.9 s
			{ms(4000), "4 1 1", [5]int64{0, 5, 1, -1, 4}},
			{ms(8000), "4 1 1", [5]int64{0, 5, 4, -1, 1}},
			{ms(9500), "4 1 1", [5]int64{0, 5, 4, -1, 1}},
			{ms(9500), "4 1 1 0", [5]int64{0, 5, 4, -1, 1}}, // quantity 0 peeks
			{ms(9500), "4 1 1 2", [5]int64{0, 5, 2, -1, 3}},
			{ms(9500), "4 1 1 5", [5]int64{1, 5, 2, 3, 3}},
		})
	})
	t.Run("quantity 0 under a smaller max_burst", func(t *testing.T) {
		runSteps(t, KindThrottle, []step{
			{0, "4 1 1 5", [5]int64{0, 5, 0, -1, 5}},
			{0, "0 1 1 0", [5]int64{1, 1, 0, 4, 5}}, // as redis-cell: limited until tat - τ
			{ms(4000), "0 1 1 0", [5]int64{0, 1, 0, -1, 1}},
		})
	})
	t.Run("seconds round up on any remainder", func(t *testing.T) {
		runSteps(t, KindThrottle, []step{
			{0, "0 1 1", [5]int64{0, 1, 0, -1, 1}},
			{ms(999), "0 1 1", [5]int64{1, 1, 0, 1, 1}}, // 1 ms left: 1 s
			{999_999, "0 1 1", [5]int64{1, 1, 0, 1, 1}}, // 1 µs left: still 1 s
			{1_000_000, "0 1 1", [5]int64{0, 1, 0, -1, 1}},
		})
	})
	t.Run("a year", func(t *testing.T) {
		runSteps(t, KindThrottle, []step{
			{0, "0 1 31536000", [5]int64{0, 1, 0, -1, 31_536_000}},
			{ms(1), "0 1 31536000", [5]int64{1, 1, 0, 31_536_000, 31_536_000}},
		})
	})
}

func TestKindNames(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		want string
	}{
		{KindFixed, "rl.fixed"},
		{KindSlide, "rl.slide"},
		{KindLog, "rl.log"},
		{KindToken, "rl.token"},
		{KindGCRA, "rl.gcra"},
		{KindLeaky, "rl.leaky"},
		{KindThrottle, "cl.throttle"},
		{Kind(0), "none"},
		{KindLease, "rl.lease"},
		{Kind(9), "none"},
		{Kind(255), "none"},
	} {
		if got := c.kind.String(); got != c.want {
			t.Errorf("Kind(%d).String() = %q, want %q", c.kind, got, c.want)
		}
		want := c.want
		if c.kind == KindLease {
			want = "rl.acquire" // three commands share the kind; errors name RL.ACQUIRE
		}
		if got := c.kind.Command(); got != want {
			t.Errorf("Kind(%d).Command() = %q, want %q", c.kind, got, want)
		}
	}
}

// TestFixedSpend checks Spend against envoyproxy/ratelimit's INCRBY-then-compare:
// every call adds its hits, and a call is over the limit when the count after it is.
func TestFixedSpend(t *testing.T) {
	const w = 60_000_000
	r := Request{Kind: KindFixed, Limit: 3, Window: w, Cost: 1, Spend: true}
	var s FixedState
	now := int64(10 * w)
	for i, want := range []struct {
		allowed bool
		rem     int64
		count   int64
	}{{true, 2, 1}, {true, 1, 2}, {true, 0, 3}, {false, -1, 4}, {false, -2, 5}} {
		var d Decision
		s, d = Fixed(s, r, now)
		if d.Allowed != want.allowed || d.Remaining != want.rem || s.Count != want.count || !d.Write {
			t.Fatalf("call %d: %+v state %+v, want allowed=%v remaining=%d count=%d", i+1, d, s, want.allowed, want.rem, want.count)
		}
	}
	// A zero cost past the limit is over too (INCRBY 0 answers 5 > 3), and writes nothing.
	z := r
	z.Cost = 0
	if _, d := Fixed(s, z, now); d.Allowed || d.Write {
		t.Fatalf("cost 0 past the limit: %+v", d)
	}
	// The next window starts from zero.
	if s2, d := Fixed(s, r, now+w); !d.Allowed || s2.Count != 1 {
		t.Fatalf("next window: %+v %+v", d, s2)
	}
	// The count saturates instead of wrapping.
	big := FixedState{Window: 10, Count: 1<<63 - 2}
	if s2, d := Fixed(big, Request{Kind: KindFixed, Limit: 3, Window: w, Cost: 5, Spend: true}, now); d.Allowed || s2.Count != 1<<63-1 {
		t.Fatalf("saturation: %+v %+v", d, s2)
	}
}
