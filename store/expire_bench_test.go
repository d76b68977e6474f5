package store

import (
	"math/rand/v2"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkChurn is bench-server's load on the store alone: calls on random keys of
// a 1M keyspace, named as redis-benchmark names them (user: and 12 digits), at 600k
// calls a second of simulated time. RL.TOKEN 100 per second is full again 10 ms after
// a call, so nearly every call creates its key and the key goes 10 ms later; RL.FIXED
// 100 per second lives to the end of its window, up to 1 s. In the ticker runs Expire
// is called every 10 ms of simulated time, as the server's ticker calls it
// (core.DefaultExpireInterval); in the calls runs only the calls advance the wheels.
// cpu-ns/op is the process's CPU time a call (the wall clock of a shared machine
// counts other processes' turns); a CPU profile (-cpuprofile) shows the share of
// expiry: Store.Expire and shard.advance.
func BenchmarkChurn(b *testing.B) {
	const (
		keyspace = 1_000_000
		rate     = 600_000 // calls per second of simulated time
	)
	for _, kind := range []algo.Kind{algo.KindToken, algo.KindFixed} {
		for _, tick := range []struct {
			name  string
			every int64
		}{{"ticker", 10 * ms}, {"calls", 1 << 62}} {
			b.Run(kind.String()+"/"+tick.name, func(b *testing.B) {
				s := newStore(b, Config{})
				r := request(kind, 100, sec)
				rng := rand.New(rand.NewPCG(1, 2))
				key := []byte("user:000000000000")
				i, next := int64(0), t0
				call := func() {
					now := t0 + i*sec/rate
					i++
					if now >= next {
						s.Expire(now)
						next = now + tick.every
					}
					n := rng.IntN(keyspace)
					for p := len(key) - 1; p >= 5; p-- {
						key[p] = byte('0' + n%10)
						n /= 10
					}
					if _, err := s.Do(key, r, now); err != nil {
						b.Fatal(err)
					}
				}
				for range 2 * rate { // two seconds first: the steady state
					call()
				}
				cpu := cpuTime()
				for b.Loop() {
					call()
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
				st := s.Stats()
				b.ReportMetric(float64(st.Keys), "keys")
				b.ReportMetric(float64(st.Bytes)/float64(max(1, st.Keys)), "B/key")
			})
		}
	}
}
