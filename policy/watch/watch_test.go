package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/store"
)

// version is a policy whose two rules both allow n per minute.
func version(n int) string {
	return fmt.Sprintf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: %d}\n  - key: b\n    rate_limit: {unit: minute, requests_per_unit: %d}\n", n, n)
}

// limitOf is the limit in force for descriptor a, -1 if none, as the policy's dump
// (MarshalText) says it.
func limitOf(e *countingEngine) int64 {
	text, _ := e.Policy().MarshalText()
	m := regexp.MustCompile(`(?m)^  d\.a: (\d+) per `).FindSubmatch(text)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// countingEngine is an engine.Engine whose loads are counted, as its metrics count them.
type countingEngine struct {
	*engine.Engine
	loadsOK, loadErr atomic.Int64
}

// LoadResult counts the load, then has the engine count it.
func (e *countingEngine) LoadResult(err error) {
	if err != nil {
		e.loadErr.Add(1)
	} else {
		e.loadsOK.Add(1)
	}
	e.Engine.LoadResult(err)
}

// t0 is a time, in µs, at the start of a minute.
const t0 = int64(1_700_000_060) * 1e6

// desc is a descriptor of key, value pairs.
func desc(kv ...string) policy.Descriptor {
	var d policy.Descriptor
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, policy.Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// startWatch loads path into a new engine and watches it, returning once the watch is
// set up, with the log the watch writes to.
func startWatch(t *testing.T, path string) (*countingEngine, *testenv.Buffer) {
	t.Helper()
	p, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	e := &countingEngine{Engine: engine.New(st, p)}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testenv.Buffer{}
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- watch(ctx, path, e, slog.New(slog.NewTextHandler(logs, nil)), ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch ended with %v", err)
		}
	})
	return e, logs
}

// within waits up to d for cond, checking every millisecond, and fails if it never holds.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWatchWrittenInPlace: the file rewritten where it is is in force within a second;
// a bad one leaves the old policy, a log line naming the file and a load error.
func TestWatchWrittenInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, path, version(1))
	e, logs := startWatch(t, path)
	writeFile(t, path, version(2))
	within(t, time.Second, "rewritten policy", func() bool { return limitOf(e) == 2 })

	before := e.Policy()
	writeFile(t, path, "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight}\n")
	within(t, time.Second, "load error counted", func() bool { return e.loadErr.Load() > 0 })
	if e.Policy() != before {
		t.Fatal("a bad file replaced the policy")
	}
	if l := logs.String(); !strings.Contains(l, "p.yaml:4") || !strings.Contains(l, "invalid rate limit unit 'fortnight'") {
		t.Fatalf("log does not name the error: %s", l)
	}
	writeFile(t, path, version(3))
	within(t, time.Second, "fixed policy", func() bool { return limitOf(e) == 3 })
	// The watch puts the policy in force, then reports the load: the count may follow.
	within(t, time.Second, "two good loads counted", func() bool { return e.loadsOK.Load() >= 2 })
}

// TestWatchRenamedOver: a file written beside and renamed over the policy.
func TestWatchRenamedOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeFile(t, path, version(1))
	e, _ := startWatch(t, path)
	for n := 2; n <= 4; n++ {
		tmp := filepath.Join(dir, fmt.Sprintf(".p.yaml.%d", n))
		writeFile(t, tmp, version(n))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		within(t, time.Second, fmt.Sprintf("version %d", n), func() bool { return limitOf(e) == int64(n) })
	}
}

// TestWatchConfigMapSwap: Kubernetes' ConfigMap volume, where config.yaml links to
// ..data/config.yaml and an update swaps the ..data symlink to a new timestamped
// directory, watched as the directory and as the file.
func TestWatchConfigMapSwap(t *testing.T) {
	for _, watchFile := range []bool{false, true} {
		t.Run(fmt.Sprintf("file=%v", watchFile), func(t *testing.T) {
			dir := t.TempDir()
			gen := func(n int) {
				t.Helper()
				ts := filepath.Join(dir, fmt.Sprintf("..2026_12_01_22_00_%02d.%d", n, n))
				if err := os.Mkdir(ts, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(ts, "config.yaml"), version(n))
				tmp := filepath.Join(dir, "..data_tmp")
				if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
					t.Fatal(err)
				}
			}
			gen(1)
			if err := os.Symlink(filepath.Join("..data", "config.yaml"), filepath.Join(dir, "config.yaml")); err != nil {
				t.Fatal(err)
			}
			path := dir
			if watchFile {
				path = filepath.Join(dir, "config.yaml")
			}
			e, _ := startWatch(t, path)
			if limitOf(e) != 1 {
				t.Fatalf("initial limit %d", limitOf(e))
			}
			for n := 2; n <= 3; n++ {
				gen(n)
				old, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("..2026_12_01_22_00_%02d.*", n-1)))
				for _, o := range old {
					os.RemoveAll(o) // as the kubelet removes the old generation
				}
				within(t, time.Second, fmt.Sprintf("generation %d", n), func() bool { return limitOf(e) == int64(n) })
			}
		})
	}
}

// TestReloadUnderLoad rewrites the policy 100 times while 32 goroutines decide: no
// call fails, and every response is wholly from one policy, one in force during the
// call (both statuses carry the same limit, between the versions before and after).
func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	const base = 1_000_000
	writeFile(t, path, version(base))
	e, _ := startWatch(t, path)
	var stop atomic.Bool
	var calls, bad atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			req := policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("a", fmt.Sprint(g)), desc("b", fmt.Sprint(g))}}
			now := t0
			for !stop.Load() {
				lo := limitOf(e)
				r, err := e.Decide(req, now)
				hi := limitOf(e)
				calls.Add(1)
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					bad.Add(1)
					continue
				}
				l0, l1 := int64(r.Statuses[0].Limit.RequestsPerUnit), int64(r.Statuses[1].Limit.RequestsPerUnit)
				if r.Overall != policy.CodeOK || l0 != l1 || l0 < lo || l0 > hi {
					firstErr.CompareAndSwap(nil, fmt.Sprintf("limits %d, %d with %d..%d in force", l0, l1, lo, hi))
					bad.Add(1)
				}
				now += 60e6 // a new window each call: never over the limit
				runtime.Gosched()
			}
		}(g)
	}
	for n := 1; n <= 100; n++ {
		tmp := filepath.Join(dir, ".p.yaml.tmp")
		writeFile(t, tmp, version(base+n))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		// The one-second bound is the other tests'; here 32 goroutines keep every core
		// busy, and a shared CI machine may schedule the watcher late.
		within(t, 10*time.Second, fmt.Sprintf("version %d", n), func() bool { return limitOf(e) == int64(base+n) })
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d calls failed or mixed policies; first: %v", bad.Load(), calls.Load(), firstErr.Load())
	}
	if calls.Load() < 1000 {
		t.Fatalf("only %d calls during the reloads", calls.Load())
	}
	t.Logf("%d calls across 100 reloads, %d loads ok", calls.Load(), e.loadsOK.Load())
}
