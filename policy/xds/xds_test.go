package xds

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testpki"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/store"
)

const nodeID = "envoy-ratelimit" // Envoy Gateway's CONFIG_GRPC_XDS_NODE_ID

// managementServer is go-control-plane's xDS server, as Envoy Gateway embeds it,
// serving snapshots over mutual TLS and recording the NACKs it gets.
type managementServer struct {
	addr  string
	cache cache.SnapshotCache
	grpc  *grpc.Server

	mu    sync.Mutex
	nacks []string
}

func startManagementServer(t *testing.T, srvCert testpki.Pair, clients *testpki.CA, addr string) *managementServer {
	t.Helper()
	m := &managementServer{cache: cache.NewSnapshotCache(false, cache.IDHash{}, nil)}
	cb := server.CallbackFuncs{StreamRequestFunc: func(_ int64, req *discoverygrpc.DiscoveryRequest) error {
		if req.GetErrorDetail() != nil {
			m.mu.Lock()
			m.nacks = append(m.nacks, req.GetErrorDetail().GetMessage())
			m.mu.Unlock()
		}
		return nil
	}}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{srvCert.TLS}, ClientCAs: clients.Pool, ClientAuth: tls.RequireAndVerifyClientCert})
	m.grpc = grpc.NewServer(grpc.Creds(creds))
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(m.grpc, server.NewServer(context.Background(), m.cache, cb))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	go m.grpc.Serve(ln)
	t.Cleanup(m.grpc.Stop)
	return m
}

// set serves version of the domains on the node.
func (m *managementServer) set(t *testing.T, version string, domains ...*rlsconf.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(domains))
	for i, d := range domains {
		res[i] = d
	}
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cache.SetSnapshot(context.Background(), nodeID, snap); err != nil {
		t.Fatal(err)
	}
}

func (m *managementServer) nacked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.nacks...)
}

// edge is a domain of one rule: user, n per unit.
func edge(n uint32, unit rlsconf.RateLimitUnit) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}},
		{Key: "health", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
	}}
}

// TestRun: rlserver's engine follows a go-control-plane server over mutual TLS: the
// first snapshot is in force once delivered, a new one within a second, a bad one is
// NACKed with the loader's reason while the old one keeps deciding, and a server
// restarted mid-run is found again.
func TestRun(t *testing.T) {
	srvCA, clientCA := testpki.NewCA(t, "xds-server"), testpki.NewCA(t, "xds-clients")
	m := startManagementServer(t, srvCA.Server(t), clientCA, "127.0.0.1:0")
	m.set(t, "1", edge(3, rlsconf.RateLimitUnit_MINUTE))

	st, err := store.New(store.Config{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Server: m.addr, NodeID: nodeID, TLS: &tls.Config{RootCAs: srvCA.Pool, ServerName: "localhost",
		Certificates: []tls.Certificate{clientCA.Client(t, "rlserver").TLS}}}
	go func() { done <- Run(ctx, cfg, e, slog.New(slog.DiscardHandler), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	now := time.Now().UnixMicro()
	limitOf := func(user string) (uint32, policy.Code) {
		r, err := e.Decide(policy.Request{Domain: "edge", Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "user", Value: user}}}}}, now)
		if err != nil || r.Statuses[0].Limit == nil {
			return 0, policy.CodeUnknown
		}
		return r.Statuses[0].Limit.RequestsPerUnit, r.Overall
	}
	poll.Until(t, 10*time.Second, "the first snapshot in force", func() bool { n, _ := limitOf("probe"); return n == 3 })
	for i := range 4 {
		want := policy.CodeOK
		if i == 3 {
			want = policy.CodeOverLimit
		}
		if _, code := limitOf("ann"); code != want {
			t.Fatalf("call %d: %v, want %v", i+1, code, want)
		}
	}

	m.set(t, "2", edge(5, rlsconf.RateLimitUnit_MINUTE))
	poll.Until(t, time.Second, "version 2 in force within a second", func() bool { n, _ := limitOf("probe"); return n == 5 })

	m.set(t, "3", edge(7, rlsconf.RateLimitUnit_UNKNOWN))
	poll.Until(t, 5*time.Second, "version 3 NACKed", func() bool { return len(m.nacked()) > 0 })
	if nack := m.nacked()[0]; !strings.Contains(nack, "invalid rate limit unit 'UNKNOWN'") {
		t.Errorf("NACK %q, want the loader's reason", nack)
	}
	if n, _ := limitOf("probe"); n != 5 {
		t.Errorf("after a NACK the limit is %d, want version 2's 5", n)
	}

	// The server goes away and comes back on the same address with version 4.
	addr := m.addr
	m.grpc.Stop()
	m2 := startManagementServer(t, srvCA.Server(t), clientCA, addr)
	m2.set(t, "4", edge(9, rlsconf.RateLimitUnit_SECOND))
	poll.Until(t, 10*time.Second, "version 4 from the restarted server", func() bool { n, _ := limitOf("probe"); return n == 9 })
}
