package cluster

import (
	"testing"
)

// TestSlot checks answers of a real redis-server 7.0 (CLUSTER KEYSLOT), among them
// the cluster spec's examples and the hash tag rules: the first '{', the first '}'
// after it, and an empty tag hashes the whole key.
func TestSlot(t *testing.T) {
	cases := []struct {
		key  string
		want uint16
	}{
		{"123456789", 12739}, // CRC16/XMODEM's check value 0x31C3, mod 16384
		{"", 0},
		{"foo", 12182},
		{"somekey", 11058},
		{"hello", 866},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // an empty tag: the whole key
		{"foo{{bar}}zap", 4015}, // the tag is "{bar"
		{"{bar", 4015},
		{"foo{bar}{zap}", 5061}, // the first tag only
		{"bar", 5061},
		{"{", 4092},
		{"}{", 12793},
		{"a{b", 13340},
		{"{}", 15257},
		{"a}b{c}", 7365},
	}
	for _, tc := range cases {
		if got := Slot([]byte(tc.key)); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
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

// crc16Bytewise is CRC16 one byte at a time, as Redis's crc16.c: the reference
// the sliced version must match, and its alternative in BenchmarkCRC16.
func crc16Bytewise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Tables[0][byte(crc>>8)^c]
	}
	return crc
}
