package gateway

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// checkPolicy is the policy of the /check tests and of the gateways' (cmd/rlserver).
const checkPolicy = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /once
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: method
    value: DELETE
    rate_limit: {unit: minute, requests_per_unit: 1}
`

// checkAt is 0.5 s past a minute: a fixed window has 59.5 s to run, Retry-After 60.
var checkAt = time.Date(2026, 12, 1, 12, 0, 0, 500_000_000, time.UTC).UnixMicro()

// check sends one /check with the query and headers, and returns the response with
// its body read.
func check(t *testing.T, addr, query string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+"/check?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestCheckBurst: 8 requests of one client address (X-Real-IP from a trusted peer) on
// 5 a minute: 5 × 200 with an empty body, then 3 × 429 with Retry-After 60 (59.5 s
// rounded up); RateLimit-* and X-RateLimit-* on every one; another address passes.
func TestCheckBurst(t *testing.T) {
	e, _ := newEngine(t, checkPolicy)
	f := startFront(t, Config{Decider: e, Now: func() int64 { return checkAt }})
	for i := range 8 {
		resp, body := check(t, f.httpAddr, "domain=edge&descriptor=remote_address", "X-Real-IP", "203.0.113.7")
		want, remaining := http.StatusOK, 4-i
		if i >= 5 {
			want, remaining = http.StatusTooManyRequests, 0
		}
		if resp.StatusCode != want || body != "" {
			t.Fatalf("request %d: %d %q, want %d and no body", i, resp.StatusCode, body, want)
		}
		for _, p := range []string{"RateLimit-", "X-RateLimit-"} {
			h := resp.Header
			if h.Get(p+"Limit") != "5" || h.Get(p+"Remaining") != strconv.Itoa(remaining) || h.Get(p+"Reset") != "60" {
				t.Errorf("request %d: %sLimit/Remaining/Reset %q %q %q, want 5 %d 60", i, p, h.Get(p+"Limit"), h.Get(p+"Remaining"), h.Get(p+"Reset"), remaining)
			}
		}
		// 60 s to the window's end, spread by up to spread.MaxJitter.
		if ra := resp.Header.Get("Retry-After"); (i >= 5) != (ra == "60" || ra == "61") {
			t.Errorf("request %d: Retry-After %q, want 60 or 61", i, ra)
		}
	}
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=remote_address", "X-Forwarded-For", "198.51.100.1, 127.0.0.1"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Remaining") != "4" {
		t.Fatalf("another address: %d, remaining %q", resp.StatusCode, resp.Header.Get("RateLimit-Remaining"))
	}
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=remote_address&status=403", "X-Real-IP", "203.0.113.7"); resp.StatusCode != 403 || !slices.Contains([]string{"60", "61"}, resp.Header.Get("Retry-After")) {
		t.Fatalf("status=403: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestCheckActions: each action's entry as the policy's keys see it.
func TestCheckActions(t *testing.T) {
	e, st := newEngine(t, checkPolicy)
	f := startFront(t, Config{Decider: e, Now: func() int64 { return checkAt }})
	// A missing header drops the descriptor: nothing asked, 200 without headers.
	resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=request_headers:X-Api-Key:api_key")
	if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "" || st.Len(checkAt) != 0 {
		t.Fatalf("missing header: %d %v, %d keys", resp.StatusCode, resp.Header, st.Len(checkAt))
	}
	for i := range 6 {
		resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=request_headers:X-Api-Key:api_key", "X-Api-Key", "k1")
		if (resp.StatusCode == 200) != (i < 5) {
			t.Fatalf("api key request %d: %d", i, resp.StatusCode)
		}
	}
	// path from each gateway's header, query stripped: one /once a minute.
	for _, h := range []string{"X-Original-URI", "X-Forwarded-Uri", "X-Forwarded-Prefix"} {
		if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=path", h, "/once?a="+h); resp.StatusCode != map[bool]int{true: 200, false: 429}[h == "X-Original-URI"] {
			t.Fatalf("%s: /once: %d", h, resp.StatusCode)
		}
	}
	// Envoy's ext_authz: the original URI appended to path_prefix, after uri=.
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=path&uri=/once?a=1&b=2"); resp.StatusCode != 429 {
		t.Fatalf("uri=/once: %d, want 429 (the third /once)", resp.StatusCode)
	}
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=path&uri=/other?domain=x"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "" {
		t.Fatalf("uri=/other: %d %v, want 200 without a rule", resp.StatusCode, resp.Header)
	}
	// No path header: the descriptor is dropped (the subrequest's own path is ours).
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=path"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "" {
		t.Fatalf("no path: %d", resp.StatusCode)
	}
	// method from X-Forwarded-Method, else the subrequest's.
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=method", "X-Forwarded-Method", "DELETE"); resp.StatusCode != 200 {
		t.Fatalf("first DELETE: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("DELETE", "http://"+f.httpAddr+"/check?domain=edge&descriptor=method", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 429 {
		t.Fatalf("second DELETE: %v %v", resp, err)
	}
	// hits=0 asks without spending.
	for range 3 {
		if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=generic_key:g:api_key&hits=0"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Remaining") != "5" {
			t.Fatalf("hits=0: %d remaining %q", resp.StatusCode, resp.Header.Get("RateLimit-Remaining"))
		}
	}
	if resp, _ := check(t, f.httpAddr, "domain=edge&descriptor=generic_key:g:api_key&hits=3"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Remaining") != "2" {
		t.Fatalf("hits=3: %d remaining %q", resp.StatusCode, resp.Header.Get("RateLimit-Remaining"))
	}
}

// TestCheckBadInput: each bad request is 400 with a one-line reason, and the store is
// left empty; a replica answers 503.
func TestCheckBadInput(t *testing.T) {
	e, st := newEngine(t, checkPolicy)
	var replica atomic.Bool
	f := startFront(t, Config{Decider: e, Now: func() int64 { return checkAt }, Serving: func() bool { return !replica.Load() }})
	many := strings.Repeat("&descriptor=remote_address", 1000)
	for _, tc := range []struct {
		name, query, reason string
		hdr                 []string
	}{
		{"missing domain", "descriptor=remote_address", "domain= is missing", nil},
		{"no descriptor", "domain=edge", "no descriptor=", nil},
		{"unknown action", "domain=edge&descriptor=remote_address,cookie", `"cookie": unknown action`, nil},
		{"empty descriptor", "domain=edge&descriptor=", "empty descriptor", nil},
		{"bad request_headers", "domain=edge&descriptor=request_headers:X-Api-Key", "want request_headers:HEADER:KEY", nil},
		{"64 KB header", "domain=edge&descriptor=request_headers:X-Api-Key:api_key", "value longer than 4096", []string{"X-Api-Key", strings.Repeat("k", 64<<10)}},
		{"1,000 descriptors", "domain=edge" + many, "1000 descriptors, more than 64", nil},
		{"8 KB path", "domain=edge&descriptor=path", "value longer than 4096", []string{"X-Original-URI", "/" + strings.Repeat("p", 8<<10)}},
		{"40 actions", "domain=edge&descriptor=" + strings.Repeat("host,", 39) + "host", "40 actions, more than 32", nil},
		{"bad status", "domain=edge&descriptor=remote_address&status=500", "status=\"500\"", nil},
		{"bad hits", "domain=edge&descriptor=remote_address&hits=-1", "hits=\"-1\"", nil},
		{"unknown parameter", "domain=edge&descriptor=remote_address&dommain=x", `unknown parameter "dommain"`, nil},
		{"two domains", "domain=edge&domain=x&descriptor=remote_address", "domain= given 2 times", nil},
		{"bad query", "domain=edge&descriptor=%zz", `invalid URL escape "%zz"`, nil},
	} {
		resp, body := check(t, f.httpAddr, tc.query, tc.hdr...)
		if resp.StatusCode != 400 || !strings.Contains(body, tc.reason) || strings.Count(body, "\n") != 1 || len(body) > 300 {
			t.Errorf("%s: %d %q, want 400 with one line saying %q", tc.name, resp.StatusCode, body, tc.reason)
		}
	}
	if n := st.Len(checkAt); n != 0 {
		t.Fatalf("bad requests left %d keys", n)
	}
	replica.Store(true)
	if resp, body := check(t, f.httpAddr, "domain=edge&descriptor=remote_address"); resp.StatusCode != 503 || !strings.Contains(body, "replica") {
		t.Fatalf("replica: %d %q", resp.StatusCode, body)
	}
	if n := st.Len(checkAt); n != 0 {
		t.Fatalf("a replica left %d keys", n)
	}
}

// TestCheckQueryCache: a query seen before is not parsed again, and what is kept is
// bounded: valid queries only, short ones, up to maxCachedQueries.
func TestCheckQueryCache(t *testing.T) {
	e, _ := newEngine(t, checkPolicy)
	s, err := New(Config{Decider: e})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.checkQuery("domain=edge&descriptor=remote_address&status=403")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.checkQuery("domain=edge&descriptor=remote_address&status=403"); again != first || first.refusal != 403 {
		t.Fatalf("the same query parsed again (%p, %p) or wrongly (%+v)", first, again, first)
	}
	if _, err := s.checkQuery("domain=edge&descriptor=cookie"); err == nil {
		t.Fatal("a bad query parsed")
	}
	long := "domain=edge&descriptor=generic_key:" + strings.Repeat("v", maxCachedQueryLen)
	if _, err := s.checkQuery(long); err != nil {
		t.Fatal(err)
	}
	if n := s.cachedQueries.Load(); n != 1 {
		t.Fatalf("%d queries kept after a bad one and a long one, want 1", n)
	}
	for i := range maxCachedQueries + 100 {
		if _, err := s.checkQuery("domain=edge&descriptor=generic_key:" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.cachedQueries.Load(); n != maxCachedQueries {
		t.Fatalf("%d queries kept, want at most %d", n, maxCachedQueries)
	}
}
