package action

import (
	"net/http"
	"net/netip"
	"testing"

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
		{"127.0.0.1:5", "junk, 10.1.1.1", "", "127.0.0.1"},                        // a claim that is no address
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
		if got := ClientIP(r, trusted); got != netip.MustParseAddr(tc.want) {
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
	for _, bad := range []string{"", "cookie", "remote_address:", "generic_key", "request_headers:a", "path:a:b", "method,,host"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
