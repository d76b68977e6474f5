package xds

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/internal/testpki"
	"github.com/rlserver/rlserver/internal/xdstest"
	"github.com/rlserver/rlserver/policy"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/store"
)

// TestRun: rlserver's engine follows a go-control-plane server over mutual TLS: the
// first snapshot is in force once delivered, a new one within a second, a bad one is
// NACKed with the loader's reason while the old one keeps deciding, and a server
// restarted mid-run is found again.
func TestRun(t *testing.T) {
	srvCA, clientCA := testpki.NewCA(t, "xds-server"), testpki.NewCA(t, "xds-clients")
	m := xdstest.Start(t, srvCA.Server(t), clientCA, "127.0.0.1:0")
	m.Set(t, "1", xdstest.Edge(3, rlsconf.RateLimitUnit_MINUTE))

	st, err := store.New(store.Config{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Server: m.Addr, NodeID: xdstest.NodeID, TLS: &tls.Config{RootCAs: srvCA.Pool, ServerName: "localhost",
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

	m.Set(t, "2", xdstest.Edge(5, rlsconf.RateLimitUnit_MINUTE))
	poll.Until(t, time.Second, "version 2 in force within a second", func() bool { n, _ := limitOf("probe"); return n == 5 })

	m.Set(t, "3", xdstest.Edge(7, rlsconf.RateLimitUnit_UNKNOWN))
	poll.Until(t, 5*time.Second, "version 3 NACKed", func() bool { return len(m.NACKs()) > 0 })
	if nack := m.NACKs()[0]; !strings.Contains(nack, "invalid rate limit unit 'UNKNOWN'") {
		t.Errorf("NACK %q, want the loader's reason", nack)
	}
	if n, _ := limitOf("probe"); n != 5 {
		t.Errorf("after a NACK the limit is %d, want version 2's 5", n)
	}

	// The server goes away and comes back on the same address with version 4.
	addr := m.Addr
	m.Stop()
	m2 := xdstest.Start(t, srvCA.Server(t), clientCA, addr)
	m2.Set(t, "4", xdstest.Edge(9, rlsconf.RateLimitUnit_SECOND))
	poll.Until(t, 10*time.Second, "version 4 from the restarted server", func() bool { n, _ := limitOf("probe"); return n == 9 })
}

// TestRunWrongServerCA: a server whose certificate another CA signed is refused: no
// policy comes into force, and each attempt logs the handshake's reason, while Run
// keeps trying (the server may be fixed while rlserver runs).
func TestRunWrongServerCA(t *testing.T) {
	srvCA, otherCA, clientCA := testpki.NewCA(t, "xds-server"), testpki.NewCA(t, "another"), testpki.NewCA(t, "xds-clients")
	m := xdstest.Start(t, otherCA.Server(t), clientCA, "127.0.0.1:0")
	m.Set(t, "1", xdstest.Edge(3, rlsconf.RateLimitUnit_MINUTE))

	st, err := store.New(store.Config{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(st, nil)
	var logs testenv.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Server: m.Addr, NodeID: xdstest.NodeID, TLS: &tls.Config{RootCAs: srvCA.Pool, ServerName: "localhost",
		Certificates: []tls.Certificate{clientCA.Client(t, "rlserver").TLS}}}
	go func() { done <- Run(ctx, cfg, e, slog.New(slog.NewTextHandler(&logs, nil)), nil) }()
	poll.Until(t, 10*time.Second, "the handshake's failure logged", func() bool {
		return strings.Contains(logs.String(), "certificate signed by unknown authority")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	r, err := e.Decide(policy.Request{Domain: "edge", Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "user", Value: "ann"}}}}}, time.Now().UnixMicro())
	if err == nil && len(r.Statuses) > 0 && r.Statuses[0].Limit != nil {
		t.Errorf("a policy came into force from a server of another CA: %+v", r.Statuses[0].Limit)
	}
	if len(m.NACKs()) != 0 {
		t.Errorf("NACKs %q: nothing should have been delivered", m.NACKs())
	}
}
