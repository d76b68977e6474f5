package gateway

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// call is one request of a side-by-side sequence, sent times times to each server.
type call struct {
	name   string
	domain string
	hits   uint32
	descs  []*rlv3.RateLimitDescriptor
	times  int
}

// policySet is a set of policy files and the calls made under them.
type policySet struct {
	name  string
	files map[string]string // file name -> YAML
	calls []call
}

// hitsOf gives d its own hits_addend.
func hitsOf(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// overrideOf gives d its own limit.
func overrideOf(d *rlv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit) *rlv3.RateLimitDescriptor {
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	return d
}

func one(name, domain string, times int, kv ...string) call {
	return call{name: name, domain: domain, times: times, descs: []*rlv3.RateLimitDescriptor{desc(kv...)}}
}

func many(name, domain string, times int, descs ...*rlv3.RateLimitDescriptor) call {
	return call{name: name, domain: domain, times: times, descs: descs}
}

// ourPolicy is ours, in their format only (fixed windows), so both decide it.
const ourPolicy = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
    descriptors:
      - key: path
        value: /login
        rate_limit: {name: login, unit: minute, requests_per_unit: 2}
      - key: path
        rate_limit: {unit: hour, requests_per_unit: 100}
  - key: plan
    value: free
    rate_limit: {name: free, unit: day, requests_per_unit: 4}
  - key: tenant
    rate_limit:
      unit: minute
      requests_per_unit: 10
      replaces: [{name: free}]
  - key: canary
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: health
    rate_limit: {unlimited: true}
  - key: tokens
    value: "gpt*"
    rate_limit: {unit: hour, requests_per_unit: 1000}
`

// theirFiles reads envoyproxy/ratelimit's own policy files from the module cache
// (never copied into this repository), or fails or skips as tool does.
func theirFiles(t testing.TB, paths ...string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com/envoyproxy/ratelimit@"+launch.RatelimitVersion)
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			msg := fmt.Sprintf("envoyproxy/ratelimit's %s not in the module cache (%v): go install github.com/envoyproxy/ratelimit/src/service_cmd@%s", p, err, launch.RatelimitVersion)
			if os.Getenv(requireEnv) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		files[strings.ReplaceAll(p, "/", "_")] = string(b)
	}
	return files
}

func policySets(t testing.TB) []policySet {
	d := desc
	return []policySet{
		{"examples", theirFiles(t, "examples/ratelimit/config/config.yaml", "examples/ratelimit/config/example.yaml"), []call{
			one("mongo users", "mongo_cps", 3, "database", "users"),
			one("mongo default", "mongo_cps", 2, "database", "default"),
			one("mongo unmatched", "mongo_cps", 2, "database", "other"),
			one("account", "rl", 6, "category", "account"),
			one("proxy bkthomps", "rl", 3, "source_cluster", "proxy", "destination_cluster", "bkthomps"),
			one("proxy mock", "rl", 2, "source_cluster", "proxy", "destination_cluster", "mock"),
			one("proxy override", "rl", 3, "source_cluster", "proxy", "destination_cluster", "override"),
			one("proxy fake", "rl", 3, "source_cluster", "proxy", "destination_cluster", "fake"),
			one("foo", "rl", 3, "foo", "x"),
			one("foo bar", "rl", 4, "foo", "x", "bar", "y"),
			one("foo bar bkthomps", "rl", 2, "foo", "x", "bar", "bkthomps"),
			one("foo bar banned", "rl", 2, "foo", "x", "bar", "banned"),
			one("foo baz per second", "rl", 3, "foo", "x", "baz", "z"),
			one("foo baz not-so-shady", "rl", 4, "foo", "x", "baz", "not-so-shady"),
			one("foo baz shady (shadow mode)", "rl", 5, "foo", "x", "baz", "shady"),
			one("foo bay unlimited", "rl", 3, "foo", "x", "bay", "1"),
			one("unspec", "rl", 3, "unspec", "a"),
			one("qux unlimited", "rl", 2, "qux", "1"),
			one("unmatched second level", "rl", 2, "source_cluster", "proxy", "destination_cluster", "nowhere"),
			many("replaces bkthomps and fake_name", "rl", 3, d("category", "account"), d("source_cluster", "proxy", "destination_cluster", "bkthomps"),
				d("foo", "r", "bar", "bkthomps"), d("source_cluster", "proxy", "destination_cluster", "fake")),
			many("replaces banned_limit", "rl", 2, d("source_cluster", "proxy", "destination_cluster", "override"), d("foo", "r", "bar", "banned")),
			{name: "request hits_addend 3", domain: "rl", hits: 3, times: 3, descs: []*rlv3.RateLimitDescriptor{d("foo", "q", "bar", "w")}},
			many("descriptor hits_addend 2 and 0", "rl", 3, hitsOf(d("foo", "h", "bar", "k"), 2), hitsOf(d("unspec", "h"), 0)),
			{name: "descriptor hits_addend over request's", domain: "rl", hits: 5, times: 2, descs: []*rlv3.RateLimitDescriptor{hitsOf(d("foo", "i", "bar", "k"), 1), d("foo", "j")}},
			many("override on a rule", "rl", 4, overrideOf(d("foo", "o"), 3, typev3.RateLimitUnit_HOUR)),
			many("override unmatched", "rl", 3, overrideOf(d("nothing", "here"), 2, typev3.RateLimitUnit_MINUTE)),
			one("unknown domain", "no-such-domain", 2, "foo", "x"),
			many("multi, one over", "rl", 3, d("foo", "m"), d("category", "account"), d("qux", "2"), d("database", "users")),
		}},
		{"integration", theirFiles(t, "test/integration/runtime/current/ratelimit/config/basic.yaml",
			"test/integration/runtime/current/ratelimit/config/another.yaml", "test/integration/runtime/current/ratelimit/config/share_threshold.yaml"), []call{
			{name: "key1 hits 20", domain: "basic", hits: 20, times: 4, descs: []*rlv3.RateLimitDescriptor{d("key1", "a")}},
			one("one per minute", "basic", 3, "one_per_minute", "x"),
			one("key2", "another", 3, "key2", "v"),
			one("key3", "another", 12, "key3", "v"),
			one("key4", "another", 2, "key4", "v"),
			one("files share threshold a", "share-threshold-test", 6, "files", "files/a"),
			one("files share threshold b", "share-threshold-test", 6, "files", "files/b"),
			one("files_no_share a", "share-threshold-test", 6, "files_no_share", "files_no_share/a"),
			one("files_no_share b", "share-threshold-test", 6, "files_no_share", "files_no_share/b"),
		}},
		{"basic_config", theirFiles(t, "test/config/basic_config.yaml"), []call{
			one("key1 subkey1", "test-domain", 7, "key1", "value1", "subkey1", "x"),
			one("key1 subkey1 subvalue1", "test-domain", 12, "key1", "value1", "subkey1", "subvalue1"),
			one("key1 only (no limit)", "test-domain", 2, "key1", "value1"),
			one("key2", "test-domain", 3, "key2", "other"),
			one("key2 value2", "test-domain", 3, "key2", "value2"),
			one("key2 value3 whitelisted", "test-domain", 3, "key2", "value3"),
			one("key3", "test-domain", 3, "key3", "x"),
			one("key4 named", "test-domain", 2, "key4", "x"),
			one("key5 subkey5", "test-domain", 2, "key5", "value5", "subkey5", "subvalue5"),
			one("key6 unlimited", "test-domain", 2, "key6", "x"),
			one("key7", "test-domain", 2, "key7", "x"),
		}},
		{"wildcard", theirFiles(t, "test/config/wildcard.yaml"), []call{
			one("wild foo1", "test-domain", 3, "wild", "foo1"),
			one("wild foo2", "test-domain", 3, "wild", "foo2"),
			one("wild bar (unmatched)", "test-domain", 2, "wild", "bar"),
			one("noWild foo", "test-domain", 2, "noWild", "foo"),
			one("noWild foo1 (unmatched)", "test-domain", 2, "noWild", "foo1"),
			one("noVal", "test-domain", 2, "noVal", "x"),
			one("midWild", "test-domain", 2, "midWild", "barxb"),
			one("nestedWild", "test-domain", 2, "nestedWild", "val1", "wild", "goo2"),
		}},
		{"shadowmode_config", theirFiles(t, "test/config/shadowmode_config.yaml"), []call{
			one("subkey1 per second", "test-domain", 7, "key1", "value1", "subkey1", "x"),
			one("subvalue1 shadow", "test-domain", 12, "key1", "value1", "subkey1", "subvalue1"),
			{name: "key2 shadow, hits 15", domain: "test-domain", hits: 15, times: 3, descs: []*rlv3.RateLimitDescriptor{d("key2", "x")}},
			{name: "key2 value2, hits 15", domain: "test-domain", hits: 15, times: 3, descs: []*rlv3.RateLimitDescriptor{d("key2", "value2")}},
		}},
		{"ours", map[string]string{"edge.yaml": ourPolicy}, []call{
			one("per ip per second", "edge", 5, "remote_address", "10.0.0.1"),
			one("user", "edge", 7, "user", "alice"),
			one("user login", "edge", 4, "user", "bob", "path", "/login"),
			one("user other path", "edge", 3, "user", "bob", "path", "/x"),
			many("plan free replaced by tenant", "edge", 6, d("plan", "free"), d("tenant", "t1")),
			one("plan free alone", "edge", 6, "plan", "free"),
			one("canary shadow", "edge", 3, "canary", "c"),
			one("health unlimited", "edge", 2, "health", "x"),
			{name: "tokens hits 400", domain: "edge", hits: 400, times: 4, descs: []*rlv3.RateLimitDescriptor{d("tokens", "gpt-4")}},
			many("five descriptors", "edge", 4, d("remote_address", "10.0.0.2"), d("user", "carol"), d("user", "carol", "path", "/login"),
				d("canary", "c2"), d("health", "h")),
			many("override per second", "edge", 4, overrideOf(d("user", "dave"), 2, typev3.RateLimitUnit_SECOND)),
			one("unmatched key", "edge", 2, "nope", "x"),
		}},
	}
}

// TestSideBySide sends the same requests to envoyproxy/ratelimit on a real Redis and
// to rlserver's front on the policy engine, each under the same policy files (theirs
// and ours), and wants the same code, current_limit and limit_remaining, the same
// headers, and duration_until_reset within a second.
func TestSideBySide(t *testing.T) {
	bin, err := launch.RatelimitBin()
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	sets := policySets(t)
	diffs, compared, straddled := 0, 0, 0
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			redisAddr := testenv.StartRedis(t) // theirs keys domain and value, not the set
			root := t.TempDir()
			cfgDir := filepath.Join(root, "rl", "config")
			if err := os.MkdirAll(cfgDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range set.files {
				if err := os.WriteFile(filepath.Join(cfgDir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, _, err := launch.Ratelimit(bin, t.TempDir(), redisAddr, root, "rl", "LIMIT_RESPONSE_HEADERS_ENABLED=true")
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			theirs := pb.NewRateLimitServiceClient(conn)
			pol, err := config.Load(cfgDir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := store.New(store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ours := startFront(t, Config{Decider: engine.New(st, pol), Headers: DefaultHeaders}).client
			for _, c := range set.calls {
			pairs:
				for i := range c.times {
					awayFromBoundary()
					req := &pb.RateLimitRequest{Domain: c.domain, Descriptors: c.descs, HitsAddend: c.hits}
					began := time.Now()
					want, werr := theirs.ShouldRateLimit(ctxT(t), req)
					got, gerr := ours.ShouldRateLimit(ctxT(t), req)
					if time.Now().Unix() != began.Unix() {
						// The two halves fell in different windows: this case's counts
						// can no longer be compared (a machine too loaded to answer in
						// 200 ms); a later case starts afresh.
						straddled++
						t.Logf("%s #%d: theirs and ours straddled a second boundary; the rest of the case is not compared", c.name, i+1)
						break pairs
					}
					compared++
					if werr != nil || gerr != nil {
						if (werr == nil) != (gerr == nil) {
							diffs++
							t.Errorf("%s #%d: theirs %v, ours %v", c.name, i+1, werr, gerr)
						}
						continue
					}
					if d := differences(want, got); d != "" {
						diffs++
						t.Errorf("%s #%d:%s\n  theirs %v\n  ours   %v", c.name, i+1, d, want, got)
					}
				}
			}
		})
	}
	t.Logf("%d responses compared, %d differences; %d cases cut short by a second boundary", compared, diffs, straddled)
	if straddled > 10 {
		t.Errorf("%d cases cut short: too few responses compared", straddled)
	}
}

// awayFromBoundary waits out the last 200 ms of a second (every window's end is a
// second's), so that a call's two halves (theirs, then ours) fall in the same fixed
// window; both servers take the time from the wall clock, which a test cannot set
// for theirs.
func awayFromBoundary() {
	if ns := time.Now().Nanosecond(); ns > 800e6 {
		time.Sleep(time.Duration(1e9-ns) + 2*time.Millisecond)
	}
}

// differences says how got differs from want in what must be equal.
func differences(want, got *pb.RateLimitResponse) string {
	var b strings.Builder
	if want.OverallCode != got.OverallCode {
		fmt.Fprintf(&b, " overall_code %v, want %v;", got.OverallCode, want.OverallCode)
	}
	if len(want.Statuses) != len(got.Statuses) {
		fmt.Fprintf(&b, " %d statuses, want %d;", len(got.Statuses), len(want.Statuses))
		return b.String()
	}
	for i, w := range want.Statuses {
		g := got.Statuses[i]
		if w.Code != g.Code {
			fmt.Fprintf(&b, " status %d code %v, want %v;", i, g.Code, w.Code)
		}
		if !proto.Equal(w.CurrentLimit, g.CurrentLimit) {
			fmt.Fprintf(&b, " status %d current_limit %v, want %v;", i, g.CurrentLimit, w.CurrentLimit)
		}
		if w.LimitRemaining != g.LimitRemaining {
			fmt.Fprintf(&b, " status %d limit_remaining %d, want %d;", i, g.LimitRemaining, w.LimitRemaining)
		}
		if (w.DurationUntilReset == nil) != (g.DurationUntilReset == nil) ||
			math.Abs(float64(w.DurationUntilReset.AsDuration()-g.DurationUntilReset.AsDuration())) > float64(time.Second) {
			fmt.Fprintf(&b, " status %d duration_until_reset %v, want %v;", i, g.DurationUntilReset.AsDuration(), w.DurationUntilReset.AsDuration())
		}
	}
	wh, gh := want.ResponseHeadersToAdd, got.ResponseHeadersToAdd
	if len(wh) != len(gh) {
		fmt.Fprintf(&b, " headers %v, want %v;", gh, wh)
		return b.String()
	}
	for i := range wh {
		if wh[i].Key != gh[i].Key || (wh[i].Value != gh[i].Value && !(strings.HasSuffix(wh[i].Key, "Reset") && within1(wh[i].Value, gh[i].Value))) {
			fmt.Fprintf(&b, " header %s: %s, want %s: %s;", gh[i].Key, gh[i].Value, wh[i].Key, wh[i].Value)
		}
	}
	return b.String()
}

// within1 says whether two decimal second counts differ by at most one.
func within1(a, b string) bool {
	var x, y int64
	if _, err := fmt.Sscan(a, &x); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &y); err != nil {
		return false
	}
	return x-y <= 1 && y-x <= 1
}
