package middleware_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
)

// slicedPolicy is two domains' files: edge decides each descriptor on its own, all
// charges all or none. Windows of a year, so that no window turns during a test
// on the real clock.
var slicedPolicy = map[string]string{
	"edge.yaml": `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {window: 8760h, requests_per_unit: 7}
  - key: api_key
    rate_limit: {window: 8760h, requests_per_unit: 5, algorithm: token}
  - key: shady
    shadow_mode: true
    rate_limit: {window: 8760h, requests_per_unit: 2}
  - key: tenant
    rate_limit: {window: 8760h, requests_per_unit: 300}
  - key: audit
    rate_limit: {window: 8760h, requests_per_unit: 3, algorithm: log}
  - key: bench
    rate_limit: {window: 8760h, requests_per_unit: 1000000000}
`,
	"all.yaml": `domain: all
all_or_nothing: true
descriptors:
  - key: remote_address
    rate_limit: {window: 8760h, requests_per_unit: 4}
  - key: api_key
    rate_limit: {window: 8760h, requests_per_unit: 6}
  - key: shady
    shadow_mode: true
    rate_limit: {window: 8760h, requests_per_unit: 1}
`,
}

// policyProc is an rlserver process running slicedPolicy (-limits on its directory),
// a Client on it, and a redis client to read its INFO.
type policyProc struct {
	proc *launch.Proc
	c    *client.Client
	rdb  *redis.Client
}

func startPolicyProc(t testing.TB) policyProc {
	t.Helper()
	dir := t.TempDir()
	limits := filepath.Join(dir, "limits")
	if err := os.Mkdir(limits, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range slicedPolicy {
		if err := os.WriteFile(filepath.Join(limits, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := launch.RLServer(testenv.RLServerBin(t), dir, "-limits", limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	t.Cleanup(func() { rdb.Close() })
	return policyProc{proc: p, c: networkClient(t, p.Addr, false, testTimeout), rdb: rdb}
}

// calls counts the RL.* commands the server has served, by name ("rl.policy"),
// and their total under "": the round trips.
func (p policyProc) calls(t testing.TB) map[string]int {
	t.Helper()
	info, err := p.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_rl.") {
			continue
		}
		calls, _, _ := strings.Cut(stats, ",")
		v, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("INFO commandstats: %q", line)
		}
		n[strings.TrimPrefix(name, "cmdstat_")] += v
		n[""] += v
	}
	return n
}

// limiter is a Policy Limiter of domain on p's Client, deciding from slices if
// sliced, its handler ok; it returns the Slicer too (nil if not), which the test's
// cleanup closes.
func (p policyProc) limiter(t testing.TB, domain string, sliced bool, descriptors ...string) (http.Handler, *client.Slicer) {
	lim, slicer := p.policyLimiter(t, domain, sliced, middleware.FallbackOpen, descriptors...)
	return lim.Handler(ok), slicer
}

// policyLimiter is limiter's Limiter, failing as fallback says.
func (p policyProc) policyLimiter(t testing.TB, domain string, sliced bool, fallback middleware.Fallback, descriptors ...string) (*middleware.Limiter, *client.Slicer) {
	t.Helper()
	var slicer *client.Slicer
	if sliced {
		var err error
		if slicer, err = p.c.NewSlicer(client.SliceOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { slicer.Close() })
	}
	lim, err := middleware.New(middleware.Config{Client: p.c, Slicer: slicer, Timeout: testTimeout, TrustedProxies: []string{"10.0.0.0/8"},
		Policy: &middleware.Policy{Domain: domain, Descriptors: descriptors}, Fallback: fallback, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return lim, slicer
}

// answer is what a test compares of two answers: the status, the headers but
// Retry-After's value (spread at random) and the reset (the server's and the
// Slicer's clocks may round it a second apart), and the body's code.
func answer(rec *httptest.ResponseRecorder) (string, int) {
	h := rec.Header().Clone()
	reset, _ := strconv.Atoi(h.Get("RateLimit-Reset"))
	for _, k := range []string{"Retry-After", "Ratelimit-Reset", "X-Ratelimit-Reset", "Date"} {
		if h.Get(k) != "" {
			h.Set(k, "set")
		}
	}
	body, _, _ := strings.Cut(rec.Body.String(), `"retryAfterMs"`)
	return strconv.Itoa(rec.Code) + " " + body + " " + headerText(h), reset
}

func headerText(h http.Header) string {
	var b strings.Builder
	h.Write(&b)
	return b.String()
}

// sameAnswers sends the requests to both handlers, one at a time, and fails on the
// first that answers differently; it returns the statuses.
func sameAnswers(t *testing.T, plain, sliced http.Handler, reqs []func() *http.Request) []int {
	t.Helper()
	var codes []int
	for i, mk := range reqs {
		a, b := httptest.NewRecorder(), httptest.NewRecorder()
		plain.ServeHTTP(a, mk())
		sliced.ServeHTTP(b, mk())
		wa, ra := answer(a)
		wb, rb := answer(b)
		if wa != wb || ra-rb > 1 || rb-ra > 1 {
			t.Fatalf("request %d: RL.POLICY answered\n%s(reset %d)\nthe Slicer\n%s(reset %d)", i, wa, ra, wb, rb)
		}
		codes = append(codes, a.Code)
	}
	return codes
}

// from is a request forwarded by a trusted proxy for client ip, with header pairs.
func from(ip string, hdr ...string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "/api", nil)
		r.RemoteAddr = "10.0.0.1:4000"
		r.Header.Set("X-Forwarded-For", ip)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
}

// TestPolicySlicer: the same requests through a Policy Limiter with and without a
// Slicer, on two rlservers running one policy, get the same answers, status and
// headers: each address's 7, each API key's token bucket of 5 (a request without
// the header has no such descriptor), a shadow rule over its limit refusing
// nothing, a descriptor no rule matches passing. The Slicer's server was asked no
// RL.POLICY.
func TestPolicySlicer(t *testing.T) {
	a, b := startPolicyProc(t), startPolicyProc(t)
	descs := []string{"remote_address", "request_headers:X-Api-Key:api_key", "generic_key:on:shady", "generic_key:red:color"}
	plain, _ := a.limiter(t, "edge", false, descs...)
	sliced, _ := b.limiter(t, "edge", true, descs...)
	var reqs []func() *http.Request
	for i := range 40 {
		ip := "203.0.113." + strconv.Itoa(i%3)
		if i%5 == 4 {
			reqs = append(reqs, from(ip))
			continue
		}
		reqs = append(reqs, from(ip, "X-Api-Key", "k"+strconv.Itoa(i%2)))
	}
	codes := sameAnswers(t, plain, sliced, reqs)
	passed := 0
	for _, c := range codes {
		if c == http.StatusOK {
			passed++
		}
	}
	// Each key's 5 of the 32 requests with one (k0 and k1), and the 8 without until
	// their address's 7 ran out: far past the shadow rule's 2.
	if passed < 10 || passed > 21 {
		t.Fatalf("%d of 40 passed: %v", passed, codes)
	}
	if n := b.calls(t); n["rl.policy"] != 0 || n["rl.resolve"] == 0 || n["rl.slice"] == 0 {
		t.Fatalf("the Slicer's server served %v; want RL.RESOLVE and RL.SLICE, no RL.POLICY", n)
	}
}

// TestPolicySlicerRoundTrips: a hot descriptor of 300 a year, 1,200 requests from 4
// goroutines: exactly 300 pass with and without the Slicer, at a round trip per
// request without it and at most one per 4 with it; the server has counted them.
func TestPolicySlicerRoundTrips(t *testing.T) {
	const requests, limit = 1200, 300
	for _, withSlicer := range []bool{false, true} {
		p := startPolicyProc(t)
		h, slicer := p.limiter(t, "edge", withSlicer, "generic_key:acme:tenant")
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range requests / 4 {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, from("203.0.113.1")())
					mu.Lock()
					codes[rec.Code]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if slicer != nil {
			if err := slicer.Close(); err != nil {
				t.Fatal(err)
			}
		}
		n := p.calls(t)
		t.Logf("slicer %v: %v; the server served %v", withSlicer, codes, n)
		if codes[http.StatusOK] != limit || codes[http.StatusTooManyRequests] != requests-limit {
			t.Fatalf("slicer %v: %v; want exactly %d passed", withSlicer, codes, limit)
		}
		switch {
		case !withSlicer && n[""] != requests:
			t.Fatalf("without the Slicer: %d round trips for %d requests", n[""], requests)
		case withSlicer && n[""]*4 > requests:
			t.Fatalf("with the Slicer: %d round trips for %d requests", n[""], requests)
		}
		res, err := p.c.Policy(context.Background(), "edge", client.D("tenant", "acme"))
		if err != nil || res.Allowed || res.Statuses[0].Remaining != 0 {
			t.Fatalf("slicer %v: the server after: %+v, %v; want the %d spent", withSlicer, res, err, limit)
		}
	}
}

// TestPolicySlicerAllOrNothing: an all_or_nothing domain charges all or none from
// slices as RL.POLICY does: an address over its 4 spends nothing of the API key's
// 6, which another address then gets; the shadow rule never refuses.
func TestPolicySlicerAllOrNothing(t *testing.T) {
	a, b := startPolicyProc(t), startPolicyProc(t)
	descs := []string{"remote_address", "request_headers:X-Api-Key:api_key", "generic_key:on:shady"}
	plain, _ := a.limiter(t, "all", false, descs...)
	sliced, _ := b.limiter(t, "all", true, descs...)
	var reqs []func() *http.Request
	for range 6 {
		reqs = append(reqs, from("203.0.113.1", "X-Api-Key", "k"))
	}
	for range 3 {
		reqs = append(reqs, from("203.0.113.2", "X-Api-Key", "k"))
	}
	codes := sameAnswers(t, plain, sliced, reqs)
	want := []int{200, 200, 200, 200, 429, 429, 200, 200, 429}
	if !slices.Equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
}

// TestPolicySlicerLog: a request with a rule a Slicer cannot take (Log) is decided
// by RL.POLICY, a round trip each, with its limit exact.
func TestPolicySlicerLog(t *testing.T) {
	p := startPolicyProc(t)
	h, _ := p.limiter(t, "edge", true, "generic_key:a:audit")
	var codes []int
	for range 5 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, from("203.0.113.1")())
		codes = append(codes, rec.Code)
	}
	if !slices.Equal(codes, []int{200, 200, 200, 429, 429}) {
		t.Fatalf("codes %v", codes)
	}
	if n := p.calls(t); n["rl.policy"] != 5 || n["rl.slice"] != 0 || n["rl.resolve"] != 1 {
		t.Fatalf("the server served %v; want RL.RESOLVE once, then RL.POLICY per request", n)
	}
}

// TestPolicySlicerResolvedTTL: a descriptor set is resolved once a second (a policy
// reloaded at the server applies within it), not once a request.
func TestPolicySlicerResolvedTTL(t *testing.T) {
	p := startPolicyProc(t)
	lim, _ := p.policyLimiter(t, "edge", true, middleware.FallbackOpen, "generic_key:acme:tenant")
	now := time.Unix(1_800_000_000, 0)
	middleware.SetClock(lim, func() time.Time { return now }, nil)
	h := lim.Handler(ok)
	for i, step := range []struct {
		advance  time.Duration
		resolves int
	}{{0, 1}, {0, 1}, {999 * time.Millisecond, 1}, {time.Millisecond, 2}, {0, 2}, {time.Hour, 3}} {
		now = now.Add(step.advance)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, from("203.0.113.1")())
		if n := p.calls(t)["rl.resolve"]; rec.Code != http.StatusOK || n != step.resolves {
			t.Fatalf("request %d: %d, %d RL.RESOLVE; want 200 and %d", i, rec.Code, n, step.resolves)
		}
	}
}

// TestPolicySlicerOutage: with the server gone, a Policy Limiter on a Slicer spends
// the units it holds (on the rules it last resolved, past their second), then
// fails as configured: closed here, every later request refused.
func TestPolicySlicerOutage(t *testing.T) {
	p := startPolicyProc(t)
	lim, slicer := p.policyLimiter(t, "edge", true, middleware.FallbackClosed, "generic_key:acme:tenant")
	now := time.Unix(1_800_000_000, 0)
	middleware.SetClock(lim, func() time.Time { return now }, nil)
	h := lim.Handler(ok)
	serve := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, from("203.0.113.1")())
		return rec.Code
	}
	for i := range 60 {
		if code := serve(); code != http.StatusOK {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	p.proc.Kill()
	now = now.Add(time.Hour) // the rules resolved are stale: RL.RESOLVE is tried, and fails
	before := slicer.Stats()
	codes := map[int]int{}
	for range 100 {
		codes[serve()]++
	}
	after := slicer.Stats()
	used := int(after.Used - before.Used)
	t.Logf("held %d at the kill; after: %v, %d from slices", before.Taken-before.Used, codes, used)
	if used < 1 || codes[http.StatusOK] != used || codes[http.StatusTooManyRequests] != 100-used {
		t.Fatalf("after the kill: %v, %d units from slices; want exactly those passed, the rest refused", codes, used)
	}
	if st := lim.Stats(); st.Failed != uint64(100-used) {
		t.Fatalf("Stats %+v: want the %d refused counted as failures", st, 100-used)
	}
}

// BenchmarkPolicySlicer measures a Policy Limiter's request on one hot descriptor, at
// a limit no request reaches, on an rlserver process: decided by RL.POLICY, and
// from slices (Config.Slicer). Besides ns/op it reports the p50 and p99 of the
// single requests, and the RL.* commands the server served per request.
//
//	go test -run '^$' -bench PolicySlicer -benchtime 20000x ./middleware/
func BenchmarkPolicySlicer(b *testing.B) {
	for _, sliced := range []bool{false, true} {
		name := "rl.policy"
		if sliced {
			name = "slicer"
		}
		b.Run(name, func(b *testing.B) {
			p := startPolicyProc(b)
			h, _ := p.limiter(b, "edge", sliced, "generic_key:acme:bench")
			r := from("203.0.113.1")()
			w := &discard{header: http.Header{}}
			measure(b, func() {
				h.ServeHTTP(w, r)
				if w.status != 0 && w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			})
			b.ReportMetric(float64(p.calls(b)[""])/float64(b.N), "calls/op")
		})
	}
}
