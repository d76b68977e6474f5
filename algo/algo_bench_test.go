package algo

import "testing"

// Each benchmark drives one key at 100 per second with calls 7 µs apart, so it runs
// the allowed, limited and window-rolling paths alike; the store keeps the state
// only when Decision.Write, as here.

func BenchmarkFixed(b *testing.B) {
	benchDecide(b, Fixed, FixedState{}, mustParse(b, KindFixed, "100 1000"))
}

func BenchmarkSlide(b *testing.B) {
	benchDecide(b, Slide, SlideState{}, mustParse(b, KindSlide, "100 1000"))
}

func BenchmarkLog(b *testing.B) {
	s := make([]LogEntry, 0, 101) // the store's scratch buffer: the log plus one
	benchDecide(b, Log, s, mustParse(b, KindLog, "100 1000"))
}

func BenchmarkToken(b *testing.B) {
	benchDecide(b, Token, TokenState{}, mustParse(b, KindToken, "100 1000"))
}

func BenchmarkGCRA(b *testing.B) {
	benchDecide(b, GCRA, 0, mustParse(b, KindGCRA, "100 1000"))
}

func BenchmarkLeaky(b *testing.B) {
	benchDecide(b, Leaky, 0, mustParse(b, KindLeaky, "100 1000 QUEUE 10"))
}

func BenchmarkThrottle(b *testing.B) {
	benchDecide(b, GCRA, 0, mustParse(b, KindThrottle, "99 100 1"))
}

// BenchmarkTokenReserve is BenchmarkToken with RESERVE 20: the PEEK of cost c+n
// before the call itself.
func BenchmarkTokenReserve(b *testing.B) {
	r := mustParse(b, KindToken, "100 1000")
	r.Reserve = 20
	benchDecide(b, Token, TokenState{}, r)
}

// benchDecide runs decide on one key from state s, keeping the state it returns when
// the decision writes, as the store does.
func benchDecide[S any](b *testing.B, decide func(S, Request, int64) (S, Decision), s S, r Request) {
	now := base
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		if next, d := decide(s, r, now); d.Write {
			s = next
		}
	}
}
