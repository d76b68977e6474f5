// Package xdstest is an xDS management server for tests: go-control-plane's own, as
// Envoy Gateway embeds it, serving RateLimitConfig snapshots over mutual TLS and
// recording the NACKs it gets.
package xdstest

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rlserver/rlserver/internal/testpki"
)

// NodeID is the node the snapshots are served to: Envoy Gateway's
// CONFIG_GRPC_XDS_NODE_ID.
const NodeID = "envoy-ratelimit"

// Server is a running management server.
type Server struct {
	Addr  string
	cache cache.SnapshotCache
	grpc  *grpc.Server

	mu    sync.Mutex
	nacks []string
}

// Start serves on addr ("127.0.0.1:0": any port) with the server certificate
// srvCert, asking for a client certificate clients signed; Stop or the test's end
// stops it.
func Start(t testing.TB, srvCert testpki.Pair, clients *testpki.CA, addr string) *Server {
	t.Helper()
	m := &Server{cache: cache.NewSnapshotCache(false, cache.IDHash{}, nil)}
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
	m.Addr = ln.Addr().String()
	go m.grpc.Serve(ln)
	t.Cleanup(m.grpc.Stop)
	return m
}

// Stop stops the server, closing its streams.
func (m *Server) Stop() { m.grpc.Stop() }

// Set serves version of the domains to NodeID.
func (m *Server) Set(t testing.TB, version string, domains ...*rlsconf.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(domains))
	for i, d := range domains {
		res[i] = d
	}
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cache.SetSnapshot(context.Background(), NodeID, snap); err != nil {
		t.Fatal(err)
	}
}

// NACKs are the reasons of the NACKs received so far.
func (m *Server) NACKs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.nacks...)
}

// Edge is a domain "edge" of two rules: user, n per unit, and health, unlimited.
func Edge(n uint32, unit rlsconf.RateLimitUnit) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}},
		{Key: "health", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
	}}
}
