package regions_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The policies a region and its home both load (-limits). Domain api's state keys,
// rl:api:..., are the region's (-quota-upstream-prefix rl:api): its user rule is a
// fixed window of policyLimit per policyWindow (not whole seconds, so that a reply's
// reset_after places a call in its window to the ms), its tenant rule a bucket that
// never refuses. Domain api.all's, all_or_nothing, are the region's too but for its
// leaky rule's (a region takes no leaky bucket). Domain local, the same bucket as
// api's, is decided on the region's store.
const (
	policyLimit  = 100
	policyWindow = 1200 * time.Millisecond
	apiPolicy    = `domain: api
descriptors:
  - key: user
    rate_limit: {window: 1200ms, requests_per_unit: 100}
  - key: tenant
    rate_limit: {unit: second, requests_per_unit: 1000000, algorithm: token}
`
	allPolicy = `domain: api.all
all_or_nothing: true
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: l
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: leaky}
`
	localPolicy = `domain: local
descriptors:
  - key: tenant
    rate_limit: {unit: second, requests_per_unit: 1000000, algorithm: token}
`
	// userKey is the state of api's user rule for user alice, as RL.FIXED names it.
	userKey = "rl:api:fixed/1200ms:user=alice"
)

// policyRegion is a home and a region of it through the proxy, both loading the
// policies, the region deciding domain api's from the home's slices and serving
// ShouldRateLimit on rls and /metrics on metrics.
type policyRegion struct {
	home, region *launch.Proc
	px           *proxy
	rls, metrics string
}

func startPolicyRegion(t *testing.T) policyRegion {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"api.yaml": apiPolicy, "all.yaml": allPolicy, "local.yaml": localPolicy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addrs, err := launch.FreeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	home := startServer(t, "-limits", dir)
	px := startProxy(t, home.Addr, linkRTT)
	reg := startServer(t, "-limits", dir, "-quota-upstream", "redis://"+px.addr(), "-quota-upstream-regions", "2",
		"-quota-upstream-prefix", "rl:api", "-rls-addr", addrs[0], "-metrics-addr", addrs[1])
	return policyRegion{home: home, region: reg, px: px, rls: addrs[0], metrics: addrs[1]}
}

// policyArgs is RL.POLICY's call of one descriptor of domain.
func policyArgs(domain, key, value string) []any {
	return []any{"RL.POLICY", domain, "DESCRIPTOR", key, value}
}

// doPolicy makes one RL.POLICY call of one descriptor and records it as do does a
// limiter call's: allowed when its code is OK, its reset_after_ms.
func doPolicy(t testing.TB, rdb *redis.Client, args []any) call {
	start := time.Now()
	v, err := rdb.Do(context.Background(), args...).Slice()
	end := time.Now()
	var st []any
	if err == nil && len(v) == 2 {
		st, _ = v[1].([]any)
	}
	if len(st) != 7 {
		t.Errorf("%v: %v %v", args, v, err)
		return call{sent: start, at: end}
	}
	code, _ := st[0].(int64)
	reset, _ := st[3].(int64)
	return call{sent: start, at: end, allowed: code == 1, took: end.Sub(start), reset: time.Duration(reset) * time.Millisecond}
}

// loadPolicy is load's RL.POLICY twin.
func loadPolicy(t testing.TB, rdb *redis.Client, args []any, n int, pace time.Duration, stop <-chan struct{}) func() []call {
	return loadWith(t, rdb, args, n, pace, stop, doPolicy)
}

// TestRegionPolicyGlobalLimit: RL.POLICY on the region, RL.POLICY on the home and
// RL.FIXED on the home, all on one rule's state, together far above its limit (the
// home's two at 30 calls a window each, so that the region, 50 ms from the home,
// is left some of each window), never admit together more than the limit in a
// window; each side admits some. The region's store holds none of the rule's
// state: it was decided from the home's.
func TestRegionPolicyGlobalLimit(t *testing.T) {
	pr := startPolicyRegion(t)
	stop := make(chan struct{})
	rc, hc := newClient(t, pr.region.Addr), newClient(t, pr.home.Addr)
	homePace := policyWindow / 30
	rcalls := loadPolicy(t, rc, policyArgs("api", "user", "alice"), 4, pace, stop)
	hcalls := loadPolicy(t, hc, policyArgs("api", "user", "alice"), 1, homePace, stop)
	fcalls := load(t, hc, []any{"RL.FIXED", userKey, policyLimit, policyWindow.Milliseconds()}, 1, homePace, stop)
	time.Sleep(3 * policyWindow)
	close(stop)
	rw, hw, fw := perWindow(rcalls(), policyWindow), perWindow(hcalls(), policyWindow), perWindow(fcalls(), policyWindow)
	var rsum, hsum, fsum int
	for _, i := range union(rw, hw, fw) {
		if n := rw[i].allowed + hw[i].allowed + fw[i].allowed; n > policyLimit {
			t.Errorf("window %d: %d admitted (region's RL.POLICY %d, home's %d, home's RL.FIXED %d), limit %d",
				i, n, rw[i].allowed, hw[i].allowed, fw[i].allowed, policyLimit)
		}
		rsum, hsum, fsum = rsum+rw[i].allowed, hsum+hw[i].allowed, fsum+fw[i].allowed
	}
	t.Logf("admitted: region's RL.POLICY %d, home's %d, home's RL.FIXED %d", rsum, hsum, fsum)
	if rsum == 0 || hsum == 0 || fsum == 0 {
		t.Errorf("admitted: region %d, home %d and %d: want every side admitting", rsum, hsum, fsum)
	}
	if keys := scan(t, rc, "rl:api:*"); len(keys) != 0 {
		t.Errorf("the region's store holds %q: want none, the home decided", keys)
	}
	if keys := scan(t, hc, "rl:api:*"); len(keys) != 1 || keys[0] != userKey {
		t.Errorf("the home holds %q, want [%s]", keys, userKey)
	}
}

// TestRegionPolicyAllOrNothing: an all_or_nothing request on a region whose rules
// are all the home's is decided all or none from the home's slices: refused by one
// rule, it leaves the other's count as it was, here and at the home; one whose rules
// are some the home's and some the region's store's is refused as an invalid
// request, nothing spent.
func TestRegionPolicyAllOrNothing(t *testing.T) {
	pr := startPolicyRegion(t)
	rc, hc := newClient(t, pr.region.Addr), newClient(t, pr.home.Addr)
	ctx := context.Background()
	both := []any{"RL.POLICY", "api.all", "DESCRIPTOR", "a", "1", "DESCRIPTOR", "b", "1"}
	codes := func(rdb *redis.Client, args []any) string {
		t.Helper()
		v, err := rdb.Do(ctx, args...).Slice()
		if err != nil {
			return err.Error()
		}
		s := fmt.Sprint(v[0])
		for _, st := range v[1:] {
			st := st.([]any)
			s += fmt.Sprintf(" %v/%v", st[0], st[2]) // code/remaining
		}
		return s
	}
	for _, c := range []struct {
		rdb        *redis.Client
		args       []any
		want, what string
	}{
		{rc, both, "1 1/0 1/4", "the first request: both admitted"},
		{rc, both, "2 2/0 1/3", "a refuses: b's would-be answer, nothing spent"},
		{rc, both, "2 2/0 1/3", "again"},
		{rc, []any{"RL.POLICY", "api.all", "DESCRIPTOR", "b", "1"}, "1 1/3", "b alone: charged once before"},
		{rc, []any{"RL.POLICY", "api.all", "DESCRIPTOR", "a", "2", "DESCRIPTOR", "l", "1"},
			"ERR invalid request: an all_or_nothing request's rules are some decided by the quota upstream and some by this server's store: give the domain's keys one side (-quota-upstream-prefix)",
			"a rule of the home's and a leaky one of the region's store"},
		{rc, []any{"RL.POLICY", "api.all", "DESCRIPTOR", "a", "2"}, "1 1/0", "a=2 after the mixed request: fresh"},
		{rc, []any{"RL.POLICY", "api.all", "DESCRIPTOR", "l", "1"}, "1 1/0", "l alone, on the region's store"},
	} {
		if got := codes(c.rdb, c.args); got != c.want {
			t.Errorf("%s: %v answered %q, want %q", c.what, c.args, got, c.want)
		}
	}
	// At the home, once the region has given back what it holds of b (idle for a
	// second): its two spends, none of its refused requests'. HITS 0 looks.
	look := []any{"RL.POLICY", "api.all", "DESCRIPTOR", "HITS", "0", "b", "1"}
	poll.Until(t, 5*time.Second, "the home to count b's two spends (RL.POLICY ... HITS 0 answering 1 1/3)", func() bool {
		return codes(hc, look) == "1 1/3"
	})
}

// TestRegionPolicyLatency: with the home 50 ms away, a region decides its policies
// at loopback speed, over RESP (RL.POLICY) and gRPC (ShouldRateLimit), as fast as
// its own store decides a domain that is not the home's (the anchor, called in turn
// with it). INFO region and /metrics then show what the region took and used of the
// home's quota, the home reachable.
func TestRegionPolicyLatency(t *testing.T) {
	pr := startPolicyRegion(t)
	rc := newClient(t, pr.region.Addr)
	conn, err := grpc.NewClient(pr.rls, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rls := pb.NewRateLimitServiceClient(conn)
	grpcCall := func(domain string) call {
		req := &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "tenant", Value: "t1"}}}}}
		start := time.Now()
		r, err := rls.ShouldRateLimit(context.Background(), req)
		end := time.Now()
		if err != nil || r.OverallCode != pb.RateLimitResponse_OK {
			t.Errorf("ShouldRateLimit %s: %v %v", domain, r, err)
		}
		return call{sent: start, at: end, allowed: err == nil, took: end.Sub(start)}
	}
	sliced, anchor := policyArgs("api", "tenant", "t1"), policyArgs("local", "tenant", "t1")
	var warm []call
	for range 2000 { // the key's first slices, small and growing, each waited for
		warm = append(warm, doPolicy(t, rc, sliced))
	}
	t.Logf("p99 of the first 2000 region RL.POLICY calls, the slices growing: %v", pct(warm, 99))
	// Rounds of 2000 calls each way, until one round of each front is fast enough
	// (3 at most): a call that waits on the link slows every round, while the
	// machine's noise (2 cores for both servers, the proxy and the clients, and
	// whatever else runs) slows one now and then.
	type front struct {
		name        string
		calls, base []call
		fast        bool
	}
	fronts := []*front{{name: "RL.POLICY"}, {name: "ShouldRateLimit"}}
	rounds := 0
	for ; rounds < 3 && !(fronts[0].fast && fronts[1].fast); rounds++ {
		for _, f := range fronts {
			f.calls, f.base = f.calls[:0], f.base[:0]
		}
		for range 2000 {
			fronts[0].calls = append(fronts[0].calls, doPolicy(t, rc, sliced))
			fronts[0].base = append(fronts[0].base, doPolicy(t, rc, anchor))
			fronts[1].calls = append(fronts[1].calls, grpcCall("api"))
			fronts[1].base = append(fronts[1].base, grpcCall("local"))
		}
		for _, f := range fronts {
			// Under 1 ms; on a machine so loaded that the store's own p99 passes half
			// of that, under a tenth of the link's round trip: no call of the slowest
			// 1% waited on it.
			lp, sp := pct(f.calls, 99), pct(f.base, 99)
			f.fast = f.fast || lp < time.Millisecond || sp >= time.Millisecond/2 && lp < linkRTT/10
			t.Logf("round %d: p99 of 2000 region %s calls %v, its store's in turn %v", rounds, f.name, lp, sp)
		}
	}
	for _, f := range fronts {
		if !f.fast {
			t.Errorf("region %s p99 at least 1 ms in %d rounds, want < 1 ms, or < %v when the store's passes 0.5 ms, in one", f.name, rounds, linkRTT/10)
		}
	}
	// The region's store decided local's calls alone (its buckets, full again a µs
	// after each call, leave no key to look at).
	if stats, err := rc.Info(context.Background(), "stats").Result(); err != nil || !strings.Contains(stats, fmt.Sprintf("\r\nrl_token_allowed:%d\r\n", rounds*4000)) {
		t.Errorf("INFO stats of the region: %v, want rl_token_allowed:%d (local's calls), in %q", err, rounds*4000, stats)
	}

	info := regionInfo(t, rc)
	used := 2000 + rounds*4000 // RESP's and gRPC's calls on api's tenant, each of one unit
	if info["region_home_reachable"] != "1" || info["region_fallback_decisions"] != "0" ||
		!strings.Contains(info["regionstat_rl"], fmt.Sprintf(",used=%d,", used)) {
		t.Errorf("INFO region: %v, want the home reachable, no fallback, %d units used of family rl", info, used)
	}
	metrics := get(t, "http://"+pr.metrics+"/metrics")
	for _, want := range []string{
		fmt.Sprintf("rlserver_slicer_units_used_total{family=\"rl\",slicer=\"region\"} %d\n", used),
		"rlserver_region_home_reachable 1\n",
		"rlserver_region_fallback_decisions_total 0\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no line %q", want)
		}
	}
}

// regionInfo is INFO region's fields.
func regionInfo(t testing.TB, rdb *redis.Client) map[string]string {
	t.Helper()
	s, err := rdb.Info(context.Background(), "region").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// scan is the keys matching pattern.
func scan(t testing.TB, rdb *redis.Client, pattern string) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// get is the body at url.
func get(t testing.TB, url string) string {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
