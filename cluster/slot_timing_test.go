package cluster

import (
	"fmt"
	"testing"
)

// crc16Bytewise is CRC16 one byte at a time, as Redis's crc16.c: the reference
// the sliced version must match, and its alternative in BenchmarkCRC16.
func crc16Bytewise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Tables[0][byte(crc>>8)^c]
	}
	return crc
}

func TestCRC16MatchesBytewise(t *testing.T) {
	b := make([]byte, 100)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	for n := range len(b) + 1 {
		if got, want := crc16(b[:n]), crc16Bytewise(b[:n]); got != want {
			t.Errorf("crc16 of %d bytes: %#04x, byte by byte %#04x", n, got, want)
		}
	}
}

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
