package gateway

import (
	"context"
	"crypto/tls"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/internal/testpki"
	"github.com/rlserver/rlserver/internal/xdstest"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/policy/xds"
	"github.com/rlserver/rlserver/store"
)

// xdsPolicy is version n of the side-by-side xDS policy: nested descriptors, a
// named rule another replaces, shadow mode and an unlimited key, the user limit n.
func xdsPolicy(n uint32) *rlsconf.RateLimitConfig {
	perMinute := func(rpu uint32) *rlsconf.RateLimitPolicy {
		return &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: rpu}
	}
	return &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "user", RateLimit: perMinute(n)},
		{Key: "api_key", Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "path", Value: "/login", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 2, Name: "login"}},
			{Key: "path", RateLimit: perMinute(4)},
		}},
		{Key: "vip", Value: "yes", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 100,
			Replaces: []*rlsconf.RateLimitReplace{{Name: "login"}}}},
		{Key: "canary", ShadowMode: true, RateLimit: perMinute(1)},
		{Key: "health", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
	}}
}

// TestSideBySideXDS: envoyproxy/ratelimit (CONFIG_TYPE=GRPC_XDS_SOTW, on a real Redis)
// and rlserver's front take one policy from one go-control-plane xDS server over
// mutual TLS, and answer the same requests alike; a new snapshot is in force on both
// within a second; a bad one is NACKed by both, each with its reason, and the old
// policy keeps deciding on both.
func TestSideBySideXDS(t *testing.T) {
	bin, err := launch.RatelimitBin()
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ca := testpki.NewCA(t, "xds")
	m := xdstest.Start(t, ca.Server(t), ca, "127.0.0.1:0")
	m.Set(t, "1", xdsPolicy(3))

	theirCert := ca.Client(t, "ratelimit")
	p, _, err := launch.Ratelimit(bin, t.TempDir(), testenv.StartRedis(t), t.TempDir(), "rl", "LIMIT_RESPONSE_HEADERS_ENABLED=true",
		"CONFIG_TYPE=GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL="+m.Addr, "CONFIG_GRPC_XDS_NODE_ID="+xdstest.NodeID,
		"CONFIG_GRPC_XDS_SERVER_USE_TLS=true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT="+theirCert.CertFile,
		"CONFIG_GRPC_XDS_CLIENT_TLS_KEY="+theirCert.KeyFile, "CONFIG_GRPC_XDS_SERVER_TLS_CACERT="+ca.CertFile,
		"CONFIG_GRPC_XDS_SERVER_TLS_SAN=localhost")
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

	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := xds.Config{Server: m.Addr, NodeID: xdstest.NodeID, TLS: &tls.Config{RootCAs: ca.Pool, ServerName: "localhost",
		Certificates: []tls.Certificate{ca.Client(t, "rlserver").TLS}}}
	go func() { done <- xds.Run(ctx, cfg, e, slog.New(slog.DiscardHandler), nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	ours := startFront(t, Config{Decider: e, Headers: DefaultHeaders}).client

	entries := func(kv ...string) *rlv3.RateLimitDescriptor {
		d := &rlv3.RateLimitDescriptor{}
		for i := 0; i < len(kv); i += 2 {
			d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
		}
		return d
	}
	limitOf := func(c pb.RateLimitServiceClient, user string) uint32 {
		r, err := c.ShouldRateLimit(ctxT(t), &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{entries("user", user)}})
		if err != nil || r.Statuses[0].CurrentLimit == nil {
			return 0
		}
		return r.Statuses[0].CurrentLimit.RequestsPerUnit
	}
	poll.Until(t, 10*time.Second, "version 1 in force on ours", func() bool { return limitOf(ours, "probe") == 3 })

	compare := func(round string, calls []call) {
		t.Helper()
		for _, c := range calls {
			for i := range c.times {
				awayFromBoundary()
				req := &pb.RateLimitRequest{Domain: c.domain, Descriptors: c.descs}
				want, werr := theirs.ShouldRateLimit(ctxT(t), req)
				got, gerr := ours.ShouldRateLimit(ctxT(t), req)
				if werr != nil || gerr != nil {
					t.Fatalf("%s %s #%d: theirs %v, ours %v", round, c.name, i+1, werr, gerr)
				}
				if d := differences(want, got); d != "" {
					t.Errorf("%s %s #%d:%s\n  theirs %v\n  ours   %v", round, c.name, i+1, d, want, got)
				}
			}
		}
	}
	calls := func(user string) []call {
		return []call{
			many("user", "edge", 5, entries("user", user)),
			many("login", "edge", 3, entries("api_key", "k1", "path", "/login")),
			many("other path", "edge", 5, entries("api_key", "k1", "path", "/docs")),
			many("vip replaces login", "edge", 3, entries("api_key", "k2", "path", "/login"), entries("vip", "yes")),
			many("shadow", "edge", 3, entries("canary", "c")),
			many("unlimited", "edge", 2, entries("health", "h")),
			many("unmatched", "edge", 2, entries("nothing", "x")),
		}
	}
	compare("version 1", calls("ann"))

	m.Set(t, "2", xdsPolicy(10))
	for name, c := range map[string]pb.RateLimitServiceClient{"theirs": theirs, "ours": ours} {
		poll.Until(t, time.Second, "version 2 in force on "+name+" within a second", func() bool { return limitOf(c, "probe") == 10 })
	}
	compare("version 2", calls("bob"))

	bad := xdsPolicy(20)
	bad.Descriptors[0].RateLimit.Unit = rlsconf.RateLimitUnit_UNKNOWN
	m.Set(t, "3", bad)
	// Both NACK it, each with its loader's reason.
	nacked := func(reason string) bool {
		return slices.ContainsFunc(m.NACKs(), func(n string) bool { return strings.Contains(n, reason) })
	}
	poll.Until(t, 5*time.Second, "version 3 NACKed by both", func() bool {
		return nacked("descriptor 'edge.user': invalid rate limit unit 'UNKNOWN'") && nacked("edge: invalid rate limit unit 'UNKNOWN'")
	})
	for name, c := range map[string]pb.RateLimitServiceClient{"theirs": theirs, "ours": ours} {
		if n := limitOf(c, "probe"); n != 10 {
			t.Errorf("%s after a bad snapshot: limit %d, want version 2's 10", name, n)
		}
	}
}
