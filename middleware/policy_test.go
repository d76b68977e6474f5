package middleware_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/gateway"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/resp"
)

// edgePolicy is the policy file of a gateway and its Go service: 5 a minute per
// client address, 5 a minute per API key.
const edgePolicy = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// edgeAt is 0.5 s past a minute: a fixed window has 59.5 s to run, Retry-After 60.
var edgeAt = time.Date(2026, 12, 1, 12, 0, 0, 500_000_000, time.UTC).UnixMicro()

// policyServer is one rlserver as cmd/rlserver wires -limits and -http-addr: the
// policy file loaded, RESP for the middleware's Client and /check on the same engine
// and clock, frozen at edgeAt. It returns the Client and /check's URL.
func policyServer(t *testing.T) (*client.Client, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(path, []byte(edgePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, addr := testenv.Serve(t, resp.Config{Policy: p})
	if !srv.Core().SetClock(edgeAt) {
		t.Fatal("SetClock refused")
	}
	front, err := gateway.New(gateway.Config{Decider: srv.Policy(), Now: srv.Core().Now, Serving: srv.Core().IsPrimary})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go front.ServeHTTP(ln)
	t.Cleanup(func() { front.Close() })
	return networkClient(t, addr, false, 5*sec), "http://" + ln.Addr().String() + "/check?domain=edge"
}

// policyLimiter is a Limiter on c by the edge policy's descriptors; served counts
// the requests its handler saw.
func policyLimiter(t *testing.T, c *client.Client, served *atomic.Int64, descriptors ...string) http.Handler {
	t.Helper()
	lim, err := middleware.New(middleware.Config{Client: c, Timeout: testTimeout, TrustedProxies: []string{"10.0.0.0/8"},
		Policy: &middleware.Policy{Domain: "edge", Descriptors: descriptors}})
	if err != nil {
		t.Fatal(err)
	}
	return lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		ok(w, r)
	}))
}

// serveOne sends one request from peer with the header pairs hdr.
func serveOne(h http.Handler, peer string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/api", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// checkAnswer checks the answer to the i-th request of a burst on 5 a minute: 200
// with the remaining, or 429 with Retry-After 1..61 (at most 60 s, spread by up to 1 s); RateLimit-* and X-RateLimit-*
// on both, as /check gives them.
func checkAnswer(t *testing.T, i, code int, h http.Header) {
	t.Helper()
	want, remaining := http.StatusOK, 4-i
	if i >= 5 {
		want, remaining = http.StatusTooManyRequests, 0
	}
	if code != want {
		t.Fatalf("request %d: %d, want %d", i, code, want)
	}
	for _, name := range []string{"RateLimit", "X-RateLimit"} {
		if l, r := h.Get(name+"-Limit"), h.Get(name+"-Remaining"); l != "5" || r != strconv.Itoa(remaining) {
			t.Errorf("request %d: %s-Limit %q, -Remaining %q; want 5 and %d", i, name, l, r, remaining)
		}
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); want == http.StatusTooManyRequests && (err != nil || s < 1 || s > 61) {
		t.Errorf("request %d: Retry-After %q, want 1..61 (at most 60 s, spread)", i, h.Get("Retry-After"))
	} else if want == http.StatusOK && h.Get("Retry-After") != "" {
		t.Errorf("request %d: Retry-After %q on a 200", i, h.Get("Retry-After"))
	}
}

// TestPolicyBurst: on the policy's 5 a minute per client address, a burst of 8 from
// one address (forwarded by a trusted proxy) gets 5 through and 3 × 429; another
// address gets through; the handler saw exactly those.
func TestPolicyBurst(t *testing.T) {
	c, _ := policyServer(t)
	var served atomic.Int64
	h := policyLimiter(t, c, &served, "remote_address")
	for i := range 8 {
		rec := serveOne(h, "10.0.0.1:4000", "X-Forwarded-For", "203.0.113.7")
		checkAnswer(t, i, rec.Code, rec.Header())
		if i >= 5 && !strings.HasPrefix(rec.Body.String(), `{"error":"rate_limited","retryAfterMs":`) {
			t.Errorf("request %d: body %q", i, rec.Body.String())
		}
	}
	if rec := serveOne(h, "198.51.100.9:4000"); rec.Code != 200 || rec.Header().Get("RateLimit-Remaining") != "4" {
		t.Fatalf("another address: %d, RateLimit-Remaining %q; want 200, 4", rec.Code, rec.Header().Get("RateLimit-Remaining"))
	}
	if n := served.Load(); n != 6 {
		t.Fatalf("the handler saw %d requests, want the 5 admitted and the other address's", n)
	}
}

// TestPolicyHeaderDropped: per API key, a second key gets through; a request without
// the header has its descriptor dropped, as Envoy drops it: with no other descriptor
// nothing is asked, and the other descriptors still apply.
func TestPolicyHeaderDropped(t *testing.T) {
	c, _ := policyServer(t)
	var served atomic.Int64
	h := policyLimiter(t, c, &served, "request_headers:X-Api-Key:api_key")
	for i := range 8 {
		rec := serveOne(h, "203.0.113.7:4000", "X-Api-Key", "k1")
		checkAnswer(t, i, rec.Code, rec.Header())
	}
	if rec := serveOne(h, "203.0.113.7:4000", "X-Api-Key", "k2"); rec.Code != 200 {
		t.Fatalf("another key: %d", rec.Code)
	}
	for range 8 {
		if rec := serveOne(h, "203.0.113.7:4000"); rec.Code != 200 || rec.Header().Get("RateLimit-Limit") != "" {
			t.Fatalf("no key: %d, RateLimit-Limit %q; want 200 unlimited, without headers", rec.Code, rec.Header().Get("RateLimit-Limit"))
		}
	}
	both := policyLimiter(t, c, &served, "remote_address", "request_headers:X-Api-Key:api_key")
	for i := range 8 { // k1 is used up, but without the header only the address counts
		rec := serveOne(both, "192.0.2.44:4000")
		checkAnswer(t, i, rec.Code, rec.Header())
	}
	if rec := serveOne(both, "192.0.2.45:4000", "X-Api-Key", "k1"); rec.Code != 429 {
		t.Fatalf("a fresh address with the used-up key: %d, want 429", rec.Code)
	}
	if rec := serveOne(both, "192.0.2.46:4000", "X-Api-Key", strings.Repeat("k", policy.MaxValueLen+1)); rec.Code != 400 {
		t.Fatalf("a key over %d bytes: %d %q, want 400", policy.MaxValueLen, rec.Code, rec.Body.String())
	}
}

// TestPolicySharedWithCheck: one rlserver, one policy file, a gateway's /check and
// the middleware: requests through both count against the one limit.
func TestPolicySharedWithCheck(t *testing.T) {
	c, checkURL := policyServer(t)
	var served atomic.Int64
	h := policyLimiter(t, c, &served, "remote_address")
	viaCheck := func() (int, http.Header) {
		req, err := http.NewRequest("GET", checkURL+"&descriptor=remote_address", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Real-IP", "203.0.113.7") // the gateway's client; the gateway is on loopback
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	viaMiddleware := func() (int, http.Header) {
		rec := serveOne(h, "203.0.113.7:4000")
		return rec.Code, rec.Header()
	}
	for i, ask := range []func() (int, http.Header){viaMiddleware, viaCheck, viaMiddleware, viaCheck, viaMiddleware, viaCheck, viaMiddleware} {
		code, hdr := ask()
		checkAnswer(t, i, code, hdr)
	}
}

// TestPolicyFails: rlserver unreachable, the request is served (FallbackOpen) or
// refused with Retry-After 1 (FallbackClosed), and counted as failed.
func TestPolicyFails(t *testing.T) {
	dead := networkClient(t, testenv.DeadAddr(t), false, 5*sec)
	for _, fb := range []middleware.Fallback{middleware.FallbackOpen, middleware.FallbackClosed} {
		lim, err := middleware.New(middleware.Config{Client: dead, Timeout: testTimeout, Fallback: fb, Logger: slog.New(slog.DiscardHandler),
			Policy: &middleware.Policy{Domain: "edge", Descriptors: []string{"remote_address"}}})
		if err != nil {
			t.Fatal(err)
		}
		rec := serveOne(lim.Handler(ok), "203.0.113.7:4000")
		want := map[middleware.Fallback]int{middleware.FallbackOpen: 200, middleware.FallbackClosed: 429}[fb]
		if rec.Code != want || fb == middleware.FallbackClosed && !waitWithin(rec.Header().Get("Retry-After"), "1", sec) {
			t.Errorf("%v: %d, Retry-After %q; want %d", fb, rec.Code, rec.Header().Get("Retry-After"), want)
		}
		if s := lim.Stats(); s != (middleware.Stats{Failed: 1}) {
			t.Errorf("%v: Stats() = %+v, want 1 failed", fb, s)
		}
	}
}

// TestPolicyConfig: a policy configuration that cannot work is refused by New, with
// the reason.
func TestPolicyConfig(t *testing.T) {
	c := networkClient(t, testenv.DeadAddr(t), false, 5*sec) // New makes no call
	good := func() *middleware.Policy {
		return &middleware.Policy{Domain: "edge", Descriptors: []string{"remote_address", "request_headers:X-Api-Key:api_key,path"}}
	}
	withPolicy := func(p *middleware.Policy, edit func(*middleware.Config)) middleware.Config {
		cfg := middleware.Config{Client: c, Policy: p}
		if edit != nil {
			edit(&cfg)
		}
		return cfg
	}
	bad := func(edit func(*middleware.Policy)) *middleware.Policy {
		p := good()
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name string
		cfg  middleware.Config
		want string // "" when valid
	}{
		{"valid", withPolicy(good(), nil), ""},
		{"empty domain", withPolicy(bad(func(p *middleware.Policy) { p.Domain = "" }), nil), "Config.Policy.Domain is empty"},
		{"unknown action", withPolicy(bad(func(p *middleware.Policy) { p.Descriptors[1] = "cookie:session" }), nil),
			`Config.Policy.Descriptors[1]: action: bad descriptor: "cookie:session": unknown action`},
		{"bad action", withPolicy(bad(func(p *middleware.Policy) { p.Descriptors[0] = "request_headers:X-Api-Key" }), nil),
			"want request_headers:HEADER:KEY"},
		{"no descriptors", withPolicy(bad(func(p *middleware.Policy) { p.Descriptors = nil }), nil), "nothing to limit"},
		{"65 descriptors", withPolicy(bad(func(p *middleware.Policy) {
			p.Descriptors = strings.Split(strings.Repeat("host ", 65)[:65*5-1], " ")
		}), nil), "65 descriptors, at most 64"},
		{"and dimensions", withPolicy(good(), func(cfg *middleware.Config) {
			cfg.Dimensions = []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(1, sec)}}
		}), "leave Dimensions, Concurrency, User, Route and Prefix unset"},
		{"and a prefix", withPolicy(good(), func(cfg *middleware.Config) { cfg.Prefix = "app:" }), "leave Dimensions"},
		{"local fallback", withPolicy(good(), func(cfg *middleware.Config) { cfg.Fallback = middleware.FallbackLocal }),
			"use FallbackOpen or FallbackClosed"},
		{"embedded client", withPolicy(good(), func(cfg *middleware.Config) { cfg.Client = embeddedClient(t, false) }),
			"needs a Client on rlserver"},
		{"bad proxy", withPolicy(good(), func(cfg *middleware.Config) { cfg.TrustedProxies = []string{"10.0.0.0/33"} }),
			`trusted proxy "10.0.0.0/33"`},
	} {
		_, err := middleware.New(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
