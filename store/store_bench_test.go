package store

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/offheap"
)

// key16 writes the 16-byte key of user i, "user:00000000042", into buf.
func key16(buf *[16]byte, i int) []byte {
	copy(buf[:], "user:")
	for p := 15; p >= 5; p-- {
		buf[p] = byte('0' + i%10)
		i /= 10
	}
	return buf[:]
}

// benchRequest is the request the memory benchmarks store: limit 100 per minute.
func benchRequest(kind algo.Kind) algo.Request {
	r := request(kind, 100, 60*sec)
	if kind == algo.KindLeaky {
		r.Queue = 0
	}
	return r
}

// buildKeys stores n keys of kind with 16-byte names, one call each at one instant
// (a token bucket hit once is full again 600 ms later). RL.LOG keys get 100 entries 600 ms apart (limit 100 per minute, all still in
// the window), written straight through the path Do takes once algo.Log has decided:
// going through Do would cost 100 calls per key, each decoding the whole log.
func buildKeys(tb testing.TB, s *Store, kind algo.Kind, n int) {
	var buf [16]byte
	r := benchRequest(kind)
	entries := make([]algo.LogEntry, 100)
	for i := range n {
		key := key16(&buf, i)
		if kind != algo.KindLog {
			if d, err := s.Do(key, r, t0); err != nil || !d.Write {
				tb.Fatalf("Do: %+v, %v", d, err)
			}
			continue
		}
		for j := range entries {
			entries[j] = algo.LogEntry{TS: t0 + int64(j)*600*ms, Cost: 1}
		}
		last := entries[len(entries)-1].TS
		sh, tag := s.locate(key, last)
		sh.writeLog(keyAt{key: key, tag: tag, pos: -1}, entries, last+r.Window, 0)
		sh.mu.Unlock()
	}
}

// buildLogsThroughDo builds n RL.LOG keys as live traffic would, through Do and
// together: 100 rounds, each one call per key, 600 ms apart. The logs pass through
// the size classes side by side, the case where a class's pages must go back.
func buildLogsThroughDo(tb testing.TB, s *Store, n int) {
	var buf [16]byte
	r := benchRequest(algo.KindLog)
	for round := range 100 {
		for i := range n {
			if d, err := s.Do(key16(&buf, i), r, t0+int64(round)*600*ms+int64(i)); err != nil || !d.Allowed {
				tb.Fatalf("Do: %+v, %v", d, err)
			}
		}
	}
}

// usedBytes is the Go heap after a GC plus the off-heap memory handed out: the
// store's arrays and pages live off the heap (internal/offheap).
func usedBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + uint64(offheap.Bytes())
}

// memoryCases are the stores the memory benchmarks build.
var memoryCases = []struct {
	name  string
	kind  algo.Kind
	n     int
	build func(tb testing.TB, s *Store, n int)
}{
	{"fixed", algo.KindFixed, 1_000_000, nil},
	{"slide", algo.KindSlide, 1_000_000, nil},
	{"token", algo.KindToken, 1_000_000, nil},
	{"gcra", algo.KindGCRA, 1_000_000, nil},
	{"leaky", algo.KindLeaky, 1_000_000, nil},
	{"throttle", algo.KindThrottle, 1_000_000, nil},
	{"log100", algo.KindLog, 1_000_000, nil},
	{"log100-through-Do", algo.KindLog, 100_000, buildLogsThroughDo},
}

// buildCase builds memory case i in s.
func buildCase(tb testing.TB, s *Store, i int) {
	c := memoryCases[i]
	if c.build != nil {
		c.build(tb, s, c.n)
	} else {
		buildKeys(tb, s, c.kind, c.n)
	}
	if got := s.Stats().Keys; got != c.n {
		tb.Fatalf("%s: %d keys, want %d", c.name, got, c.n)
	}
}

// BenchmarkBytesPerKey stores 1M keys with 16-byte names (100k for the RL.LOG build
// through Do) and reports what they cost: B/key from the Go heap after a GC and the
// off-heap memory handed out,
// accounted-B/key from Stats.Bytes, and rss-B/key from a child process's VmRSS
// (after a GC and debug.FreeOSMemory), which also counts the runtime's own overhead.
// Run it with -benchtime=1x: one iteration builds the whole store.
func BenchmarkBytesPerKey(b *testing.B) {
	for i, c := range memoryCases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				before := usedBytes()
				s := newStore(b, Config{})
				buildCase(b, s, i)
				heap := usedBytes() - before
				b.ReportMetric(float64(heap)/float64(c.n), "B/key")
				b.ReportMetric(float64(s.Stats().Bytes)/float64(c.n), "accounted-B/key")
				s.Flush() // now, not when a cleanup gets to it in the next case's measurement
			}
			b.ReportMetric(float64(childRSS(b, i))/float64(c.n), "rss-B/key")
		})
	}
}

const childEnv = "RLSTORE_BYTES_CHILD"

// childRSS re-runs the test binary to build memory case i in a new process and
// returns the growth of its resident set.
func childRSS(b *testing.B, i int) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBytesChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(i))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "rss-delta "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("child said no rss-delta:\n%s", out)
	return 0
}

// TestBytesChild is BenchmarkBytesPerKey's child process; it runs only there.
func TestBytesChild(t *testing.T) {
	arg := os.Getenv(childEnv)
	if arg == "" {
		t.Skip("run by BenchmarkBytesPerKey")
	}
	i, err := strconv.Atoi(arg)
	if err != nil {
		t.Fatal(err)
	}
	before := vmRSS(t)
	s := newStore(t, Config{})
	buildCase(t, s, i)
	runtime.GC()
	debug.FreeOSMemory()
	fmt.Printf("rss-delta %d\n", vmRSS(t)-before)
	runtime.KeepAlive(s)
}

// vmRSS returns the process's resident set in bytes, from /proc/self/status.
func vmRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkDo measures one call of each algorithm: on a single key, and on random
// keys among 1M (built first), serially and from all cores. Limit 100 per second;
// the single key gets a call every 10 ms, so it stays at its limit (RL.LOG holds 100
// entries), and each of the 1M keys a call about every second of simulated time.
func BenchmarkDo(b *testing.B) {
	const many = 1_000_000
	// Every kind on one key first: for a few hundred ms after a 1M-key build a call on
	// one key ran up to twice as long here (not after a 2 s pause, and GOGC=off did
	// not help: the memory the build's growing arrays unmapped, not the collector).
	for _, keys := range []int{1, many} {
		for _, kind := range kinds {
			r := request(kind, 100, sec)
			step := 10 * ms
			if keys == many {
				step = 1
			}
			s := newStore(b, Config{})
			var buf [16]byte
			for i := range keys {
				s.Do(key16(&buf, i), r, t0)
			}
			clock := t0 // the store's time goes forward across runs
			b.Run(fmt.Sprintf("%s/keys=%d/serial", kind, keys), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					clock += step
					s.Do(key16(&buf, rng.IntN(keys)), r, clock)
				}
			})
			b.Run(fmt.Sprintf("%s/keys=%d/parallel", kind, keys), func(b *testing.B) {
				var mu sync.Mutex
				start := clock
				b.RunParallel(func(pb *testing.PB) {
					var buf [16]byte
					rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
					now := start // each goroutine's clock runs at about the same pace
					for pb.Next() {
						now += step
						s.Do(key16(&buf, rng.IntN(keys)), r, now)
					}
					mu.Lock()
					clock = max(clock, now)
					mu.Unlock()
				})
			})
		}
	}
}
