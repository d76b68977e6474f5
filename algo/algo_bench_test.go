package algo

import "testing"

// Each benchmark drives one key at 100 per second with calls 7 µs apart, so it runs
// the allowed, limited and window-rolling paths alike; the store keeps the state
// only when Decision.Write, as here.

func BenchmarkFixed(b *testing.B) {
	r := mustParse(b, KindFixed, "100 1000")
	var s FixedState
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := Fixed(s, r, now); d.Write {
			s = next
		}
	}
}

func BenchmarkSlide(b *testing.B) {
	r := mustParse(b, KindSlide, "100 1000")
	var s SlideState
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := Slide(s, r, now); d.Write {
			s = next
		}
	}
}

func BenchmarkLog(b *testing.B) {
	r := mustParse(b, KindLog, "100 1000")
	s := make([]LogEntry, 0, 101) // the store's scratch buffer: the log plus one
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := Log(s, r, now); d.Write {
			s = next
		}
	}
}

func BenchmarkToken(b *testing.B) {
	r := mustParse(b, KindToken, "100 1000")
	var s TokenState
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := Token(s, r, now); d.Write {
			s = next
		}
	}
}

func BenchmarkGCRA(b *testing.B) {
	benchTat(b, GCRA, mustParse(b, KindGCRA, "100 1000"))
}

func BenchmarkLeaky(b *testing.B) {
	benchTat(b, Leaky, mustParse(b, KindLeaky, "100 1000 QUEUE 10"))
}

func BenchmarkThrottle(b *testing.B) {
	benchTat(b, GCRA, mustParse(b, KindThrottle, "99 100 1"))
}

func benchTat(b *testing.B, decide func(int64, Request, int64) (int64, Decision), r Request) {
	var tat int64
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := decide(tat, r, now); d.Write {
			tat = next
		}
	}
}

// BenchmarkTokenReserve is BenchmarkToken with RESERVE 20: the PEEK of cost c+n
// before the call itself.
func BenchmarkTokenReserve(b *testing.B) {
	r := mustParse(b, KindToken, "100 1000")
	r.Reserve = 20
	var s TokenState
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := Token(s, r, now); d.Write {
			s = next
		}
	}
}
