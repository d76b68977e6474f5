package resp

import (
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// BenchmarkNoteRefused is what RL.TOP's bookkeeping adds to one refused RL.* call,
// from every core at once (the window and its sketches lock): on a few hot keys, and
// on more distinct keys than a sketch holds, where each new key evicts the least.
func BenchmarkNoteRefused(b *testing.B) {
	for _, n := range []int{16, 1024} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			s := &Server{refused: newRefused()}
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = []byte("user:" + strconv.Itoa(i))
			}
			req := algo.Request{Kind: algo.KindToken}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					s.noteRefused(req, keys[i%len(keys)], t0+int64(i))
					i++
				}
			})
		})
	}
}
