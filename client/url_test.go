package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestOpen: a Client opened from a URL decides on the rlserver it names; Close closes
// its go-redis client, after which calls fail with ErrUnavailable.
func TestOpen(t *testing.T) {
	addr := testenv.StartServer(t, resp.Config{})
	c, err := client.Open("redis://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range []bool{true, true, false} {
		res, err := c.Allow(ctx, "open", client.Fixed(2, time.Hour))
		if err != nil || res.Allowed != want {
			t.Fatalf("call %d: %+v, %v; want allowed %v", i+1, res, err, want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Allow(ctx, "open", client.Fixed(2, time.Hour)); err == nil {
		t.Error("a call after Close: no error")
	}
	if _, err := client.Open("redis://" + addr + "/?dial_timeout=soon"); err == nil {
		t.Error("Open with a bad dial_timeout: no error")
	}
}
