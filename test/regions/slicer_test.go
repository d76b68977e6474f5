package regions_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/internal/testpki"
)

// TestRegionSlicer: a Go service's Slicer pointed at a region takes its slices of the
// home's quota through the region (RL.SLICE passed on), so that with the home's own
// clients spending the same key the limit holds over both, and the region's store
// keeps nothing of the key. A PEEK slice of such a key is refused.
func TestRegionSlicer(t *testing.T) {
	home, _, reg := startRegion(t, "share")
	const limit = 300
	args := []any{"RL.FIXED", "sl", limit, testenv.YearWindowMs}
	c, err := client.Open("redis://"+reg.Addr, client.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSlicer(client.SliceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hc := newClient(t, home.Addr)
	var viaRegion, atHome atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 150 {
				res, err := s.Allow(context.Background(), "sl", client.Fixed(limit, testenv.YearWindowMs*time.Millisecond))
				if err != nil || res.Degraded {
					t.Errorf("Allow through the region: %+v %v", res, err)
					return
				}
				if res.Allowed {
					viaRegion.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range 150 {
			if do(t, hc, args).allowed {
				atHome.Add(1)
			}
		}
	})
	wg.Wait()
	if n := viaRegion.Load() + atHome.Load(); n != limit {
		t.Errorf("admitted %d through the region and %d at the home: %d, want the limit %d",
			viaRegion.Load(), atHome.Load(), n, limit)
	}
	rc := newClient(t, reg.Addr)
	if n, err := rc.Exists(context.Background(), "sl").Result(); err != nil || n != 0 {
		t.Errorf("the region's store holds the home's key: EXISTS %d %v", n, err)
	}
	err = rc.Do(context.Background(), "RL.SLICE", "FIXED", "sl", limit, testenv.YearWindowMs, 1, "PEEK").Err()
	if err == nil || !strings.Contains(err.Error(), "ask its home") {
		t.Errorf("RL.SLICE ... PEEK on the region: %v, want a refusal", err)
	}
	t.Logf("admitted %d through the region, %d at the home", viaRegion.Load(), atHome.Load())
}

// TestRegionTLSACL: a region reaches its home over TLS (rediss://, the home's CA in
// SSL_CERT_FILE) as an ACL user allowed the limiters and nothing else, and decides
// from the home's quota: the home counts what the region admitted, on the region
// user's TLS connection.
func TestRegionTLSACL(t *testing.T) {
	ca := testpki.NewCA(t, "home")
	cert := ca.Server(t)
	tlsAddr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	home := startServer(t, "-tls-addr", tlsAddr, "-tls-cert", cert.CertFile, "-tls-key", cert.KeyFile)
	hc := newClient(t, home.Addr)
	ctx := context.Background()
	if err := hc.Do(ctx, "ACL", "SETUSER", "region", "on", ">s3cret", "resetkeys", "~rl:*", "-@all", "+@ratelimit").Err(); err != nil {
		t.Fatal(err)
	}
	addr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reg, err := launch.Start(launch.Spec{Name: "region", Addr: addr, Log: filepath.Join(dir, "region.log"),
		Argv: []string{testenv.RLServerBin(t), "-addr", addr, "-dir", dir, "-quota-upstream-prefix", "rl:",
			"-quota-upstream", "rediss://region:s3cret@" + tlsAddr},
		Env: []string{"SSL_CERT_FILE=" + ca.CertFile}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	rc := newClient(t, reg.Addr)
	admitted := 0
	for range 15 {
		if do(t, rc, []any{"RL.FIXED", "rl:k", 10, testenv.YearWindowMs}).allowed {
			admitted++
		}
	}
	if admitted != 10 {
		t.Errorf("the region admitted %d of 15, want the limit's 10", admitted)
	}
	v, err := hc.Do(ctx, "RL.FIXED", "rl:k", 10, testenv.YearWindowMs, "PEEK").Int64Slice()
	if err != nil || v[2] != 0 {
		t.Errorf("the home: %v %v, want the key spent", v, err)
	}
	list, err := hc.ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, "user=region") {
		t.Errorf("CLIENT LIST at the home: %v, want the region's user:\n%s", err, list)
	}
}
