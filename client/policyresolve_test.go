package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/policy/config"
)

// resolvePolicy has a rule of each kind ResolvePolicy answers differently.
const resolvePolicy = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: day, requests_per_unit: 2, name: per-user}
  - key: llm
    rate_limit: {window: 24h, requests_per_unit: 1000, algorithm: token, burst: 1500}
  - key: log
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: log}
  - key: fine
    rate_limit: {window: 1500us, requests_per_unit: 5}
  - key: shady
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: internal
    rate_limit: {unlimited: true}
`

// allPolicy is a domain all_or_nothing.
const allPolicy = `domain: all
all_or_nothing: true
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: gcra, burst: 2}
`

// TestResolvePolicy: each descriptor's rule, key and Limit; the key and Limit spend
// the very state RL.POLICY decides by (an Allow on them leaves RL.POLICY one less);
// what cannot be a Limit or a slice says so; bad input is ErrBadLimit, the other
// backends ErrNoPolicy.
func TestResolvePolicy(t *testing.T) {
	p, err := config.ParseFiles("test", []config.File{{Name: "api.yaml", Data: []byte(resolvePolicy)}, {Name: "all.yaml", Data: []byte(allPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	c := policyClient(t, p)
	ctx := context.Background()
	res, err := c.ResolvePolicy(ctx, "api", client.D("user", "bob"), client.D("llm", "acme"), client.D("log", "x"),
		client.D("fine", "y"), client.D("shady", "z"), client.D("internal", "i"), client.D("color", "red"))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rules
	switch {
	case !res.Known || res.AllOrNothing || len(r) != 7:
		t.Fatalf("ResolvePolicy = %+v", res)
	case r[0].Mode != client.RuleEnforce || r[0].Key != "rl:api:fixed/86400s:user=bob" || r[0].Limit != client.Fixed(2, 24*time.Hour) ||
		r[0].Requests != 2 || r[0].Window != 24*time.Hour || r[0].Name != "per-user" || !r[0].Sliceable():
		t.Fatalf("user: %+v", r[0])
	case r[1].Limit != client.TokenRate(1000, 24*time.Hour, 1500) || r[1].Requests != 1000 || !r[1].Sliceable():
		t.Fatalf("llm: %+v", r[1])
	case r[2].Limit != client.Log(5, time.Minute) || r[2].Sliceable():
		t.Fatalf("log: %+v", r[2])
	case r[3].Limit != (client.Limit{}) || r[3].Window != 1500*time.Microsecond || r[3].Key == "" || r[3].Sliceable():
		t.Fatalf("a window finer than a ms: %+v", r[3])
	case r[4].Mode != client.RuleShadow || r[5].Mode != client.RuleUnlimited || r[5].Key != "" || r[6].Mode != client.RuleNone || r[6].Key != "":
		t.Fatalf("shadow, unlimited, none: %+v", r[4:])
	}
	if _, err := c.Allow(ctx, r[0].Key, r[0].Limit); err != nil {
		t.Fatal(err)
	}
	if pol, err := c.Policy(ctx, "api", client.D("user", "bob")); err != nil || pol.Statuses[0].Remaining != 0 {
		t.Fatalf("RL.POLICY after an Allow on the resolved key: %+v, %v; want 0 left", pol, err)
	}
	res, err = c.ResolvePolicy(ctx, "all", client.D("user", "bob"))
	if err != nil || !res.AllOrNothing || res.Rules[0].Limit != client.GCRA(3, time.Minute, 2) {
		t.Fatalf("all_or_nothing domain: %+v, %v", res, err)
	}
	if res, err = c.ResolvePolicy(ctx, "nosuch", client.D("user", "bob")); err != nil || res.Known || res.Rules[0].Mode != client.RuleNone {
		t.Fatalf("unknown domain: %+v, %v", res, err)
	}
	for _, bad := range [][]client.Descriptor{nil, {client.D("user")}, {{Entries: []client.Entry{{Key: "user", Value: "bob"}}, Hits: 2}},
		{client.D("", "bob")}} { // the last refused by the server
		if _, err := c.ResolvePolicy(ctx, "api", bad...); !errors.Is(err, client.ErrBadLimit) {
			t.Errorf("ResolvePolicy(%+v) = %v, want ErrBadLimit", bad, err)
		}
	}
	e, err := client.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ResolvePolicy(ctx, "api", client.D("user", "bob")); !errors.Is(err, client.ErrNoPolicy) {
		t.Errorf("embedded ResolvePolicy = %v, want ErrNoPolicy", err)
	}
}
