package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of two,
// so a recorded value is off by at most 1/2^subBits (3.1%), as an HDR histogram
// with 2 significant digits, in 2,048 counters whatever the range.
const subBits = 5

// histogram counts durations in log-linear buckets, HDR-style: recording is O(1)
// and memory fixed, where a sorted slice of samples grows with the run.
// The zero value is empty and ready.
type histogram struct {
	counts [(64 - subBits) << subBits]uint64
	total  uint64
}

// bucketOf is the bucket of v ns: v itself below 2^subBits, then 2^subBits
// buckets per power of two.
func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1
	return (e+1)<<subBits + int(v>>e) - 1<<subBits
}

// bucketMid is the middle of bucket i, in ns.
func bucketMid(i int) float64 {
	if i < 1<<subBits {
		return float64(i)
	}
	e := i>>subBits - 1
	low := uint64(i&(1<<subBits-1)+1<<subBits) << e
	return float64(low) + float64(uint64(1)<<e)/2
}

// record counts d, n times (a pipeline's commands share its round trip).
func (h *histogram) record(d time.Duration, n int) {
	h.counts[bucketOf(uint64(max(d, 0)))] += uint64(n)
	h.total += uint64(n)
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// quantile is the duration below which a fraction q of the values fall, in ms;
// NaN when empty.
func (h *histogram) quantile(q float64) float64 {
	if h.total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			return bucketMid(i) / 1e6
		}
	}
	return bucketMid(len(h.counts)-1) / 1e6
}

// cdfPoint is one point of a latency CDF.
type cdfPoint struct {
	Ms       float64 `json:"ms"`
	Fraction float64 `json:"fraction"`
}

// cdf is h's cumulative distribution, one point per non-empty bucket.
func (h *histogram) cdf() []cdfPoint {
	var out []cdfPoint
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		out = append(out, cdfPoint{bucketMid(i) / 1e6, float64(seen) / float64(h.total)})
	}
	return out
}
