package shed

import (
	"slices"
	"testing"
	"time"
)

// service is a model of a process of workers workers each taking base per request:
// with more in flight than workers, the rest queue inside it, and latency grows with
// the in-flight count (Little's law).
type service struct {
	workers int
	base    time.Duration
}

func (s service) latency(inflight int) time.Duration {
	return time.Duration(float64(s.base) * max(1, float64(inflight)/float64(s.workers)))
}

// run feeds g windows of saturated load (always limit in flight) or of load capped at
// offered in flight, and returns the limit after each window.
func run(g *gradient, svc service, windows, offered int, now *time.Time) []float64 {
	var limits []float64
	for range windows {
		inflight := min(offered, int(g.limit))
		for range minSamples {
			g.sample(*now, svc.latency(inflight), inflight)
		}
		*now = now.Add(g.window)
		g.sample(*now, svc.latency(inflight), inflight)
		limits = append(limits, g.limit)
	}
	return limits
}

func newGradient(limit float64) *gradient {
	return &gradient{limit: limit, min: 1, max: 1000, window: DefaultWindow}
}

func TestGradientConvergesToCapacity(t *testing.T) {
	for _, start := range []float64{1, 10, 30, 200} {
		g, now := newGradient(start), t0
		svc := service{workers: 8, base: 10 * time.Millisecond}
		limits := run(g, svc, 100, 1<<30, &now)
		final := median(limits[80:]) // past the probes' dips
		// Capacity 8, headroom √L/2 ≈ 1.6: the limit settles within two headrooms
		// (the in-flight count is whole, the limit not).
		if final < 8 || final > 8+2*headroom(final) {
			t.Errorf("from %v: limit %.2f after 100 windows, want in [8, %.2f]; path %.1f", start, final, 8+2*headroom(final), limits[:20])
		}
	}
}

func TestGradientGrowsQuicklyWhenNotQueueing(t *testing.T) {
	g, now := newGradient(1), t0
	limits := run(g, service{workers: 64, base: 10 * time.Millisecond}, 14, 1<<30, &now)
	if limits[13] < 16 {
		t.Errorf("limit %.1f after 14 windows with no queueing, want ≥ 16: %.1f", limits[13], limits)
	}
}

func TestGradientHoldsWhenAppLimited(t *testing.T) {
	g, now := newGradient(20), t0
	// Only 4 in flight ever, under half the limit: nothing is learned about capacity.
	limits := run(g, service{workers: 2, base: 10 * time.Millisecond}, 20, 4, &now)
	if limits[19] != 20 {
		t.Errorf("limit %.1f, want it held at 20 while the application offers 4", limits[19])
	}
}

func TestGradientRelearnsSlowerService(t *testing.T) {
	g, now := newGradient(10), t0
	run(g, service{workers: 8, base: 10 * time.Millisecond}, 50, 1<<30, &now)
	// The service now takes 20 ms with only 4 workers: the no-load latency drifts up
	// and the limit follows the new capacity.
	limits := run(g, service{workers: 4, base: 20 * time.Millisecond}, 200, 1<<30, &now)
	if final := median(limits[180:]); final < 4 || final > 4+2*headroom(final) {
		t.Errorf("limit %.2f after the service slowed, want about 4 + headroom", final)
	}
}

func TestGradientWindowNeedsSamples(t *testing.T) {
	g := newGradient(10)
	for i := range minSamples - 1 {
		if g.sample(t0.Add(time.Duration(i)*time.Second), time.Second, 10) {
			t.Fatal("the limit moved before a window had its samples")
		}
	}
	if g.mean != 0 {
		t.Fatal("a window closed with too few samples")
	}
}

// median is the middle of v.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
