package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
)

// TestPriorities: a class's reserve, on rlserver (go-redis against the server) and the
// embedded backend alike, keeps its share for the classes above, and a denied call
// waits until it fits with its reserve; redis+lua refuses a reserve; bad classes and
// an unknown name are ErrBadLimit.
func TestPriorities(t *testing.T) {
	p, err := client.NewPriorities(client.Class{Name: "critical"}, client.Class{Name: "normal", ReservePercent: 20},
		client.Class{Name: "batch", ReservePercent: 50})
	if err != nil {
		t.Fatal(err)
	}
	fleet := client.Fixed(10, time.Minute)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			be := b.open(t)
			now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
			be.setNow(t, now.UnixMicro())
			ctx := context.Background()
			allow := func(class string) client.Result {
				t.Helper()
				l, err := p.Limit(fleet, class)
				if err != nil {
					t.Fatal(err)
				}
				res, err := be.client.Allow(ctx, "fleet", l)
				if be.name == "redis+lua" {
					if !errors.Is(err, client.ErrBadLimit) {
						t.Fatalf("Lua with a reserve: %v, want ErrBadLimit", err)
					}
					t.SkipNow() // refused as it should be: nothing more to check there
				}
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			got := ""
			for _, class := range []string{"batch", "batch", "batch", "batch", "batch", "batch", "normal", "normal", "normal", "normal", "critical", "critical", "critical"} {
				if allow(class).Allowed {
					got += "1"
				} else {
					got += "0"
				}
			}
			if want := "1111101110110"; got != want {
				t.Errorf("batch×6 normal×4 critical×3: %s, want %s", got, want)
			}
			if res := allow("batch"); res.Allowed || res.RetryAfter != 30*time.Second {
				t.Errorf("batch at the limit: %+v, want denied for the 30 s left in the window", res)
			}
		})
	}
	for _, bad := range [][]client.Class{
		nil,
		{{Name: "a"}, {Name: "b", ReservePercent: 120}},
		{{Name: "a", ReservePercent: 50}, {Name: "b", ReservePercent: 20}},
		{{Name: "a"}, {Name: "a", ReservePercent: 5}},
		{{ReservePercent: 5}},
	} {
		if _, err := client.NewPriorities(bad...); !errors.Is(err, client.ErrBadLimit) {
			t.Errorf("NewPriorities(%v): %v, want ErrBadLimit", bad, err)
		}
	}
	if _, err := p.Limit(fleet, "urgent"); !errors.Is(err, client.ErrBadLimit) {
		t.Errorf("an unknown class: %v", err)
	}
	c, err := client.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Allow(context.Background(), "k", fleet.WithReserve(11)); !errors.Is(err, client.ErrBadLimit) {
		t.Errorf("a reserve above the limit: %v", err)
	}
}

// TestPrioritiesPlaces: a class's share of a concurrency limit's places, rounded up
// (at least the share is left) and never more than the places; Names in order.
func TestPrioritiesPlaces(t *testing.T) {
	p, err := client.NewPriorities(client.Class{Name: "critical"}, client.Class{Name: "normal", ReservePercent: 20},
		client.Class{Name: "batch", ReservePercent: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		places int
		class  string
		want   int
	}{{10, "critical", 0}, {10, "normal", 2}, {11, "normal", 3}, {1, "normal", 1}, {7, "batch", 7}} {
		if got, err := p.Places(tc.places, tc.class); err != nil || got != tc.want {
			t.Errorf("Places(%d, %q) = %d, %v; want %d", tc.places, tc.class, got, err, tc.want)
		}
	}
	if _, err := p.Places(10, "nobody"); !errors.Is(err, client.ErrBadLimit) {
		t.Errorf("Places of an unknown class: %v, want ErrBadLimit", err)
	}
	if got := p.Names(); len(got) != 3 || got[0] != "critical" || got[1] != "normal" || got[2] != "batch" {
		t.Errorf("Names() = %q", got)
	}
}
