package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
)

// resolvePolicy has every way a descriptor meets a rule: nested, by value, a
// wildcard sharing one state, shadow, quota, unlimited, replaced, an algorithm of
// its own; a domain all_or_nothing; and one with priority classes.
const resolvePolicy = `domain: d
descriptors:
  - key: user
    rate_limit: {name: per-user, unit: minute, requests_per_unit: 5}
    descriptors:
      - key: path
        rate_limit: {requests_per_unit: 5, window: 90s, algorithm: token, burst: 7}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 5, algorithm: gcra, burst: 3}
  - key: shady
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: slide}
  - key: internal
    rate_limit: {unlimited: true}
  - key: vip
    rate_limit:
      replaces: [{name: per-user}]
      unit: hour
      requests_per_unit: 100
  - key: log
    rate_limit: {unit: minute, requests_per_unit: 4, algorithm: log}
`

// TestResolve: Resolve names exactly the keys Decide then charges, under the
// algorithm Decide charges them with, in request order and with each descriptor's
// mode, and spends nothing itself.
func TestResolve(t *testing.T) {
	E, S, Q, U, N := ModeEnforce, ModeShadow, ModeQuota, ModeUnlimited, ModeNone
	for i, tc := range []struct {
		yaml  string
		descs []policy.Descriptor
		modes []Mode
	}{
		{resolvePolicy, []policy.Descriptor{desc("user", "alice")}, []Mode{E}},
		{resolvePolicy, []policy.Descriptor{desc("user", "alice", "path", "/a"), desc("user", "bob")}, []Mode{E, E}},
		{resolvePolicy, []policy.Descriptor{desc("files", "files/a"), desc("files", "files/b")}, []Mode{E, E}},
		{resolvePolicy, []policy.Descriptor{desc("shady", "x"), desc("q", "y"), desc("internal", "z"), desc("color", "red")}, []Mode{S, Q, U, N}},
		{resolvePolicy, []policy.Descriptor{desc("user", "alice"), desc("vip", "alice")}, []Mode{N, E}},
		{resolvePolicy, []policy.Descriptor{desc("log", "l")}, []Mode{E}},
		{"domain: d\nall_or_nothing: true\n" + resolvePolicy[len("domain: d\n"):], []policy.Descriptor{desc("user", "carol"), desc("shady", "x")}, []Mode{E, S}},
		{priorityPolicy, []policy.Descriptor{desc("priority", "batch", "user", "u"), desc("remote_address", "10.0.0.1")}, []Mode{E, E}},
	} {
		e, st := newEngine(t, tc.yaml)
		req := policy.Request{Domain: "d", Descriptors: tc.descs}
		res, err := e.Resolve(req)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n := st.Len(t0); n != 0 {
			t.Fatalf("case %d: Resolve left %d keys in the store", i, n)
		}
		if !res.Known || res.AllOrNothing != (i == 6) {
			t.Fatalf("case %d: known %v, all_or_nothing %v", i, res.Known, res.AllOrNothing)
		}
		var want [][]byte
		for j, r := range res.Rules {
			if r.Mode != tc.modes[j] {
				t.Fatalf("case %d descriptor %d: mode %v, want %v", i, j, r.Mode, tc.modes[j])
			}
			if (r.Rule != nil) != (r.Key != nil) || (r.Key != nil) != (r.Mode != N && r.Mode != U) {
				t.Fatalf("case %d descriptor %d: %v with rule %v, key %q", i, j, r.Mode, r.Rule, r.Key)
			}
			if r.Key != nil {
				want = append(want, r.Key)
			}
		}
		if _, err := e.Decide(req, t0); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		_, got := st.Scan(0, 100, nil, 0, t0)
		slices.SortFunc(got, func(a, b []byte) int { return slices.Compare(a, b) })
		slices.SortFunc(want, func(a, b []byte) int { return slices.Compare(a, b) })
		want = slices.CompactFunc(want, func(a, b []byte) bool { return string(a) == string(b) })
		if !slices.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("case %d: Decide charged %q; Resolve named %q", i, got, want)
		}
		for j, r := range res.Rules {
			if kind, ok := st.Type(r.Key, t0); r.Key != nil && (!ok || kind != r.Request.Kind) {
				t.Fatalf("case %d descriptor %d: %q holds %v, Resolve said %v", i, j, r.Key, kind, r.Request.Kind)
			}
		}
	}
}

// TestResolveParameters: the request Resolve gives is the rule's, with the class's
// reserve: what an RL.SLICE of the key must be asked under to share Decide's state.
func TestResolveParameters(t *testing.T) {
	e, _ := newEngine(t, resolvePolicy)
	res, err := e.Resolve(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("user", "a", "path", "/"), desc("files", "files/x")}})
	if err != nil {
		t.Fatal(err)
	}
	tok, gcra := res.Rules[0].Request, res.Rules[1].Request
	if tok.Kind != algo.KindToken || tok.Limit != 7 || tok.Rate != 5 || tok.Window != 90e6 || tok.Cost != 1 {
		t.Errorf("token rule: %+v", tok)
	}
	if gcra.Kind != algo.KindGCRA || gcra.Limit != 5 || gcra.Burst != 3 || gcra.Window != 1e6 || string(res.Rules[1].Key) != "rl:d:gcra/1s:files=files/*" {
		t.Errorf("gcra rule: %+v at %q", gcra, res.Rules[1].Key)
	}
	e, _ = newEngine(t, priorityPolicy)
	for class, reserve := range map[string]int64{"critical": 0, "normal": 2, "batch": 5} {
		res, err := e.Resolve(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("priority", class, "remote_address", "10.0.0.1")}})
		if err != nil || res.Rules[0].Request.Reserve != reserve || string(res.Rules[0].Key) != "rl:d:fixed/60s:remote_address=10.0.0.1" {
			t.Errorf("class %s: %+v, %v; want reserve %d", class, res.Rules, err, reserve)
		}
	}
}

// TestResolveRefuses: what Decide refuses, Resolve refuses, spending nothing; an
// unknown domain resolves to no rules, as Decide answers it OK.
func TestResolveRefuses(t *testing.T) {
	e, st := newEngine(t, priorityPolicy)
	for _, req := range []policy.Request{
		{Domain: "d"},
		{Domain: "", Descriptors: []policy.Descriptor{desc("user", "u")}},
		{Domain: "d", Descriptors: []policy.Descriptor{{}}},
		{Domain: "d", Descriptors: []policy.Descriptor{desc("priority", "nosuch", "user", "u")}},
	} {
		if _, err := e.Resolve(req); !errors.Is(err, policy.ErrInvalidRequest) {
			t.Errorf("%+v: %v; want an invalid request", req, err)
		}
	}
	res, err := e.Resolve(policy.Request{Domain: "nosuch", Descriptors: []policy.Descriptor{desc("user", "u")}})
	if err != nil || res.Known || len(res.Rules) != 1 || res.Rules[0].Mode != ModeNone {
		t.Errorf("unknown domain: %+v, %v", res, err)
	}
	if n := st.Len(t0); n != 0 {
		t.Errorf("%d keys in the store", n)
	}
}
