package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

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

// goRedisLines counts what go-redis logs to its process-wide logger.
type goRedisLines struct{ n atomic.Int64 }

func (g *goRedisLines) Printf(context.Context, string, ...any) { g.n.Add(1) }

// TestOpenQuietWhileDown: while its server is down, Open's client leads go-redis to
// log one line, the first failed dial, however many calls meet the outage, each
// failing with the dial's error; a server back on the address answers the next
// call, and the next outage is one line again. Each call is sent on its own
// (Batch.Off), from 16 goroutines at once once the first dial has failed.
func TestOpenQuietWhileDown(t *testing.T) {
	var lines goRedisLines
	redis.SetLogger(&lines) // this test binary's go-redis clients, for this test only
	t.Cleanup(logging.Enable)
	addr := testenv.DeadAddr(t)
	c, err := client.Open("redis://"+addr+"/", client.Options{Batch: client.Batch{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	down := func(outage int) {
		t.Helper()
		before := lines.n.Load()
		call := func() error {
			_, err := c.Allow(ctx, "k", client.Fixed(1000, time.Hour))
			if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, io.EOF) {
				t.Errorf("outage %d: %v, want ErrUnavailable wrapping ECONNREFUSED, or EOF on a connection the outage broke", outage, err)
			}
			return err
		}
		call()
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 50 {
					call()
				}
			})
		}
		wg.Wait()
		if err := call(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("outage %d: %v once the calls are over, want the dial's ECONNREFUSED", outage, err)
		}
		if n := lines.n.Load() - before; n > 1 {
			t.Errorf("outage %d: go-redis logged %d lines for 802 calls, want at most 1", outage, n)
		}
	}
	up := func() func() {
		t.Helper()
		var cfg resp.Config
		cfg.Logger = slog.New(slog.DiscardHandler)
		srv, err := resp.NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		if _, err := c.Allow(ctx, "k", client.Fixed(1000, time.Hour)); err != nil {
			t.Fatalf("with the server back: %v", err)
		}
		return func() { srv.Close() }
	}
	down(1)
	stop := up()
	stop()
	down(2)
	up()()
}
