package rlcmd

import (
	"testing"

	"github.com/rlserver/rlserver/algo"
)

func BenchmarkParse(b *testing.B) {
	args := split("100 60000 COST 2 RATE 50 peek")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest(algo.KindToken, args, 100_000); err != nil {
			b.Fatal(err)
		}
	}
}
