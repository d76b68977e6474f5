package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/resp"
)

// apiPolicy is envoyproxy/ratelimit's format: two requests a day per user, named.
const apiPolicy = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: day, requests_per_unit: 2, name: per-user}
  - key: llm
    rate_limit: {window: 24h, requests_per_unit: 1000, algorithm: token}
`

// Policy decides a request against the policy rlserver runs with (-limits): here an
// rlserver started in-process on a loopback port with that policy loaded.
func ExampleClient_Policy() {
	p, err := config.Parse("api.yaml", []byte(apiPolicy))
	if err != nil {
		log.Fatal(err)
	}
	_, addr, stop, err := launch.InProcess(resp.Config{Policy: p})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := client.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		res, err := c.Policy(ctx, "api", client.D("user", "alice"))
		if err != nil {
			log.Fatal(err)
		}
		st := res.Statuses[0]
		fmt.Printf("allowed=%v %s: %d per %v, remaining %d\n", res.Allowed, st.Name, st.Limit, st.Window, st.Remaining)
	}
	// An LLM gateway reserves 800 tokens, then gives back the 500 the answer did not use.
	res, _ := c.Policy(ctx, "api", client.Descriptor{Entries: []client.Entry{{Key: "llm", Value: "acme"}}, Hits: 800})
	fmt.Println("reserved, remaining", res.Statuses[0].Remaining)
	res, _ = c.Policy(ctx, "api", client.Descriptor{Entries: []client.Entry{{Key: "llm", Value: "acme"}}, Hits: 500, Refund: true})
	fmt.Println("refunded, remaining", res.Statuses[0].Remaining)
	// Output:
	// allowed=true per-user: 2 per 24h0m0s, remaining 1
	// allowed=true per-user: 2 per 24h0m0s, remaining 0
	// allowed=false per-user: 2 per 24h0m0s, remaining 0
	// reserved, remaining 200
	// refunded, remaining 700
}

// TestPolicy: several descriptors answer in request order, an unmatched one has no
// limit, bad requests are ErrBadLimit before any I/O or from the server, and the
// other backends say they have no policies.
func TestPolicy(t *testing.T) {
	p, err := config.Parse("api.yaml", []byte(apiPolicy))
	if err != nil {
		t.Fatal(err)
	}
	c := policyClient(t, p)
	ctx := context.Background()
	res, err := c.Policy(ctx, "api", client.D("color", "red"), client.D("user", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	want := []client.PolicyStatus{{Allowed: true}, {Allowed: true, Limit: 2, Window: 24 * time.Hour, Name: "per-user", Remaining: 1}}
	if !res.Allowed || len(res.Statuses) != 2 || res.Statuses[0] != want[0] ||
		res.Statuses[1].ResetAfter <= 0 || res.Statuses[1].ResetAfter > 24*time.Hour {
		t.Fatalf("Policy = %+v", res)
	}
	got := res.Statuses[1]
	got.ResetAfter = 0
	if got != want[1] {
		t.Fatalf("status 1 = %+v, want %+v", got, want[1])
	}
	for _, bad := range []struct {
		domain string
		ds     []client.Descriptor
	}{
		{"", []client.Descriptor{client.D("user", "bob")}},
		{"api", nil},
		{"api", []client.Descriptor{client.D("user")}},
		{"api", []client.Descriptor{{Entries: []client.Entry{{Key: "user", Value: "bob"}}, Refund: true}}},
		{"api", []client.Descriptor{client.D("", "bob")}}, // refused by the server
	} {
		if _, err := c.Policy(ctx, bad.domain, bad.ds...); !errors.Is(err, client.ErrBadLimit) {
			t.Errorf("Policy(%q, %+v) = %v, want ErrBadLimit", bad.domain, bad.ds, err)
		}
	}
	e, err := client.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Policy(ctx, "api", client.D("user", "bob")); !errors.Is(err, client.ErrNoPolicy) {
		t.Errorf("embedded Policy = %v, want ErrNoPolicy", err)
	}
	dead, err := client.New(redis.NewClient(&redis.Options{Addr: testenv.DeadAddr(t)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Policy(ctx, "api", client.D("user", "bob")); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("Policy on a dead address = %v, want ErrUnavailable", err)
	}
}
