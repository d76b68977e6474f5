package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestFallbackOptions: a bad Fallback is refused at construction, in plain words.
func TestFallbackOptions(t *testing.T) {
	rdb := newRedis(t, testenv.DeadAddr(t))
	for _, c := range []struct {
		f    client.Fallback
		want string
	}{
		{client.Fallback{}, "Fallback.Replicas must be at least 1"},
		{client.Fallback{Replicas: -2}, "Fallback.Replicas must be at least 1"},
		{client.Fallback{Replicas: 2, Failures: -1}, "Fallback.Failures must be at least 1"},
		{client.Fallback{Replicas: 2, Backoff: -time.Second}, "must not be negative"},
		{client.Fallback{Replicas: 2, Backoff: time.Second, MaxBackoff: time.Millisecond}, "Fallback.MaxBackoff (1ms) is below Backoff (1s)"},
	} {
		for _, construct := range constructors {
			if _, err := construct(rdb, client.Options{Fallback: &c.f}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.f, err, c.want)
			}
		}
	}
}

// TestFallbackDeadServer: with the server down, every call is decided locally at the
// replica's share, reports Degraded, and returns no error.
func TestFallbackDeadServer(t *testing.T) {
	ctx := context.Background()
	for _, construct := range constructors {
		c, err := construct(newRedis(t, testenv.DeadAddr(t)), client.Options{Fallback: &client.Fallback{Replicas: 4}})
		if err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for range 40 {
			res, err := c.Allow(ctx, "user:1", client.Log(100, time.Hour))
			if err != nil || !res.Degraded {
				t.Fatalf("Allow: %+v, %v; want a degraded decision", res, err)
			}
			if res.Allowed {
				admitted++
			}
		}
		if admitted != 25 {
			t.Errorf("a limit of 100 over 4 replicas admitted %d locally, want 25", admitted)
		}
		all, err := c.AllowAll(ctx, client.Rule{Key: "a", Limit: client.Fixed(10, time.Minute)},
			client.Rule{Key: "b", Limit: client.Fixed(3, time.Minute)})
		if err != nil || !all.Degraded || !all.Allowed || all.Results[1].Limit != 1 || !all.Results[0].Degraded {
			t.Errorf("AllowAll: %+v, %v", all, err)
		}
		lease, err := c.Acquire(ctx, "jobs", 2, time.Minute)
		if err != nil || !lease.Degraded || !lease.Acquired || lease.Limit != 1 {
			t.Fatalf("Acquire: %+v, %v", lease, err)
		}
		if again, _ := c.Acquire(ctx, "jobs", 2, time.Minute); again.Acquired {
			t.Error("a second lease of a local share of 1")
		}
		if err := lease.Release(ctx); err != nil {
			t.Error(err)
		}
		if again, _ := c.Acquire(ctx, "jobs", 2, time.Minute); !again.Acquired {
			t.Error("the released local lease was not given back")
		}
		if err := c.Wait(ctx, "wait", client.Token(8, time.Second)); err != nil {
			t.Error(err)
		}
	}
}

// TestFallbackCallerCancel: a caller who cancels gets its error, not a local decision.
func TestFallbackCallerCancel(t *testing.T) {
	c, err := client.New(newRedis(t, testenv.StalledAddr(t)), client.Options{Timeout: time.Second, Fallback: &client.Fallback{Replicas: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if res, err := c.Allow(ctx, "k", client.Fixed(1, time.Second)); !errors.Is(err, context.Canceled) || !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("cancelled call: %+v, %v", res, err)
	}
}

// killable is an in-process rlserver on a fixed address, to be killed and started again.
type killable struct {
	addr string
	srv  *resp.Server
	done chan error
}

func (k *killable) start(t *testing.T) {
	t.Helper()
	srv, err := resp.NewServer(resp.Config{Config: core.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", k.addr)
	if err != nil {
		t.Fatal(err)
	}
	k.addr, k.srv, k.done = ln.Addr().String(), srv, make(chan error, 1)
	go func() { k.done <- srv.Serve(ln) }()
}

func (k *killable) kill() {
	k.srv.Close()
	<-k.done
}

// TestFallbackServerKilled kills the server under load: within 100 ms every decision is
// local, each whole second of the outage admits exactly the replica's share of a
// fixed window, no call outlasts its budget by much, and when the server is back,
// decisions return to it within a second.
func TestFallbackServerKilled(t *testing.T) {
	const (
		limit    = 1000 // per second, in fixed windows: exact whatever the load's timing
		replicas = 2
		budget   = 50 * time.Millisecond
	)
	k := &killable{addr: "127.0.0.1:0"}
	k.start(t)
	defer func() { k.kill() }()
	c, err := client.New(newRedis(t, k.addr), client.Options{Timeout: budget,
		Fallback: &client.Fallback{Replicas: replicas, MaxBackoff: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		events   []event
		slowest  time.Duration
		stop     atomic.Bool
		workers  sync.WaitGroup
		killedAt atomic.Int64
	)
	for range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for !stop.Load() {
				start := time.Now()
				res, err := c.Allow(context.Background(), "shared", client.Fixed(limit, time.Second))
				end := time.Now()
				if err != nil {
					t.Errorf("Allow: %v", err)
					return
				}
				mu.Lock()
				events = append(events, event{start: start, end: end, allowed: res.Allowed, degraded: res.Degraded})
				if k := killedAt.Load(); k != 0 && start.UnixNano() > k {
					slowest = max(slowest, end.Sub(start))
				}
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	k.kill()
	time.Sleep(2200 * time.Millisecond) // holds at least one whole second
	restarted := time.Now()
	k.start(t)
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	workers.Wait()

	// From 100 ms after the kill to the restart every decision is local; each whole
	// second in between admits exactly limit/replicas, less the calls that straddled
	// its edges (decided in a second they did not start in), never more.
	from := killed.Add(100 * time.Millisecond)
	type second struct{ admitted, straddled, calls int }
	seconds := map[int64]*second{}
	for _, e := range events {
		if e.start.Before(from) || !e.end.Before(restarted) {
			continue
		}
		if !e.degraded {
			t.Fatalf("a decision %v after the kill was not local", e.start.Sub(killed))
		}
		for _, at := range []int64{e.start.Unix(), e.end.Unix()} {
			if seconds[at] == nil {
				seconds[at] = &second{}
			}
		}
		switch sec := seconds[e.start.Unix()]; {
		case e.end.Unix() != e.start.Unix():
			sec.straddled++
			seconds[e.end.Unix()].straddled++
		case e.allowed:
			sec.admitted++
			sec.calls++
		default:
			sec.calls++
		}
	}
	whole := 0
	for at, sec := range seconds {
		if time.Unix(at, 0).Before(from) || time.Unix(at+1, 0).After(restarted) {
			continue // not a whole second of the outage
		}
		whole++
		want := limit / replicas
		if sec.admitted > want || sec.admitted < want-sec.straddled {
			t.Errorf("second %d of the outage admitted %d locally (%d calls, %d straddling), want %d",
				at, sec.admitted, sec.calls, sec.straddled, want)
		}
		t.Logf("second %d: %d admitted of %d calls", at, sec.admitted, sec.calls)
	}
	if whole == 0 {
		t.Error("no whole second within the outage")
	}
	// The bound catches a call held by go-redis's dial retries or read timeout
	// (seconds); the slack is for a loaded machine's scheduling.
	if most := budget + 250*time.Millisecond; slowest > most {
		t.Errorf("a call took %v after the kill, past the budget of %v (and slack)", slowest, budget)
	}
	back := time.Duration(-1)
	for _, e := range events {
		if !e.degraded && e.start.After(restarted) {
			back = e.start.Sub(restarted)
			break
		}
	}
	if back < 0 || back > time.Second {
		t.Errorf("decisions returned to the server %v after its restart, want within 1 s", back)
	}
	t.Logf("slowest call after the kill %v; back on the server after %v", slowest, back)
}

// event is one decision of TestFallbackServerKilled.
type event struct {
	start, end        time.Time
	allowed, degraded bool
}
