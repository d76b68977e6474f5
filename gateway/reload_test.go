package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/policy/watch"
	"github.com/rlserver/rlserver/store"
)

// reloadPolicy is generation gen's policy: both rules named after it, so an answer
// whose two statuses name different generations mixed two policies.
func reloadPolicy(gen int) string {
	return fmt.Sprintf(`domain: edge
descriptors:
  - key: user
    rate_limit: {name: user-%d, unit: hour, requests_per_unit: %d}
  - key: path
    rate_limit: {name: path-%d, unit: hour, requests_per_unit: %d}
`, gen, 1_000_000+gen, gen, 1_000_000+gen)
}

// TestReloadUnderLoad rewrites the policy 100 times (renamed over, as an editor or a
// ConfigMap does) while 32 streams ask: no call fails, and each answer is wholly of one
// policy, the old or the new.
func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.yaml")
	write := func(gen int) {
		tmp := filepath.Join(dir, ".edge.tmp")
		if err := os.WriteFile(tmp, []byte(reloadPolicy(gen)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	pol, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(st, pol)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- watch.Watch(ctx, dir, e, slog.New(slog.DiscardHandler)) }()
	f := startFront(t, Config{Decider: e})
	// One context for every call (ctxT's cleanups would pile up by the 100,000), bounding
	// the whole test.
	callCtx, callCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer callCancel()
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "u"), desc("path", "/p")}}
	generation := func(resp *pb.RateLimitResponse) (int, error) {
		var u, p int
		if _, err := fmt.Sscanf(resp.Statuses[0].CurrentLimit.GetName(), "user-%d", &u); err != nil {
			return 0, err
		}
		if _, err := fmt.Sscanf(resp.Statuses[1].CurrentLimit.GetName(), "path-%d", &p); err != nil {
			return 0, err
		}
		if u != p {
			return 0, fmt.Errorf("a mix of generations %d and %d: %v", u, p, resp)
		}
		return u, nil
	}
	var current atomic.Int64 // the generation last seen in force
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				low := current.Load()
				resp, err := f.client.ShouldRateLimit(callCtx, req)
				calls.Add(1)
				var gen int
				if err == nil {
					gen, err = generation(resp)
				}
				// An answer is of the policy in force when the call began, or a newer one.
				if err == nil && int64(gen) < low {
					err = fmt.Errorf("generation %d after %d was seen in force", gen, low)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	// The streams stop however the test ends, so that a failure here does not slow
	// the tests after it.
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	for gen := 1; gen <= 100; gen++ {
		write(gen)
		written := time.Now()
		deadline := written.Add(10 * time.Second)
		for {
			// Watch may not watch yet when the first rewrite lands: write again.
			if time.Since(written) > time.Second {
				write(gen)
				written = time.Now()
			}
			resp, err := f.client.ShouldRateLimit(callCtx, req)
			if err != nil {
				t.Fatal(err)
			}
			if g, err := generation(resp); err == nil && g == gen {
				current.Store(int64(gen))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("generation %d not in force after 10 s", gen)
			}
		}
	}
	halt()
	cancel()
	if err := <-watched; err != nil {
		t.Errorf("Watch: %v", err)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed or mixed policies; first: %v", n, calls.Load(), firstErr.Load())
	}
	t.Logf("100 reloads under %d calls", calls.Load())
}
