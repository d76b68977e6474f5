package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/resp"
)

const (
	sec    = time.Second
	minute = time.Minute
)

// ok is the handler behind the limiter: 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// userParam is the lesson's user key: ?user=.
func userParam(r *http.Request) string { return r.URL.Query().Get("user") }

// informational are the headers every limited or allowed response carries.
var informational = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Policy", "RateLimit", "Retry-After"}

// checkResponse compares a response with the wanted status, body and headers; a
// header of informational not in want must be absent. A refusal's wait is spread:
// want holds the true one, and the body's retryAfterMs and Retry-After may say more,
// within the spread's bound (waitWithin).
func checkResponse(t *testing.T, rec *httptest.ResponseRecorder, status int, body string, want map[string]string) {
	t.Helper()
	if rec.Code != status || !sameBody(rec.Body.String(), body) {
		t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), status, body)
	}
	for name, v := range want {
		got := rec.Header().Values(name)
		if len(got) != 1 || got[0] != v && (name != "Retry-After" || !waitWithin(got[0], v, time.Second)) {
			t.Errorf("%s: %q, want %q", name, got, v)
		}
	}
	for _, name := range informational {
		if _, wanted := want[name]; !wanted && rec.Header().Get(name) != "" {
			t.Errorf("%s: %q, want none", name, rec.Header().Get(name))
		}
	}
}

// sameBody reports whether got is want, a 429 body's retryAfterMs allowed to be spread.
func sameBody(got, want string) bool {
	const field = `"retryAfterMs":`
	i, j := strings.Index(got, field), strings.Index(want, field)
	if i < 0 || j < 0 || got[:i] != want[:j] || !strings.HasSuffix(got, "}") || !strings.HasSuffix(want, "}") {
		return got == want
	}
	return waitWithin(got[i+len(field):len(got)-1], want[j+len(field):len(want)-1], time.Millisecond)
}

// waitWithin reports whether got, a wait in units, is want or spread from it: never
// less, and at most spread.Jitter(want) more (rounded up to a unit).
func waitWithin(got, want string, unit time.Duration) bool {
	g, err1 := strconv.ParseInt(got, 10, 64)
	w, err2 := strconv.ParseInt(want, 10, 64)
	jitter := spread.Jitter(time.Duration(w) * unit)
	return err1 == nil && err2 == nil && g >= w && time.Duration(g-w)*unit <= jitter+unit
}

func TestHeaders(t *testing.T) {
	user := middleware.Dimension{Name: "user", By: middleware.ByUser, Limit: client.Token(500, sec)}
	ip := middleware.Dimension{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(100, minute)}
	small := middleware.Dimension{Name: "user", By: middleware.ByUser, Limit: client.Token(10, minute)}
	cases := []struct {
		name    string
		dims    []middleware.Dimension
		before  func(ctx context.Context, c *client.Client) error // on a frozen clock, a whole minute
		target  string
		status  int
		body    string
		headers map[string]string
	}{
		{"allowed", []middleware.Dimension{user}, nil, "/limited?user=alice", 200, "ok", map[string]string{
			"X-RateLimit-Limit": "500", "X-RateLimit-Remaining": "499", "X-RateLimit-Reset": "1",
			"RateLimit-Policy": `"user";q=500;w=1`, "RateLimit": `"user";r=499;t=1`,
		}},
		{"denied as in the lesson", []middleware.Dimension{user}, func(ctx context.Context, c *client.Client) error {
			_, err := c.AllowN(ctx, "rl:user:drain2", user.Limit, 500)
			return err
		}, "/limited?user=drain2", 429, `{"error":"rate_limited","retryAfterMs":2}`, map[string]string{
			"Retry-After": "1", "X-RateLimit-Limit": "500", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1",
			"RateLimit-Policy": `"user";q=500;w=1`, "RateLimit": `"user";r=0;t=1`, "Content-Type": "application/json",
		}},
		{"most restrictive of two", []middleware.Dimension{ip, small}, nil, "/limited?user=bob", 200, "ok", map[string]string{
			"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "6",
			"RateLimit-Policy": `"ip";q=100;w=60, "user";q=10;w=60`, "RateLimit": `"ip";r=99;t=60, "user";r=9;t=6`,
		}},
		{"second denies, first not consumed", []middleware.Dimension{ip, small}, func(ctx context.Context, c *client.Client) error {
			_, err := c.AllowN(ctx, "rl:user:carol", small.Limit, 10)
			return err
		}, "/limited?user=carol", 429, `{"error":"rate_limited","retryAfterMs":6000}`, map[string]string{
			"Retry-After": "6", "X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60",
			"RateLimit-Policy": `"user";q=10;w=60`, "RateLimit": `"user";r=0;t=6`,
		}},
		{"first denies, only it shows", []middleware.Dimension{small, ip}, func(ctx context.Context, c *client.Client) error {
			_, err := c.AllowN(ctx, "rl:user:dave", small.Limit, 10)
			return err
		}, "/limited?user=dave", 429, `{"error":"rate_limited","retryAfterMs":6000}`, map[string]string{
			"Retry-After": "6", "X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60",
			"RateLimit-Policy": `"user";q=10;w=60`, "RateLimit": `"user";r=0;t=6`,
		}},
		{"both deny, the longer wait answers", []middleware.Dimension{small, {Name: "ip", By: middleware.ByIP, Limit: client.Fixed(1, minute)}},
			func(ctx context.Context, c *client.Client) error {
				if _, err := c.AllowN(ctx, "rl:user:frank", small.Limit, 10); err != nil {
					return err
				}
				_, err := c.Allow(ctx, "rl:ip:192.0.2.1", client.Fixed(1, minute))
				return err
			}, "/limited?user=frank", 429, `{"error":"rate_limited","retryAfterMs":60000}`, map[string]string{
				"Retry-After": "60", "X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60",
				"RateLimit-Policy": `"ip";q=1;w=60`, "RateLimit": `"ip";r=0;t=60`,
			}},
		{"sub-second window has no w", []middleware.Dimension{{Name: "burst", By: middleware.ByRoute, Limit: client.Token(5, 500*time.Millisecond)}},
			nil, "/limited", 200, "ok", map[string]string{
				"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset": "1",
				"RateLimit-Policy": `"burst";q=5`, "RateLimit": `"burst";r=4;t=1`,
			}},
		{"anonymous skips the user dimension", []middleware.Dimension{small, {Name: "ip", By: middleware.ByIP, Limit: client.GCRA(100, minute, 20)}},
			nil, "/limited", 200, "ok", map[string]string{
				"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19", "X-RateLimit-Reset": "1",
				"RateLimit-Policy": `"ip";q=100;w=60`, "RateLimit": `"ip";r=19;t=1`,
			}},
		{"no dimension applies", []middleware.Dimension{small}, nil, "/limited", 200, "ok", nil},
		{"health check bypasses", []middleware.Dimension{small}, func(ctx context.Context, c *client.Client) error {
			_, err := c.AllowN(ctx, "rl:user:erin", small.Limit, 10)
			return err
		}, "/healthz?user=erin", 200, "ok", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := embeddedClient(t, false)
			lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, Dimensions: tc.dims, User: userParam})
			if err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				if err := tc.before(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			rec := httptest.NewRecorder()
			lim.Handler(ok).ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
			checkResponse(t, rec, tc.status, tc.body, tc.headers)
		})
	}
}

// TestStats: every request lands in exactly one count.
func TestStats(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false), User: userParam,
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Fixed(2, minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	for _, target := range []string{"/a?user=x", "/a?user=x", "/a?user=x", "/healthz", "/a"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
	}
	want := middleware.Stats{Allowed: 3, Limited: 1, Bypassed: 1}
	if got := lim.Stats(); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
}

// TestBackends runs the same requests through a real HTTP server on each backend:
// rlserver, Redis running the scripts, and embedded, all on their real clocks.
func TestBackends(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) *client.Client
	}{
		{"embedded", func(t *testing.T) *client.Client { return embeddedClient(t, true) }},
		{"rlserver", func(t *testing.T) *client.Client {
			return networkClient(t, testenv.StartServer(t, resp.Config{}), false, 5*sec)
		}},
		{"redis+lua", func(t *testing.T) *client.Client { return networkClient(t, testenv.StartRedis(t), true, 5*sec) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c := b.open(t)
			// One request of a user at a time: each gives its lease back, or the next is refused.
			lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam, Dimensions: []middleware.Dimension{
				{Name: "user", By: middleware.ByUser | middleware.ByRoute, Limit: client.GCRA(3, minute, 3)}},
				Concurrency: &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 1, Lease: minute}})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.Handle("GET /limited", lim.Handler(ok))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			for i := range 4 {
				resp, err := http.Get(srv.URL + "/limited?user=alice")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				h := resp.Header
				if i < 3 {
					if resp.StatusCode != 200 || h.Get("X-RateLimit-Remaining") != itoa(2-i) || h.Get("X-RateLimit-Limit") != "3" {
						t.Fatalf("request %d: %d, headers %v; want 200, limit 3, remaining %d", i, resp.StatusCode, h, 2-i)
					}
					continue
				}
				var reply struct {
					Error        string
					RetryAfterMs int64
				}
				if err := json.Unmarshal(body, &reply); err != nil {
					t.Fatalf("429 body %q: %v", body, err)
				}
				// One request per 20 s: the 4th may come back 20 s after the 1st, less the
				// time these requests took.
				most := 20_000 + spread.Jitter(20*sec).Milliseconds()
				if resp.StatusCode != 429 || !waitWithin(h.Get("Retry-After"), "20", sec) || h.Get("X-RateLimit-Reset") != "60" ||
					reply.Error != "rate_limited" || reply.RetryAfterMs <= 19_000 || reply.RetryAfterMs > most {
					t.Fatalf("request 4: %d %s, headers %v; want 429, Retry-After 20 spread, reset 60, retryAfterMs in (19000, %d]",
						resp.StatusCode, body, h, most)
				}
			}
			// The key is the user and the ServeMux pattern.
			res, err := c.Peek(context.Background(), "rl:user:alice|GET /limited", client.GCRA(3, minute, 3))
			if err != nil || res.Allowed {
				t.Fatalf("Peek on the user's key: %+v, %v; want it drained", res, err)
			}
		})
	}
}

// TestFailure points the limiter at a dead and a stalled backend: fail open serves,
// fail closed answers 429 with Retry-After: 1; both count the failure, and both answer
// within the budget.
func TestFailure(t *testing.T) {
	dead, stalled := testenv.DeadAddr(t), testenv.StalledAddr(t)
	for _, addr := range []string{dead, stalled} {
		for _, closed := range []bool{false, true} {
			for _, conc := range []bool{false, true} {
				name := map[string]string{dead: "refused", stalled: "stalled"}[addr] + map[bool]string{false: " open", true: " closed"}[closed] +
					map[bool]string{false: "", true: " concurrency"}[conc]
				cfg := middleware.Config{
					Client: networkClient(t, addr, false, 0), User: userParam, FailClosed: closed, Timeout: 30 * time.Millisecond,
					Logger:     slog.New(slog.DiscardHandler),
					Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(5, sec)}},
				}
				if conc {
					cfg.Dimensions = nil
					cfg.Concurrency = &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 5, Lease: sec}
				}
				failure(t, name, cfg)
			}
		}
	}
}

// failure serves one request with cfg, whose backend fails, as TestFailure wants.
func failure(t *testing.T, name string, cfg middleware.Config) {
	t.Run(name, func(t *testing.T) {
		lim, err := middleware.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		rec := httptest.NewRecorder()
		lim.Handler(ok).ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=u", nil))
		// A bounded real-clock check: the 30 ms budget holds, not go-redis's 3 s ReadTimeout.
		if d := time.Since(began); d > 2*sec {
			t.Errorf("the request took %v with a 30 ms budget", d)
		}
		if cfg.FailClosed {
			checkResponse(t, rec, 429, `{"error":"rate_limited","retryAfterMs":1000}`,
				map[string]string{"Retry-After": "1", "Content-Type": "application/json"})
		} else {
			checkResponse(t, rec, 200, "ok", nil)
		}
		if got := lim.Stats(); got != (middleware.Stats{Failed: 1}) {
			t.Errorf("Stats() = %+v, want one failure only", got)
		}
	})
}

// TestFailureLog: failures are logged once per interval, each line counting the
// failures since the previous one.
func TestFailureLog(t *testing.T) {
	var logs bytes.Buffer
	lim, err := middleware.New(middleware.Config{
		Client: networkClient(t, testenv.DeadAddr(t), true, 0), User: userParam, LogInterval: 10 * sec,
		Logger:     slog.New(slog.NewJSONHandler(&logs, nil)),
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(5, sec)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_750_000_000, 0)
	middleware.SetClock(lim, func() time.Time { return now }, nil)
	h := lim.Handler(ok)
	request := func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x?user=u", nil)) }
	type line struct {
		Msg           string
		Failures      uint64
		FailuresTotal uint64 `json:"failures_total"`
		Error         string
	}
	lines := func() []line {
		var ls []line
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var v line
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			ls = append(ls, v)
		}
		return ls
	}
	for range 5 {
		request()
	}
	now = now.Add(9 * sec)
	request()
	if ls := lines(); len(ls) != 1 || ls[0].Failures != 1 || !strings.Contains(ls[0].Error, `dimensions "user"`) {
		t.Fatalf("after 6 failures within 9 s: %+v, want one line, for the first", ls)
	}
	now = now.Add(sec)
	request()
	ls := lines()
	if len(ls) != 2 || ls[1].Failures != 6 || ls[1].FailuresTotal != 7 || ls[1].Msg != "rate limiter failed; requests fail open" {
		t.Fatalf("after 7 failures over 10 s: %+v, want a second line counting 6 (7 in all)", ls)
	}
}

// TestLeakyWait: a Leaky dimension makes allowed requests wait their turn, and a
// client that leaves while waiting is not served.
func TestLeakyWait(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false), User: userParam,
		Dimensions: []middleware.Dimension{{Name: "queue", By: middleware.ByUser, Limit: client.Leaky(10, sec, 2)}}})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	leave := false
	middleware.SetClock(lim, time.Now, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		if leave {
			return context.Canceled
		}
		return nil
	})
	h := lim.Handler(ok)
	for i, want := range []struct {
		status int
		wait   time.Duration // 0: none
	}{{200, 0}, {200, 100 * time.Millisecond}, {200, 200 * time.Millisecond}, {429, 0}} {
		waits = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=u", nil))
		if rec.Code != want.status || want.wait == 0 && len(waits) != 0 || want.wait > 0 && (len(waits) != 1 || waits[0] != want.wait) {
			t.Fatalf("request %d: %d after waits %v; want %d after %v", i, rec.Code, waits, want.status, want.wait)
		}
	}
	leave = true
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=v", nil))
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x?user=v", nil))
	if rec.Body.String() != "ok" || len(waits) != 1 {
		t.Fatalf("body %q after waits %v: want the first request served, the second (waiting, then gone) not", rec.Body.String(), waits)
	}
}

func TestClientIP(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false),
		TrustedProxies: []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.10"},
		Dimensions:     []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(1, sec)}}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"no proxy", "203.0.113.7:4000", nil, "203.0.113.7"},
		{"untrusted peer's header ignored", "203.0.113.7:4000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted proxy", "10.0.0.1:4000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"trusted single address", "192.0.2.10:4000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"forged left part ignored", "10.0.0.1:4000", []string{"198.51.100.1, 203.0.113.7"}, "203.0.113.7"},
		{"chain of trusted proxies", "10.0.0.1:4000", []string{"198.51.100.1, 203.0.113.7, 10.0.0.2, 10.9.9.9"}, "203.0.113.7"},
		{"several header lines", "10.0.0.1:4000", []string{"198.51.100.1", "203.0.113.7, 10.0.0.2"}, "203.0.113.7"},
		{"all trusted", "10.0.0.1:4000", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"trusted proxy, no header", "10.0.0.1:4000", nil, "10.0.0.1"},
		{"garbage stops at the last trusted hop", "10.0.0.1:4000", []string{"203.0.113.7, junk, 10.0.0.2"}, "10.0.0.2"},
		{"hops with ports", "10.0.0.1:4000", []string{"[2001:db8::1]:443, 10.0.0.2:80"}, "2001:db8::1"},
		{"IPv6 proxy", "[2001:db8:ffff::5]:4000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"IPv4-mapped peer", "[::ffff:10.0.0.1]:4000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"unreadable peer", "@", []string{"203.0.113.7"}, "invalid IP"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := lim.ClientIP(r).String(); got != tc.want {
				t.Fatalf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestKeys: a key's parts cannot run into each other, and the key is the prefix, the
// dimension and the parts.
func TestKeys(t *testing.T) {
	c := embeddedClient(t, false)
	limit := client.Fixed(1, minute)
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: c, User: userParam, Prefix: "app1:",
		Route:      func(r *http.Request) string { return r.URL.Query().Get("route") },
		Dimensions: []middleware.Dimension{{Name: "pair", By: middleware.ByUser | middleware.ByRoute, Limit: limit}}})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(ok)
	for i, tc := range []struct {
		target string
		status int
	}{{"/?user=a%7Cb&route=c", 200}, {"/?user=a&route=b%7Cc", 200}, {"/?user=a%7Cb&route=c", 429}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
		if rec.Code != tc.status {
			t.Fatalf("request %d (%s): %d, want %d", i, tc.target, rec.Code, tc.status)
		}
	}
	for _, key := range []string{`app1:pair:a\|b|c`, `app1:pair:a|b\|c`} {
		if res, err := c.Peek(context.Background(), key, limit); err != nil || res.Allowed {
			t.Errorf("Peek %s: %+v, %v; want it used up", key, res, err)
		}
	}
}

func TestNew(t *testing.T) {
	c := embeddedClient(t, false)
	good := []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(1, sec)}}
	cases := []struct {
		name string
		cfg  middleware.Config
		want string // "" when valid
	}{
		{"valid", middleware.Config{Client: c, Dimensions: good, TrustedProxies: []string{"10.0.0.0/8", "::1"}}, ""},
		{"no client", middleware.Config{Dimensions: good}, "Config.Client is required"},
		{"no dimension", middleware.Config{Client: c}, "nothing to limit"},
		{"bad name", middleware.Config{Client: c, Dimensions: []middleware.Dimension{{Name: `a"b`, By: middleware.ByIP, Limit: client.Fixed(1, sec)}}}, "dimension name"},
		{"same name twice", middleware.Config{Client: c, Dimensions: append(good, good[0])}, `two dimensions are named "ip"`},
		{"no By", middleware.Config{Client: c, Dimensions: []middleware.Dimension{{Name: "x", Limit: client.Fixed(1, sec)}}}, "By must combine"},
		{"ByUser without User", middleware.Config{Client: c, Dimensions: []middleware.Dimension{{Name: "u", By: middleware.ByUser, Limit: client.Fixed(1, sec)}}}, "Config.User is required"},
		{"bad limit", middleware.Config{Client: c, Dimensions: []middleware.Dimension{{Name: "x", By: middleware.ByIP, Limit: client.Fixed(0, sec)}}}, "rl.fixed limit must be"},
		{"bad proxy", middleware.Config{Client: c, Dimensions: good, TrustedProxies: []string{"10.0.0.0/33"}}, "trusted proxy"},
		{"negative timeout", middleware.Config{Client: c, Dimensions: good, Timeout: -1}, "must not be negative"},
		{"concurrency only", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Limit: 1, Lease: sec}}, ""},
		{"concurrency named as a dimension", middleware.Config{Client: c, Dimensions: good,
			Concurrency: &middleware.Concurrency{Name: "ip", By: middleware.ByIP, Limit: 1, Lease: sec}}, `two dimensions are named "ip"`},
		{"concurrency bad name", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "a b", By: middleware.ByIP, Limit: 1, Lease: sec}}, "concurrency name"},
		{"concurrency no By", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", Limit: 1, Lease: sec}}, "By must combine"},
		{"concurrency ByUser without User", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByUser, Limit: 1, Lease: sec}}, "Config.User is required"},
		{"concurrency limit 0", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Lease: sec}}, "Limit must be at least 1"},
		{"concurrency no lease", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Limit: 1}}, "Lease must be a whole number of milliseconds"},
		{"concurrency sub-ms lease", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Limit: 1, Lease: 1500 * time.Microsecond}}, "Lease must be"},
		{"concurrency lease under its renew", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Limit: 1,
			Lease: sec, Renew: 2 * sec}}, `Lease (1s) is shorter than Renew (2s)`},
		{"concurrency negative renew", middleware.Config{Client: c, Concurrency: &middleware.Concurrency{Name: "c", By: middleware.ByIP, Limit: 1,
			Lease: sec, Renew: -1}}, "Renew must not be negative"},
		{"65 dimensions", middleware.Config{Client: c, Dimensions: func() []middleware.Dimension {
			var ds []middleware.Dimension
			for i := range 65 {
				ds = append(ds, middleware.Dimension{Name: "d" + itoa(i), By: middleware.ByIP, Limit: client.Fixed(1, sec)})
			}
			return ds
		}()}, "65 dimensions, at most 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := middleware.New(tc.cfg)
			switch {
			case tc.want == "" && (err != nil || lim == nil):
				t.Fatalf("New: %v, %v; want a Limiter", lim, err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New: %v, %v; want an error saying %q", lim, err, tc.want)
			}
			if tc.name == "bad limit" && !errors.Is(err, client.ErrBadLimit) {
				t.Fatalf("New: %v, want it to wrap client.ErrBadLimit", err)
			}
		})
	}
}

// TestConcurrent serves 200 requests from 20 goroutines against a limit of 50: exactly
// 50 pass, under -race.
func TestConcurrent(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, true), User: userParam,
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(50, 24*time.Hour)}}})
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	done := make(chan struct{})
	for range 20 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 10 {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?user=u", nil))
			}
		}()
	}
	for range 20 {
		<-done
	}
	if n, s := served.Load(), lim.Stats(); n != 50 || s.Allowed != 50 || s.Limited != 150 {
		t.Fatalf("served %d, Stats %+v; want 50 allowed, 150 limited", n, s)
	}
}

// TestRefusalsSpread: 200 clients refused by the same key in the same instant are
// told waits spread over the jitter's second, never shorter than the window's end:
// without the spread they would all come back within the few ms the calls took.
func TestRefusalsSpread(t *testing.T) {
	lim, err := middleware.New(middleware.Config{Timeout: testTimeout, Client: embeddedClient(t, false), User: userParam,
		Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Fixed(1, minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		lim.Handler(ok).ServeHTTP(rec, httptest.NewRequest("GET", "/?user=alice", nil))
		return rec
	}
	if rec := serve(); rec.Code != 200 {
		t.Fatalf("first request: %d", rec.Code)
	}
	start := time.Now()
	waits := map[int64]bool{}
	lo, hi := int64(minute/time.Millisecond)+1, int64(0)
	for range 200 {
		var body struct{ RetryAfterMs int64 }
		rec := serve()
		if rec.Code != 429 || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			t.Fatalf("got %d %q, want a 429", rec.Code, rec.Body.String())
		}
		waits[body.RetryAfterMs] = true
		lo, hi = min(lo, body.RetryAfterMs), max(hi, body.RetryAfterMs)
	}
	// The window ends within a minute of the first request: no wait may pass that end
	// by more than the jitter's second, nor (the calls took elapsed) fall before it.
	elapsed := time.Since(start).Milliseconds()
	if hi > 61_000 || lo < 60_000-elapsed-1_000 {
		t.Errorf("waits %d to %d ms: want within the window's end and a second more", lo, hi)
	}
	if len(waits) < 150 || hi-lo < 500 {
		t.Errorf("200 refusals told %d different waits, %d to %d ms: want them spread over most of a second", len(waits), lo, hi)
	}
}
