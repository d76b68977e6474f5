package resp

import (
	"strings"
	"testing"
)

// BenchmarkRequestScan: the cost of the bounds check on a 16-deep RL.TOKEN
// pipeline, per command.
func BenchmarkRequestScan(b *testing.B) {
	req := []byte(strings.Repeat("*4\r\n$8\r\nRL.TOKEN\r\n$6\r\nuser:1\r\n$2\r\n10\r\n$4\r\n1000\r\n", 16))
	var r requestScan
	b.SetBytes(int64(len(req)) / 16)
	for b.Loop() {
		if _, err := r.feed(req, DefaultProtoMaxBulkLen, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/command")
}
