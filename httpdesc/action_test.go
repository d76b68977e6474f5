package httpdesc

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/spread"
	"github.com/rlserver/rlserver/policy"
)

// TestClientIP: the forwarded address is believed only from a trusted peer, walking
// X-Forwarded-For from the right past the trusted proxies.
func TestClientIP(t *testing.T) {
	trusted, err := ParsePrefixes("127.0.0.0/8, ::1, 10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		peer, xff, realIP, want string
	}{
		{"192.0.2.1:5", "198.51.100.1", "198.51.100.2", "192.0.2.1"},              // untrusted peer: its own address
		{"127.0.0.1:5", "198.51.100.1, 203.0.113.9, 10.1.1.1", "", "203.0.113.9"}, // rightmost untrusted
		{"127.0.0.1:5", "10.1.1.1", "198.51.100.2", "198.51.100.2"},               // all trusted: X-Real-IP
		{"127.0.0.1:5", "junk, 10.1.1.1", "", "10.1.1.1"},                         // a claim that is no address: the last trusted hop
		{"127.0.0.1:5", "junk, 10.1.1.1", "198.51.100.2", "198.51.100.2"},         // ... unless X-Real-IP
		{"127.0.0.1:5", "10.1.1.2, 10.1.1.1", "", "10.1.1.2"},                     // all trusted, no X-Real-IP: the leftmost
		{"127.0.0.1:5", "[2001:db8::1]:443, 10.0.0.2:80", "", "2001:db8::1"},      // hops with ports
		{"@", "198.51.100.1", "198.51.100.2", "invalid IP"},                       // a peer that is no address
		{"[::1]:5", "", "::ffff:198.51.100.3", "198.51.100.3"},                    // unmapped
		{"[::ffff:10.0.0.1]:5", "2001:db8::1", "", "2001:db8::1"},                 // mapped peer trusted
	} {
		r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.realIP != "" {
			r.Header.Set("X-Real-IP", tc.realIP)
		}
		if got := ClientIP(r, trusted).String(); got != tc.want {
			t.Errorf("peer %s XFF %q X-Real-IP %q: %v, want %s", tc.peer, tc.xff, tc.realIP, got, tc.want)
		}
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nope"); err == nil {
		t.Error("a bad CIDR parsed")
	}
}

// TestBuild: Envoy's keys, and a service's own request ignores forwarding headers.
func TestBuild(t *testing.T) {
	d, err := Parse("remote_address,generic_key:v,generic_key:w:k,request_headers:x-api-key:api_key,method,path:p,host")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest("POST", "http://svc.example/a/b?q=1", nil)
	r.RemoteAddr = "192.0.2.1:5"
	r.Header.Set("X-Api-Key", "k1")
	r.Header.Set("X-Original-URI", "/spoofed")
	r.Header.Set("X-Forwarded-Method", "GET")
	got, ok := d.Build(nil, r, Options{Trusted: Loopback})
	var want []policy.Entry
	for _, kv := range [][2]string{{"remote_address", "192.0.2.1"}, {"generic_key", "v"}, {"k", "w"}, {"api_key", "k1"}, {"method", "POST"}, {"p", "/a/b"}, {"host", "svc.example"}} {
		want = append(want, policy.Entry{Key: kv[0], Value: kv[1]})
	}
	if !ok || len(got) != len(want) {
		t.Fatalf("%v %v, want %v", got, ok, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
	got, _ = d.Build(nil, r, Options{Subrequest: true})
	if got[4].Value != "GET" || got[5].Value != "/spoofed" {
		t.Errorf("subrequest: %v", got)
	}
	r.Header.Del("X-Api-Key")
	if _, ok := d.Build(nil, r, Options{}); ok {
		t.Error("a missing header kept the descriptor")
	}
	// skip_if_absent: a missing header leaves out its entry alone (a priority class
	// falls to the policy's default), a present one is read as usual.
	skip, err := Parse("remote_address,request_headers:X-Priority:priority:skip_if_absent")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := skip.Build(nil, r, Options{Trusted: Loopback}); !ok || len(got) != 1 || got[0].Key != "remote_address" {
		t.Errorf("skip_if_absent without the header: %v %v", got, ok)
	}
	r.Header.Set("X-Priority", "critical")
	if got, ok := skip.Build(nil, r, Options{Trusted: Loopback}); !ok || len(got) != 2 || got[1] != (policy.Entry{Key: "priority", Value: "critical"}) {
		t.Errorf("skip_if_absent with the header: %v %v", got, ok)
	}
	for _, bad := range []string{"", "cookie", "remote_address:", "generic_key", "request_headers:a", "path:a:b", "method,,host",
		"request_headers:a:b:skip", "request_headers:a:b:skip_if_absent:x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestAnswer: the headers tell the last status over its limit, else the one with a
// rule nearest its limit; Retry-After is the longest wait of the refused, spread
// (never earlier, at most the jitter's bound later), rounded up.
func TestAnswer(t *testing.T) {
	five, ten := &policy.Limit{RequestsPerUnit: 5}, &policy.Limit{RequestsPerUnit: 10}
	ok := func(l *policy.Limit, rem uint32, reset time.Duration) policy.Status {
		return policy.Status{Code: policy.CodeOK, Limit: l, Remaining: rem, ResetAfter: reset}
	}
	over := func(l *policy.Limit, reset, retry time.Duration) policy.Status {
		return policy.Status{Code: policy.CodeOverLimit, Limit: l, ResetAfter: reset, RetryAfter: retry}
	}
	for i, tc := range []struct {
		sts     []policy.Status
		refused bool
		want    string        // limit remaining reset
		wait    time.Duration // before the spread
	}{
		{[]policy.Status{ok(nil, 0, 0)}, false, "", 0},
		{[]policy.Status{ok(ten, 7, 1500*time.Millisecond), ok(five, 3, 59*time.Second), ok(nil, 0, 0)}, false, "5 3 59", 0},
		{[]policy.Status{over(five, 30*time.Second, 2500*time.Millisecond), ok(ten, 0, time.Second), over(ten, 9*time.Second, 0)}, true,
			"10 0 9", 9 * time.Second},
		{[]policy.Status{over(five, 0, 10*time.Millisecond)}, true, "5 0 0", 10 * time.Millisecond},
		{[]policy.Status{over(nil, 0, 0)}, true, "", 0},
	} {
		h := http.Header{}
		wait := DefaultNames.Answer(h, tc.sts, tc.refused)
		var got []string
		for _, k := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			got = append(got, h.Values(k)...)
		}
		for _, k := range []string{"Limit", "Remaining", "Reset"} {
			if h.Get("X-RateLimit-"+k) != h.Get("RateLimit-"+k) {
				t.Errorf("case %d: X-RateLimit-%s %q, RateLimit-%s %q", i, k, h.Get("X-RateLimit-"+k), k, h.Get("RateLimit-"+k))
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("case %d: %q; want %q", i, strings.Join(got, " "), tc.want)
		}
		if tc.wait > 0 && (wait < tc.wait || wait >= tc.wait+spread.Jitter(tc.wait)) || tc.wait == 0 && wait != 0 {
			t.Errorf("case %d: wait %v; want %v spread", i, wait, tc.wait)
		}
		ra, want := h.Get("Retry-After"), ""
		if tc.refused {
			want = strconv.FormatInt(max(1, ceilSeconds(wait)), 10)
		}
		if ra != want {
			t.Errorf("case %d: Retry-After %q, want %q (wait %v)", i, ra, want, wait)
		}
	}
}
