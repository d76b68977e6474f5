// Package xds takes the rate-limit policy from an xDS management server, as
// envoyproxy/ratelimit does with CONFIG_TYPE=GRPC_XDS_SOTW, the one way Envoy Gateway
// configures its rate limit service: an aggregated state-of-the-world stream of
// RateLimitConfig resources, a domain each. Every response is turned into the policy
// files envoyproxy/ratelimit would make of it and loaded by policy/config, so what
// xDS delivers is checked and decided as files are; one that does not load is NACKed
// with the reason, and the policy in force stays.
//
// The stream is go-control-plane's discovery client, driven here rather than through
// its sotw.ADSClient, which hides a response's version and type.
package xds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/policy/config"
)

// TypeURL is the type of the resources asked for.
const TypeURL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// The reconnect waits: the first, doubled after each failed attempt up to the last,
// and back to the first once a response arrives.
const (
	firstRetry = 500 * time.Millisecond
	lastRetry  = 30 * time.Second
)

// renackPause is how long a version refused already is held before it is NACKed
// again: go-control-plane's server answers each NACK by sending the version again,
// and without a pause the two would spin (measured: five NACKs of one version in the
// half second of TestSideBySideXDS).
const renackPause = time.Second

// Config says where the policy comes from.
type Config struct {
	Server string      // the management server, host:port or a gRPC target
	NodeID string      // the node id the server knows this service by
	TLS    *tls.Config // nil: plaintext
}

// Target is what a stream updates: a policy engine (engine.Engine is one).
type Target interface {
	// SetPolicy puts p in force.
	SetPolicy(p *config.Policy)
	// LoadResult counts a load, failed if err is not nil.
	LoadResult(err error)
}

// Run keeps a stream to c.Server until ctx ends, putting each policy it delivers in
// force on t and acknowledging it, or NACKing it with the reason. A broken stream is
// opened again after a wait (jittered, doubling from 0.5 s to 30 s). loaded, if not
// nil, is called after each policy put in force. Run returns an error only for a
// Config it cannot use.
func Run(ctx context.Context, c Config, t Target, log *slog.Logger, loaded func()) error {
	if c.Server == "" || c.NodeID == "" {
		return errors.New("xds: a server address and a node id are needed")
	}
	creds := insecure.NewCredentials()
	if c.TLS != nil {
		creds = credentials.NewTLS(c.TLS)
	}
	conn, err := grpc.NewClient(c.Server, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("xds: %w", err)
	}
	defer conn.Close()
	s := &stream{node: &core.Node{Id: c.NodeID}, t: t, log: log, loaded: loaded}
	wait := firstRetry
	for {
		answered, err := s.run(ctx, discovery.NewAggregatedDiscoveryServiceClient(conn))
		if ctx.Err() != nil {
			return nil
		}
		if answered {
			wait = firstRetry
		}
		sleep := wait/2 + rand.N(wait/2+1)
		log.Warn("xds: stream broken, opening again", "server", c.Server, "in", sleep, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(sleep):
		}
		wait = min(2*wait, lastRetry)
	}
}

// stream is what outlives one stream: the version in force, sent again on a new one
// so that an unchanged server need not resend it.
type stream struct {
	node    *core.Node
	t       Target
	log     *slog.Logger
	loaded  func()
	version string // of the policy in force
	refused struct {
		version string         // the last version NACKed
		status  *status.Status // and why
	}
}

// run opens one stream and serves it until it breaks; answered says whether the
// server sent anything.
func (s *stream) run(ctx context.Context, ads discovery.AggregatedDiscoveryServiceClient) (answered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := ads.StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	if err := st.Send(s.request("", nil)); err != nil {
		return false, err
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return answered, err
		}
		answered = true
		if err := st.Send(s.apply(ctx, resp)); err != nil {
			return answered, err
		}
	}
}

// apply loads resp and puts it in force, returning the ACK, or the NACK with why. A
// version refused already is NACKed again after renackPause, not loaded again.
func (s *stream) apply(ctx context.Context, resp *discovery.DiscoveryResponse) *discovery.DiscoveryRequest {
	if v := resp.GetVersionInfo(); v != "" && v == s.refused.version {
		select {
		case <-ctx.Done():
		case <-time.After(renackPause):
		}
		return s.request(resp.GetNonce(), s.refused.status)
	}
	p, err := s.policy(resp)
	s.t.LoadResult(err)
	if err != nil {
		s.log.Error("xds: policy refused, the one in force stays", "version", resp.GetVersionInfo(), "err", err)
		s.refused.version = resp.GetVersionInfo()
		s.refused.status = &status.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
		return s.request(resp.GetNonce(), s.refused.status)
	}
	s.t.SetPolicy(p)
	s.version = resp.GetVersionInfo()
	s.log.Info("xds: policy in force", "version", s.version, "domains", len(p.Domains()))
	if s.loaded != nil {
		s.loaded()
	}
	return s.request(resp.GetNonce(), nil)
}

// policy is resp's resources as a policy.
func (s *stream) policy(resp *discovery.DiscoveryResponse) (*config.Policy, error) {
	if resp.GetTypeUrl() != TypeURL {
		return nil, fmt.Errorf("resources of type %s, want %s", resp.GetTypeUrl(), TypeURL)
	}
	return Policy(resp.GetVersionInfo(), resp.GetResources())
}

// request is a DiscoveryRequest for nonce (empty: the first), a NACK when
// errorDetail is set, naming the version in force.
func (s *stream) request(nonce string, errorDetail *status.Status) *discovery.DiscoveryRequest {
	return &discovery.DiscoveryRequest{Node: s.node, TypeUrl: TypeURL, VersionInfo: s.version,
		ResponseNonce: nonce, ErrorDetail: errorDetail}
}
