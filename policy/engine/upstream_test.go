package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/store"
)

// fakeUpstream takes the keys beginning with prefix called with a kind a region
// takes (Fixed, Slide, Token, GCRA), and decides them on a store of its own at t0,
// the home's: what lands there was decided upstream, what lands on the engine's
// store was not. A key containing "down" answers errDown. It records the requests.
type fakeUpstream struct {
	prefix []byte
	st     *store.Store
	reqs   []algo.Request
	alls   int // DecideAll calls
}

var errDown = errors.New("quota upstream: unavailable")

func newFakeUpstream(t *testing.T, prefix string) *fakeUpstream {
	st, err := store.New(store.Config{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeUpstream{prefix: []byte(prefix), st: st}
}

func (f *fakeUpstream) Takes(key []byte, req algo.Request) bool {
	switch req.Kind {
	case algo.KindFixed, algo.KindSlide, algo.KindToken, algo.KindGCRA:
		return bytes.HasPrefix(key, f.prefix)
	}
	return false
}

func (f *fakeUpstream) Decide(key []byte, req algo.Request) (algo.Decision, bool, error) {
	if !f.Takes(key, req) {
		return algo.Decision{}, false, nil
	}
	f.reqs = append(f.reqs, req)
	if bytes.Contains(key, []byte("down")) {
		return algo.Decision{}, true, errDown
	}
	req.Spend = false // Decider's contract
	d, err := f.st.Do(key, req, t0)
	return d, true, err
}

func (f *fakeUpstream) DecideAll(rules []algo.Rule, ds []algo.Decision) (bool, error) {
	f.alls++
	for _, r := range rules {
		if bytes.Contains(r.Key, []byte("down")) {
			return false, errDown
		}
	}
	return f.st.DoAll(rules, ds, t0)
}

// newUpstreamEngine is an engine under upstreamPolicy, a domain a file, on a store
// of its own, deciding through up.
func newUpstreamEngine(t *testing.T, up *fakeUpstream) (*Engine, *store.Store) {
	var files []config.File
	for i, d := range strings.Split(upstreamPolicy, "---\n") {
		files = append(files, config.File{Name: fmt.Sprintf("%d.yaml", i), Data: []byte(d)})
	}
	p, err := config.ParseFiles("p", files)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	e := New(st, p)
	e.SetUpstream(up)
	return e, st
}

// keysOf is the keys st holds.
func keysOf(st *store.Store) []string {
	_, keys := st.Scan(0, 100, nil, 0, t0)
	var s []string
	for _, k := range keys {
		s = append(s, string(k))
	}
	return s
}

const upstreamPolicy = `domain: up
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: t
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: token}
  - key: leaky
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: leaky}
  - key: s
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
---
domain: local
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 2}
---
domain: aon
all_or_nothing: true
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: s
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
---
domain: mixed
all_or_nothing: true
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: l
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: leaky}
`

// TestUpstreamDecideEach: the rules whose keys the Upstream takes are decided by it,
// a fixed window's refused hits not counted there; the others (another domain's
// keys, a kind it does not take) on the engine's store; its errors are the engine's.
func TestUpstreamDecideEach(t *testing.T) {
	up := newFakeUpstream(t, "rl:up:")
	e, st := newUpstreamEngine(t, up)
	O, X := policy.CodeOK, policy.CodeOverLimit
	decide := func(domain string, ds ...policy.Descriptor) []want {
		t.Helper()
		r, err := e.Decide(policy.Request{Domain: domain, Descriptors: ds}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var w []want
		for _, s := range r.Statuses {
			w = append(w, short(s))
		}
		return w
	}
	steps := []struct {
		domain string
		ds     []policy.Descriptor
		want   []want
	}{
		{"up", []policy.Descriptor{desc("k", "1"), desc("t", "1"), desc("leaky", "1")}, []want{{O, 2, 1}, {O, 2, 1}, {O, 2, 0}}},
		{"up", []policy.Descriptor{desc("k", "1")}, []want{{O, 2, 0}}},
		{"up", []policy.Descriptor{desc("k", "1")}, []want{{X, 2, 0}}},
		{"up", []policy.Descriptor{desc("k", "1")}, []want{{X, 2, 0}}},
		// The refused hits spent nothing upstream: a refund of one makes room for one.
		{"up", []policy.Descriptor{{Entries: desc("k", "1").Entries, Hits: 1, HitsSet: true, Negative: true}}, []want{{O, 2, 1}}},
		{"up", []policy.Descriptor{desc("k", "1")}, []want{{O, 2, 0}}},
		{"local", []policy.Descriptor{desc("k", "1")}, []want{{O, 2, 1}}},
	}
	for i, s := range steps {
		if got := decide(s.domain, s.ds...); !equalWants(got, s.want) {
			t.Errorf("step %d (%s %v): %v, want %v", i, s.domain, s.ds, got, s.want)
		}
	}
	if got, want := keysOf(up.st), []string{"rl:up:fixed/60s:k=1", "rl:up:token/60s:t=1"}; !sameSet(got, want) {
		t.Errorf("the upstream holds %q, want %q", got, want)
	}
	if got, want := keysOf(st), []string{"rl:up:leaky/60s:leaky=1", "rl:local:fixed/60s:k=1"}; !sameSet(got, want) {
		t.Errorf("the store holds %q, want %q", got, want)
	}
	// Decided upstream at t0, 40 s before its minute's end, though asked 30 s before:
	// the reset is the decision's.
	r, err := e.Decide(policy.Request{Domain: "up", Descriptors: []policy.Descriptor{desc("k", "2")}}, t0-30e6)
	if err != nil || r.Statuses[0].ResetAfter != 40*time.Second {
		t.Errorf("an upstream's decision of a time of its own: %+v %v, want a reset of 40 s", r, err)
	}
	if !up.reqs[0].Spend {
		t.Errorf("the engine sent a fixed window's rule without Spend; the Upstream should be the one ignoring it")
	}
	_, err = e.Decide(policy.Request{Domain: "up", Descriptors: []policy.Descriptor{desc("k", "down")}}, t0)
	if !errors.Is(err, errDown) {
		t.Errorf("the upstream failing: %v, want its error", err)
	}
}

// TestUpstreamAllOrNothing: an all_or_nothing request whose enforcing rules the
// Upstream all takes is decided by its DecideAll, all or none, and its shadow rule
// then charged, or only looked at (PEEK, of the request's hits) when refused; one
// whose rules are some the Upstream's and some the store's is refused with
// ErrMixedUpstream, spending nothing on either side; one the Upstream takes none of
// goes to the store's atomic path.
func TestUpstreamAllOrNothing(t *testing.T) {
	up := newFakeUpstream(t, "rl:aon:")
	e, st := newUpstreamEngine(t, up)
	three := policy.Request{Domain: "aon", Hits: 2, Descriptors: []policy.Descriptor{desc("a", "1"), desc("b", "1"), desc("s", "1")}}
	r, err := e.Decide(policy.Request{Domain: "aon", Descriptors: three.Descriptors}, t0)
	if err != nil || r.Overall != policy.CodeOK {
		t.Fatalf("first: %+v %v", r, err)
	}
	r, err = e.Decide(three, t0) // a refuses: b not charged, s looked at
	if err != nil || r.Overall != policy.CodeOverLimit || short(r.Statuses[0]) != (want{policy.CodeOverLimit, 1, 0}) ||
		short(r.Statuses[1]) != (want{policy.CodeOK, 5, 2}) {
		t.Fatalf("second: %+v %v", r, err)
	}
	if last := up.reqs[len(up.reqs)-1]; !last.Peek || last.Cost != 2 {
		t.Errorf("the shadow rule after a refusal: %+v, want a PEEK of cost 2", last)
	}
	r, err = e.Decide(policy.Request{Domain: "aon", Descriptors: []policy.Descriptor{desc("b", "1"), desc("s", "1")}}, t0)
	if err != nil || r.Statuses[0].Remaining != 3 || r.Statuses[1].Remaining != 3 {
		t.Errorf("b and s after: %+v %v, want 3 left of each (one charged before)", r, err)
	}
	if up.alls != 3 || len(keysOf(st)) != 0 {
		t.Errorf("DecideAll called %d times, the store holds %q: want 3 and none", up.alls, keysOf(st))
	}

	_, err = e.Decide(policy.Request{Domain: "aon", Descriptors: []policy.Descriptor{desc("a", "down"), desc("b", "2")}}, t0)
	if !errors.Is(err, errDown) {
		t.Errorf("the upstream failing: %v, want its error", err)
	}
	_, err = e.Decide(policy.Request{Domain: "aon", Descriptors: []policy.Descriptor{desc("a", "3"), desc("a", "3")}}, t0)
	if !errors.Is(err, policy.ErrInvalidRequest) {
		t.Errorf("two descriptors of one state: %v, want ErrInvalidRequest", err)
	}

	up.prefix = []byte("rl:mixed:fixed")
	upKeys := len(keysOf(up.st))
	_, err = e.Decide(policy.Request{Domain: "mixed", Descriptors: []policy.Descriptor{desc("a", "1"), desc("l", "1")}}, t0)
	if !errors.Is(err, ErrMixedUpstream) || !errors.Is(err, policy.ErrInvalidRequest) {
		t.Errorf("mixed: %v, want ErrMixedUpstream, an invalid request", err)
	}
	if len(keysOf(st)) != 0 || len(keysOf(up.st)) != upKeys {
		t.Errorf("mixed spent: the store holds %q, the upstream %q", keysOf(st), keysOf(up.st))
	}
	up.prefix = []byte("nothing")
	if r, err := e.Decide(policy.Request{Domain: "mixed", Descriptors: []policy.Descriptor{desc("a", "1"), desc("l", "1")}}, t0); err != nil || r.Overall != policy.CodeOK {
		t.Errorf("none the upstream's: %+v %v", r, err)
	}
	if got := keysOf(st); len(got) != 2 || up.alls != 4 {
		t.Errorf("none the upstream's: the store holds %q (want 2 keys), DecideAll called %d times (want 4)", got, up.alls)
	}
}

func equalWants(a, b []want) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}
