package cluster

import (
	"fmt"
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
