package shed

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/priority"
)

// The cost per admitted request when nothing is shed, ours against failsafe-go's
// adaptive limiter in the same run (go test -bench . -benchmem ./shed/): the target
// is ≤ 200 ns and 0 allocations.

func BenchmarkAcquireDone(b *testing.B) {
	s, _ := New(Config{MaxLimit: 1 << 20, InitialLimit: 1 << 20, QueueTimeout: time.Second})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := s.Acquire(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			t.Done(time.Now())
		}
	})
}

func BenchmarkHandler(b *testing.B) {
	s, _ := New(Config{MaxLimit: 1 << 20, InitialLimit: 1 << 20, QueueTimeout: time.Second})
	h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), HandlerOptions{})
	r := httptest.NewRequest("GET", "/", nil)
	var w http.ResponseWriter = httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

func BenchmarkFailsafeAdaptive(b *testing.B) {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1<<20, 1<<20).Build()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, ok := l.TryAcquirePermit()
			if !ok {
				b.Fatal("refused")
			}
			p.Record()
		}
	})
}

func BenchmarkFailsafePriority(b *testing.B) {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1<<20, 1<<20).BuildPrioritized(adaptivelimiter.NewPrioritizer())
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := l.AcquirePermitWithPriority(ctx, priority.High)
			if err != nil {
				b.Fatal(err)
			}
			p.Record()
		}
	})
}

// BenchmarkAnchor is the floor any admission pays: two clock reads and two
// lock-unlock pairs, the run's anchor against the box's noise.
func BenchmarkAnchor(b *testing.B) {
	var mu sync.Mutex
	n := 0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			mu.Lock()
			n++
			mu.Unlock()
			_ = time.Since(now)
			mu.Lock()
			n--
			mu.Unlock()
		}
	})
}
