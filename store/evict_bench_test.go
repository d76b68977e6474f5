package store

import (
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkCreateAtBudget: new keys into a full store, each evicting the one due
// soonest, against the same creates with no bound.
func BenchmarkCreateAtBudget(b *testing.B) {
	for _, bounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("maxmemory=%v", bounded), func(b *testing.B) {
			cfg := Config{}
			if bounded {
				cfg.MaxMemory = 64 << 20 // ~1M keys over 64 shards
			}
			s := newStore(b, cfg)
			keys := make([][]byte, 1<<21)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "user:%011d", i)
			}
			r := request(algo.KindToken, 10, 3600*sec) // fresh 6 minutes after a call
			b.ResetTimer()
			for i := range b.N {
				// Distinct deadlines: a later key is fresh later.
				if _, err := s.Do(keys[i%len(keys)], r, t0+int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Stats().Evicted)/float64(b.N), "evictions/op")
		})
	}
}
