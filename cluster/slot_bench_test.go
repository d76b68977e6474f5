package cluster

import (
	"fmt"
	"testing"
)

// BenchmarkCRC16 pits eight bytes a step against one, over key lengths typical
// of rate-limit keys.
func BenchmarkCRC16(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + i%26)
		}
		for _, alt := range []struct {
			name string
			f    func([]byte) uint16
		}{{"bytewise", crc16Bytewise}, {"slice8", crc16}} {
			b.Run(fmt.Sprintf("%s/len%d", alt.name, n), func(b *testing.B) {
				var sum uint16
				for b.Loop() {
					sum += alt.f(key)
				}
				if sum == 0xffff {
					b.Log(sum)
				}
			})
		}
	}
}

// BenchmarkSlot is the price of the slot check per key in cluster mode.
func BenchmarkSlot(b *testing.B) {
	for _, key := range []string{"user:12345", "{tenant:42}:api:/v1/orders", "a-longer-key-of-sixty-four-bytes-such-as-a-session-id-0123456789"} {
		b.Run(fmt.Sprintf("len%d", len(key)), func(b *testing.B) {
			k := []byte(key)
			var sum uint16
			for b.Loop() {
				sum += Slot(k)
			}
			if sum == 0xffff {
				b.Log(sum) // keeps sum alive
			}
		})
	}
}
