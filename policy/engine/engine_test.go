package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/config"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rlserver/rlserver/store"
)

// t0 is a moment 20 s into a minute (and into an hour, a day...): envoyproxy/ratelimit's
// duration_until_reset for a minute is then 40 s.
const t0 = int64(1_700_000_060) * 1e6

const rlPolicy = `domain: rl
descriptors:
  - key: foo
    rate_limit: {unit: minute, requests_per_unit: 2}
    descriptors:
      - key: bar
        rate_limit: {unit: minute, requests_per_unit: 3}
      - key: bar
        value: banned
        rate_limit: {name: banned_limit, unit: minute, requests_per_unit: 0}
      - key: baz
        value: shady
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 1}
      - key: bay
        rate_limit: {unlimited: true}
  - key: category
    value: account
    rate_limit:
      replaces: [{name: banned_limit}]
      unit: minute
      requests_per_unit: 4
  - key: q
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: user
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`

func newEngine(t testing.TB, yaml string) (*Engine, *store.Store) {
	t.Helper()
	p, err := config.Parse("p.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	return New(st, p), st
}

func desc(kv ...string) policy.Descriptor {
	var d policy.Descriptor
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, policy.Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// want is one policy.Status in short: code, requests of the limit (-1: no limit), remaining.
type want struct {
	code      policy.Code
	requests  int64
	remaining uint32
}

func short(s policy.Status) want {
	w := want{s.Code, -1, s.Remaining}
	if s.Limit != nil {
		w.requests = int64(s.Limit.RequestsPerUnit)
	}
	return w
}

// TestDecideAsTheirs walks envoyproxy/ratelimit's decisions, worked out from their
// fixed_cache_impl.go, base_limiter.go and ratelimit.go: each descriptor INCRBY'd on
// its own, over limit when the count after is past requests_per_unit (so refused hits
// count too), remaining limit-count when OK and 0 when over, shadow mode OK, quota
// mode OK without a reset, unlimited OK with 2^32-1, replaced and unmatched OK with no
// limit, a descriptor's own limit on the same counter.
func TestDecideAsTheirs(t *testing.T) {
	e, _ := newEngine(t, rlPolicy)
	O, X := policy.CodeOK, policy.CodeOverLimit
	steps := []struct {
		name    string
		req     policy.Request
		overall policy.Code
		want    []want
	}{
		{"1st", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x")}}, O, []want{{O, 2, 1}}},
		{"2nd", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x")}}, O, []want{{O, 2, 0}}},
		{"3rd over", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x")}}, X, []want{{X, 2, 0}}},
		{"4th over", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x")}}, X, []want{{X, 2, 0}}},
		// INCRBY 0 answers 4 > 2: still over, since the refused hits counted.
		{"hits 0 over", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{{Entries: desc("foo", "x").Entries, HitsSet: true}}}, X, []want{{X, 2, 0}}},
		// The same counter under a descriptor's own limit: 4+1 of 10.
		{"override", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{{Entries: desc("foo", "x").Entries, Limit: &policy.Override{RequestsPerUnit: 10, Unit: policy.UnitMinute}}}}, O, []want{{O, 10, 5}}},
		{"hits_addend 3", policy.Request{Domain: "rl", Hits: 3, Descriptors: []policy.Descriptor{desc("foo", "y")}}, X, []want{{X, 2, 0}}},
		{"per-descriptor hits", policy.Request{Domain: "rl", Hits: 3, Descriptors: []policy.Descriptor{{Entries: desc("foo", "z").Entries, Hits: 2}}}, O, []want{{O, 2, 0}}},
		{"nested", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "bar", "y")}}, O, []want{{O, 3, 2}}},
		{"banned", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "bar", "banned")}}, X, []want{{X, 0, 0}}},
		{"banned replaced", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "bar", "banned"), desc("category", "account")}},
			O, []want{{O, -1, 0}, {O, 4, 3}}},
		{"shadow 1st", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "baz", "shady")}}, O, []want{{O, 1, 0}}},
		{"shadow over", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "baz", "shady")}}, O, []want{{O, 1, 0}}},
		{"unlimited", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x", "bay", "1")}}, O, []want{{O, -1, math.MaxUint32}}},
		{"unmatched", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("nope", "1"), desc("foo", "x", "bar", "y", "deeper", "1")}}, O, []want{{O, -1, 0}, {O, -1, 0}}},
		{"unknown domain", policy.Request{Domain: "other", Descriptors: []policy.Descriptor{desc("foo", "x")}}, O, []want{{O, -1, 0}}},
		{"unknown domain, override", policy.Request{Domain: "other", Descriptors: []policy.Descriptor{{Entries: desc("foo", "x").Entries, Limit: &policy.Override{RequestsPerUnit: 1, Unit: policy.UnitSecond}}}}, O, []want{{O, -1, 0}}},
		{"override unmatched", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{{Entries: desc("nope", "1").Entries, Limit: &policy.Override{RequestsPerUnit: 1, Unit: policy.UnitSecond}}}}, O, []want{{O, 1, 0}}},
		{"quota 1st", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("q", "1")}}, O, []want{{O, 1, 0}}},
		{"quota over", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("q", "1"), desc("foo", "w")}}, O, []want{{O, 1, 0}, {O, 2, 1}}},
		// Each descriptor is charged on its own: the over one does not stop the others.
		{"independent", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x"), desc("foo", "w")}}, X, []want{{X, 2, 0}, {O, 2, 0}}},
	}
	for _, s := range steps {
		resp, err := e.Decide(s.req, t0)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if resp.Overall != s.overall || len(resp.Statuses) != len(s.want) {
			t.Fatalf("%s: overall %v with %d statuses, want %v with %d", s.name, resp.Overall, len(resp.Statuses), s.overall, len(s.want))
		}
		for i, st := range resp.Statuses {
			if got := short(st); got != s.want[i] {
				t.Errorf("%s: status %d %+v, want %+v", s.name, i, got, s.want[i])
			}
			wantReset := time.Duration(0)
			if st.Limit != nil && !(s.name == "quota over" && i == 0) {
				wantReset = 40 * time.Second
				if st.Limit.Unit == policy.UnitSecond {
					wantReset = time.Second
				}
			}
			if st.ResetAfter != wantReset {
				t.Errorf("%s: status %d reset %v, want %v", s.name, i, st.ResetAfter, wantReset)
			}
			if (st.Code == policy.CodeOverLimit) != (st.RetryAfter > 0) {
				t.Errorf("%s: status %d code %v retry %v", s.name, i, st.Code, st.RetryAfter)
			}
		}
	}
	// The next minute starts afresh.
	resp, err := e.Decide(policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x")}}, t0+60e6)
	if err != nil || short(resp.Statuses[0]) != (want{O, 2, 1}) || resp.Statuses[0].ResetAfter != 40*time.Second {
		t.Fatalf("next minute: %+v %v", resp, err)
	}
	// Their counters for rule foo: hits 1,1,1,1,0,3,1,1 (the override counts under the
	// rule it replaced; "independent" adds 1 over for x and 1 within for w).
	st := e.stats[statsKey{"rl", "foo"}]
	for name, got := range map[string][2]uint64{
		"total":  {st.total.Load(), 1 + 1 + 1 + 1 + 0 + 1 + 3 + 2 + 1 + 1 + 1 + 1},
		"over":   {st.over.Load(), 1 + 1 + 0 + 1 + 1},
		"within": {st.within.Load(), 1 + 1 + 1 + 2 + 1 + 1 + 1},
	} {
		if got[0] != got[1] {
			t.Errorf("foo %s: %d, want %d", name, got[0], got[1])
		}
	}
	if sh := e.stats[statsKey{"rl", "foo.baz_shady"}]; sh.shadow.Load() != 1 || sh.over.Load() != 1 {
		t.Errorf("shadow: %d shadow, %d over, want 1, 1", sh.shadow.Load(), sh.over.Load())
	}
}

// TestNearLimitStats checks near_limit against their arithmetic: threshold
// floor(10·0.8) = 8; hits past 8 up to 10 are near, past 10 over.
func TestNearLimitStats(t *testing.T) {
	e, _ := newEngine(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 10}\n")
	for _, hits := range []uint64{7, 2, 3} { // counts 7, 9 (1 near), 12 (1 near, 2 over)
		if _, err := e.Decide(policy.Request{Domain: "d", Hits: hits, Descriptors: []policy.Descriptor{desc("k", "v")}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	st := e.stats[statsKey{"d", "k"}]
	if st.near.Load() != 2 || st.over.Load() != 2 || st.within.Load() != 9 || st.total.Load() != 12 {
		t.Fatalf("near %d over %d within %d total %d, want 2 2 9 12", st.near.Load(), st.over.Load(), st.within.Load(), st.total.Load())
	}
}

// TestAllOrNothing checks that under all_or_nothing a refused descriptor spends none,
// where the default mode spends the others.
func TestAllOrNothing(t *testing.T) {
	const body = `descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: s
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
`
	for _, tc := range []struct {
		policy string
		wantB  uint32 // b's remaining after [a b s], [a b s], [b]
		wantS  uint32
	}{
		{"domain: d\nall_or_nothing: true\n" + body, 3, 3},
		{"domain: d\n" + body, 2, 2},
	} {
		e, _ := newEngine(t, tc.policy)
		both := policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("a", "1"), desc("b", "1"), desc("s", "1")}}
		if r, err := e.Decide(both, t0); err != nil || r.Overall != policy.CodeOK {
			t.Fatalf("first: %+v %v", r, err)
		}
		r, err := e.Decide(both, t0)
		if err != nil || r.Overall != policy.CodeOverLimit || r.Statuses[0].Code != policy.CodeOverLimit || r.Statuses[1].Code != policy.CodeOK {
			t.Fatalf("second: %+v %v", r, err)
		}
		r, err = e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("b", "1"), desc("s", "1")}}, t0)
		if err != nil || r.Statuses[0].Remaining != tc.wantB || r.Statuses[1].Remaining != tc.wantS {
			t.Errorf("%q: b remaining %d, s remaining %d; want %d, %d (%v)", tc.policy[:30], r.Statuses[0].Remaining, r.Statuses[1].Remaining, tc.wantB, tc.wantS, err)
		}
	}
}

// TestDecideRefusesBadInput checks that each bad request is an policy.ErrInvalidRequest
// naming the fault, and that nothing is spent even by the good descriptors beside it.
func TestDecideRefusesBadInput(t *testing.T) {
	e, st := newEngine(t, rlPolicy)
	good := desc("foo", "x")
	many := make([]policy.Descriptor, 10_000)
	for i := range many {
		many[i] = good
	}
	for _, tc := range []struct {
		name string
		req  policy.Request
		want string
	}{
		{"empty domain", policy.Request{Descriptors: []policy.Descriptor{good}}, "domain must not be empty"},
		{"no descriptors", policy.Request{Domain: "rl"}, "descriptor list must not be empty"},
		{"empty key", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{good, desc("", "v")}}, "descriptor 1 entry 0 has an empty key"},
		{"no entries", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{good, {}}}, "descriptor 1 has no entries"},
		{"10,000 descriptors", policy.Request{Domain: "rl", Descriptors: many}, "10000 descriptors, more than 64"},
		{"1 MB value", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{good, desc("foo", strings.Repeat("v", 1<<20))}}, "value longer than 4096 bytes"},
		{"long key", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc(strings.Repeat("k", 300), "v")}}, "key longer than 256 bytes"},
		{"long domain", policy.Request{Domain: strings.Repeat("d", 300), Descriptors: []policy.Descriptor{good}}, "domain longer than 256 bytes"},
		{"deep descriptor", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{{Entries: make([]policy.Entry, 33)}}}, "33 entries, more than 32"},
		{"huge hits", policy.Request{Domain: "rl", Hits: 1 << 41, Descriptors: []policy.Descriptor{good}}, "hits_addend 2199023255552 above"},
		{"override unit", policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{good, {Entries: good.Entries, Limit: &policy.Override{RequestsPerUnit: 5, Unit: policy.UnitUnknown}}}}, "limit override with unit 0"},
	} {
		_, err := e.Decide(tc.req, t0)
		if !errors.Is(err, policy.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want policy.ErrInvalidRequest with %q", tc.name, err, tc.want)
		}
		if n := st.Len(t0); n != 0 {
			t.Fatalf("%s: %d keys spent", tc.name, n)
		}
	}
}

// TestStateKeys checks the store keys' names: readable, escaped, with the algorithm
// and window, and that a changed algorithm starts a new state while a changed limit
// keeps the count.
func TestStateKeys(t *testing.T) {
	e, st := newEngine(t, "domain: a:b\ndescriptors:\n  - key: k=1\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	if _, err := e.Decide(policy.Request{Domain: "a:b", Descriptors: []policy.Descriptor{desc("k=1", "v{x}% :y")}}, t0); err != nil {
		t.Fatal(err)
	}
	_, keys := st.Scan(0, 10, []byte("rl:*"), 0, t0)
	if len(keys) != 1 || string(keys[0]) != "rl:a%3Ab:fixed/60s:k%3D1=v%7Bx%7D%25%20%3Ay" {
		t.Fatalf("keys %q", keys)
	}

	p1 := "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"
	e, st = newEngine(t, p1)
	decide := func() policy.Status {
		t.Helper()
		r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("k", "v")}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return r.Statuses[0]
	}
	decide()
	decide()
	reload := func(yaml string) {
		p, err := config.Parse("p.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		e.SetPolicy(p)
	}
	reload(strings.Replace(p1, "5}", "10}", 1))
	if s := decide(); s.Remaining != 7 {
		t.Fatalf("limit raised to 10 after 2 hits, then 1: remaining %d, want 7", s.Remaining)
	}
	reload(strings.Replace(p1, "5}", "5, algorithm: slide}", 1))
	if s := decide(); s.Remaining != 4 || s.Limit.Algorithm != "slide" {
		t.Fatalf("algorithm changed: %+v, want a fresh slide state (remaining 4)", s)
	}
	_, keys = st.Scan(0, 10, []byte("rl:d:*"), 0, t0)
	if len(keys) != 2 {
		t.Fatalf("keys %q, want the fixed and the slide state", keys)
	}
}

// TestAlgorithms checks that each extension algorithm decides as its RL.* command:
// a limit of 2 admits two calls and refuses the third with a wait.
func TestAlgorithms(t *testing.T) {
	for _, alg := range []string{"fixed", "slide", "log", "token", "gcra", "leaky"} {
		extra := ""
		if alg == "leaky" {
			extra = ", burst: 1" // a queue of one: with none, the bucket takes one call per 45 s
		}
		e, st := newEngine(t, "domain: d\nall_or_nothing: true\ndescriptors:\n  - key: k\n    rate_limit: {window: 90s, requests_per_unit: 2, algorithm: "+alg+extra+"}\n")
		var codes []policy.Code
		var last policy.Status
		for i := 0; i < 3; i++ {
			r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{desc("k", "v")}}, t0)
			if err != nil {
				t.Fatalf("%s: %v", alg, err)
			}
			codes = append(codes, r.Overall)
			last = r.Statuses[0]
		}
		if codes[0] != policy.CodeOK || codes[1] != policy.CodeOK || codes[2] != policy.CodeOverLimit || last.RetryAfter <= 0 || last.Limit.Window != 90*time.Second {
			t.Errorf("%s: codes %v, last %+v", alg, codes, last)
		}
		if _, keys := st.Scan(0, 10, nil, 0, t0); len(keys) != 1 || string(keys[0]) != "rl:d:"+alg+"/90s:k=v" {
			t.Errorf("%s: keys %q", alg, keys)
		}
	}
}

// TestTopRefused checks the refused-most list and detailed_metric's top values.
func TestTopRefused(t *testing.T) {
	e, _ := newEngine(t, rlPolicy)
	for i := 0; i < 20; i++ {
		user := string(rune('a' + i))
		for j := 0; j <= i; j++ { // user a is refused 0 times, b once, ... t 19 times
			if _, err := e.Decide(policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("user", user)}}, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	top := e.TopRefused(3, t0+1e6)
	if len(top) != 3 || top[0] != (Refused{"rl", "user=t", 19, 0}) || top[1].Descriptor != "user=s" || top[2].Descriptor != "user=r" {
		t.Fatalf("top refused: %+v", top)
	}
	if got := e.TopRefused(3, t0+2*60e6); len(got) != 0 {
		t.Fatalf("two minutes later: %+v", got)
	}
	vals := e.stats[statsKey{"rl", "user"}].top.Top(detailedTop)
	if len(vals) != 10 || vals[0].Key != "user=t" || vals[9].Key != "user=k" {
		t.Fatalf("detailed top values: %+v", vals)
	}
}

// TestNegativeHits checks that negative hits give back what was spent, never past the
// limit, and are never refused.
func TestNegativeHits(t *testing.T) {
	e, _ := newEngine(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	decide := func(hits uint64, negative bool) policy.Status {
		t.Helper()
		r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{{Entries: desc("k", "v").Entries, Hits: hits, Negative: negative}}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return r.Statuses[0]
	}
	if s := decide(4, false); s.Remaining != 1 {
		t.Fatalf("spend 4: remaining %d", s.Remaining)
	}
	if s := decide(3, true); s.Code != policy.CodeOK || s.Remaining != 4 {
		t.Fatalf("give back 3: %+v, want remaining 4", s)
	}
	if s := decide(100, true); s.Code != policy.CodeOK || s.Remaining != 5 {
		t.Fatalf("give back 100: %+v, want remaining 5 (the limit)", s)
	}
	if s := decide(5, false); s.Code != policy.CodeOK || s.Remaining != 0 {
		t.Fatalf("spend 5 after the refunds: %+v", s)
	}
	// Past the limit (the refused hits counted): a refund takes the count down from
	// where it is, as DECRBY would.
	decide(3, false) // count 8
	if s := decide(2, true); s.Remaining != 0 {
		t.Fatalf("count 8 less 2: %+v, want remaining 0", s)
	}
	if s := decide(4, true); s.Remaining != 3 {
		t.Fatalf("count 6 less 4: %+v, want remaining 3", s)
	}
}

// TestCollector gathers the metrics through a Prometheus registry.
func TestCollector(t *testing.T) {
	e, _ := newEngine(t, rlPolicy)
	for i := 0; i < 3; i++ {
		if _, err := e.Decide(policy.Request{Domain: "rl", Descriptors: []policy.Descriptor{desc("foo", "x"), desc("user", "u1")}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	e.Decide(policy.Request{Domain: "nope", Descriptors: []policy.Descriptor{desc("foo", "x")}}, t0)
	e.LoadResult(nil)
	e.LoadResult(errors.New("bad"))
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e.Collector()); err != nil {
		t.Fatal(err)
	}
	got, err := testutil.GatherAndCount(reg)
	if err != nil || got == 0 {
		t.Fatalf("gather: %d, %v", got, err)
	}
	expected := `
# HELP rlserver_policy_over_limit_total Hits over the limit (shadow mode included).
# TYPE rlserver_policy_over_limit_total counter
rlserver_policy_over_limit_total{descriptor="foo",domain="rl"} 1
rlserver_policy_over_limit_total{descriptor="user",domain="rl"} 2
# HELP rlserver_policy_loads_total Policy loads, by result.
# TYPE rlserver_policy_loads_total counter
rlserver_policy_loads_total{result="error"} 1
rlserver_policy_loads_total{result="success"} 1
# HELP rlserver_policy_unknown_domain_total Requests of a domain the policy lacks.
# TYPE rlserver_policy_unknown_domain_total counter
rlserver_policy_unknown_domain_total 1
# HELP rlserver_policy_detailed_over_limit Estimated hits over the limit of the 10 values refused most, per detailed_metric rule.
# TYPE rlserver_policy_detailed_over_limit gauge
rlserver_policy_detailed_over_limit{descriptor="user",domain="rl",value="user=u1"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "rlserver_policy_over_limit_total",
		"rlserver_policy_loads_total", "rlserver_policy_unknown_domain_total", "rlserver_policy_detailed_over_limit"); err != nil {
		t.Fatal(err)
	}
}

// TestHugeCounts checks that counts far past the limit (refused hits counted) are
// stored and read back whole: the store widens the record, the count never wraps.
func TestHugeCounts(t *testing.T) {
	e, _ := newEngine(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 5}\n")
	for i, hits := range []uint64{policy.MaxHits, policy.MaxHits, 0} {
		r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{{Entries: desc("k", "v").Entries, Hits: hits, HitsSet: true}}}, t0)
		if err != nil || r.Overall != policy.CodeOverLimit {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	if over := e.stats[statsKey{"d", "k"}].over.Load(); over != 2*policy.MaxHits-5 {
		t.Fatalf("over-limit hits %d, want %d", over, uint64(2*policy.MaxHits-5))
	}
	// Giving back all but 3 of them leaves 2 requests of room.
	for _, hits := range []uint64{policy.MaxHits, policy.MaxHits - 3} {
		r, err := e.Decide(policy.Request{Domain: "d", Descriptors: []policy.Descriptor{{Entries: desc("k", "v").Entries, Hits: hits, Negative: true}}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if hits != policy.MaxHits && r.Statuses[0].Remaining != 2 {
			t.Fatalf("refund: %+v", r)
		}
	}
}

// TestKeyPrefixes checks that every state key starts with its rule's KeyPrefix, the
// bytes the store interns: a prefix that drifted from AppendKey would leave every
// key whole, which no answer shows.
func TestKeyPrefixes(t *testing.T) {
	e, st := newEngine(t, `domain: d:1
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
    descriptors:
      - key: path
        rate_limit: {requests_per_unit: 5, window: 90s, algorithm: token}
  - key: api=key
    value: fixed
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: gcra}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 5}
`)
	prefixes := map[string]bool{}
	for r := range e.Policy().Rules() {
		prefixes[r.KeyPrefix] = true
	}
	for i := range 50 {
		v := fmt.Sprint("v", i)
		for _, d := range []policy.Descriptor{desc("user", v), desc("user", v, "path", "/"+v), desc("api=key", "fixed"), desc("files", "files/"+v)} {
			if _, err := e.Decide(policy.Request{Domain: "d:1", Descriptors: []policy.Descriptor{d}}, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, keys := st.Scan(0, 1000, nil, 0, t0)
	if len(keys) != 102 || len(prefixes) != 4 {
		t.Fatalf("%d keys, %d prefixes; want 102 and 4", len(keys), len(prefixes))
	}
	for _, k := range keys {
		if p := k[:bytes.IndexByte(k, '=')+1]; !prefixes[string(p)] {
			t.Fatalf("key %q: %q is no rule's prefix (%v)", k, p, prefixes)
		}
	}
}
