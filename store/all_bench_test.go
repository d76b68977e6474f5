package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkDoAll measures one RL.ALL of 3 rules (RL.FIXED per user, RL.TOKEN per IP,
// RL.GCRA per route, keys drawn among 100k each, limits never reached) against the
// same three rules as three Do calls, which is what RL.ALL replaces (without its
// atomicity), serially and from all cores.
func BenchmarkDoAll(b *testing.B) {
	const keys = 100_000
	kinds := []algo.Kind{algo.KindFixed, algo.KindToken, algo.KindGCRA}
	run := func(b *testing.B, s *Store, parallel bool, call func(s *Store, rs []algo.Rule, ds []algo.Decision, now int64)) {
		body := func(rng *rand.Rand, loop func() bool) {
			var buf [3][16]byte
			rules := make([]algo.Rule, 3)
			for i := range rules {
				rules[i].Req = request(kinds[i], 1e9, sec)
			}
			ds := make([]algo.Decision, 3)
			now := t0
			for loop() {
				now += 100
				for i := range rules {
					rules[i].Key = key16(&buf[i], i*keys+rng.IntN(keys))
				}
				call(s, rules, ds, now)
			}
		}
		if !parallel {
			body(rand.New(rand.NewPCG(1, 2)), b.Loop)
			return
		}
		b.RunParallel(func(pb *testing.PB) { body(rand.New(rand.NewPCG(rand.Uint64(), 2)), pb.Next) })
	}
	calls := []struct {
		name string
		call func(s *Store, rs []algo.Rule, ds []algo.Decision, now int64)
	}{
		{"DoAll", func(s *Store, rs []algo.Rule, ds []algo.Decision, now int64) { s.DoAll(rs, ds, now) }},
		{"3xDo", func(s *Store, rs []algo.Rule, ds []algo.Decision, now int64) {
			for i, r := range rs {
				ds[i], _ = s.Do(r.Key, r.Req, now)
			}
		}},
	}
	for _, c := range calls {
		for _, parallel := range []bool{false, true} {
			s := newStore(b, Config{})
			var buf [16]byte
			for i := range 3 * keys {
				s.Do(key16(&buf, i), request(kinds[i/keys], 1e9, sec), t0)
			}
			name := fmt.Sprintf("%s/serial", c.name)
			if parallel {
				name = fmt.Sprintf("%s/parallel", c.name)
			}
			b.Run(name, func(b *testing.B) { run(b, s, parallel, c.call) })
		}
	}
}

// BenchmarkAcquireRelease measures a lease's round trip, RL.ACQUIRE then RL.RELEASE,
// on keys among 1000 that each hold 10 live leases of limit 100: the set is decoded,
// decided and encoded twice.
func BenchmarkAcquireRelease(b *testing.B) {
	const keys = 1000
	for _, parallel := range []bool{false, true} {
		s := newStore(b, Config{})
		var buf [16]byte
		lease := algo.LeaseRequest{Limit: 100, Duration: 3600 * sec}
		for i := range keys {
			for range 10 {
				s.Acquire(key16(&buf, i), lease, t0)
			}
		}
		body := func(rng *rand.Rand, loop func() bool) {
			var buf [16]byte
			now := t0
			for loop() {
				now++
				key := key16(&buf, rng.IntN(keys))
				d, err := s.Acquire(key, lease, now)
				if err != nil || !d.Acquired {
					b.Fatalf("Acquire: %+v, %v", d, err)
				}
				if ok, err := s.Release(key, d.ID, now); !ok || err != nil {
					b.Fatalf("Release: %v, %v", ok, err)
				}
			}
		}
		if !parallel {
			b.Run("serial", func(b *testing.B) { body(rand.New(rand.NewPCG(1, 2)), b.Loop) })
		} else {
			b.Run("parallel", func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) { body(rand.New(rand.NewPCG(rand.Uint64(), 2)), pb.Next) })
			})
		}
	}
}

// BenchmarkBytesPerLease stores keys of 16 bytes holding 10 or 100 leases each (1M
// leases in all), taken 10 ms apart with generated ids, and reports the encoded set
// per lease (set-B/lease) and the store's whole accounting per lease
// (accounted-B/lease), keys' costs included. Run it with -benchtime=1x. (1000 leases
// a key: 11.0 and 42.9 B, but 2 minutes to build, as every call re-encodes the set.)
func BenchmarkBytesPerLease(b *testing.B) {
	for _, perKey := range []int{10, 100} {
		keys := 1_000_000 / perKey
		b.Run(fmt.Sprint("leases=", perKey), func(b *testing.B) {
			for b.Loop() {
				s := newStore(b, Config{})
				var buf [16]byte
				for j := range perKey {
					for i := range keys {
						r := algo.LeaseRequest{Limit: int64(perKey), Duration: 3600 * sec}
						if d, err := s.Acquire(key16(&buf, i), r, t0+int64(j)*10*ms); err != nil || !d.Acquired {
							b.Fatalf("Acquire: %+v, %v", d, err)
						}
					}
				}
				var set int64
				for i := range s.shards {
					s.shards[i].each(func(_ uint32, e entry) {
						if _, size := e.state(); e.kind() == algo.KindLease {
							set += int64(size)
						}
					})
				}
				b.ReportMetric(float64(set)/1e6, "set-B/lease")
				b.ReportMetric(float64(s.Stats().Bytes)/1e6, "accounted-B/lease")
			}
		})
	}
}
