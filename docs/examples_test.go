package docs_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
	"github.com/rlserver/rlserver/middleware/middlewaremetrics"
)

// The Go snippets of go-client.md, ha.md and scaling.md, so that go vet and go test
// compile them: TestGoSnippets fails when a page's snippet is not an excerpt of a Go
// file. None of these runs (no Output comment): each needs a server.

func Example_allow() {
	ctx := context.Background()
	rl, err := client.Open("redis://127.0.0.1:6380/") // or rediss://user:pass@host:6380/, Sentinel, cluster
	if err != nil {
		log.Fatal(err)
	}
	defer rl.Close()
	// Each call: the context's deadline, or else 50 ms (client.Options.Timeout); never
	// re-sent, whatever go-redis's MaxRetries (a retried call could count twice).
	res, err := rl.Allow(ctx, "user:42", client.Token(10, time.Second))
	switch {
	case errors.Is(err, client.ErrUnavailable): // down or slower than the budget: fail open or closed
	case err != nil: // ErrBadLimit, ErrWrongType: a bug to fix
	case !res.Allowed:
		time.Sleep(res.RetryAfter) // never too early
	}
}

// export runs one report export under two rate limits and a concurrency limit; it
// answers how long to wait when refused.
func export(ctx context.Context, rl *client.Client) (time.Duration, error) {
	res, err := rl.AllowAll(ctx,
		client.Rule{Key: "user:42", Limit: client.Fixed(1000, time.Hour)},
		client.Rule{Key: "ip:203.0.113.7", Limit: client.Token(20, time.Second)})
	if err != nil {
		return 0, err
	}
	if !res.Allowed { // nothing was consumed; res.Results[i] says which rule refused, for how long
		return res.Results[0].RetryAfter + res.Results[1].RetryAfter, nil
	}
	lease, err := rl.Acquire(ctx, "exports:acme", 2, time.Minute) // at most 2 at once
	if err != nil {
		return 0, err
	}
	defer lease.Release(ctx) // safe even when not acquired
	if !lease.Acquired {
		return lease.RetryAfter, nil // when the earliest lease ends
	}
	return 0, nil
}

func Example_allowAll() {
	rl, err := client.NewEmbedded()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := export(context.Background(), rl); err != nil {
		log.Fatal(err)
	}
}

func Example_fallback() {
	ctx := context.Background()
	limit := client.Token(100, time.Second)
	rl, err := client.Open("redis://127.0.0.1:6380/", client.Options{Fallback: &client.Fallback{Replicas: 4}})
	if err != nil {
		log.Fatal(err)
	}
	err = rl.Wait(ctx, "user:42", limit) // or block until allowed, as x/time/rate's Wait
	if err != nil {
		log.Fatal(err)
	}
}

func Example_slicer() {
	ctx := context.Background()
	rl, err := client.Open("redis://127.0.0.1:6380/", client.Options{Fallback: &client.Fallback{Replicas: 8}})
	if err != nil {
		log.Fatal(err)
	}
	defer rl.Close()
	slices, err := rl.NewSlicer(client.SliceOptions{}) // Replicas: the Fallback's 8
	if err != nil {
		log.Fatal(err) // client.ErrNoSlice on NewLua: Redis has no RL.SLICE
	}
	defer slices.Close() // gives back what it holds
	limit := client.Fixed(10_000, time.Second)
	res, err := slices.Allow(ctx, "tenant:acme", limit) // in-process, from a slice of the key's quota
	if err == nil && !res.Allowed {
		time.Sleep(res.RetryAfter) // the server said no unit fits before then
	}
	// The middleware decides its dimensions the same way with one option.
	lim, err := middleware.New(middleware.Config{
		Client:     rl,
		Slicer:     slices,
		User:       func(r *http.Request) string { return r.Header.Get("X-Tenant") },
		Dimensions: []middleware.Dimension{{Name: "tenant", By: middleware.ByUser, Limit: limit}},
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", lim.Handler(http.NotFoundHandler())))
}

func Example_middleware() {
	rl, err := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	search := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	lim, err := middleware.New(middleware.Config{
		Client: rl,
		User:   func(r *http.Request) string { return r.Header.Get("X-User-ID") },
		Dimensions: []middleware.Dimension{
			{Name: "ip", By: middleware.ByIP, Limit: client.GCRA(20, time.Second, 40)},
			{Name: "user", By: middleware.ByUser, Limit: client.Token(500, time.Second)},
		},
		Concurrency:    &middleware.Concurrency{Name: "inflight", By: middleware.ByUser, Limit: 4, Lease: 5 * time.Second},
		TrustedProxies: []string{"10.0.0.0/8"},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("GET /search", lim.Handler(search))
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", mux))
}

// A route's own limits on the one Limiter: /report adds its Optional dimension and
// concurrency limit to the user's and the IP's, decided in the same call.
func Example_routes() {
	rl, err := client.Open("redis://127.0.0.1:6380/")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	report := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	lim, err := middleware.New(middleware.Config{
		Client: rl,
		User:   func(r *http.Request) string { return r.Header.Get("X-User-ID") },
		Dimensions: []middleware.Dimension{
			{Name: "user", By: middleware.ByUser, Limit: client.Token(5, 10*time.Second)},
			{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(20, time.Minute)},
			{Name: "report", By: middleware.ByUser, Limit: client.Fixed(10, time.Hour), Optional: true},
		},
		Concurrency: &middleware.Concurrency{Name: "report-inflight", By: middleware.ByRoute, Limit: 2,
			Lease: 5 * time.Second, Optional: true}, // renewed while the request runs
	})
	if err != nil {
		log.Fatal(err)
	}
	reports, err := lim.With("report", "report-inflight") // an unknown name is an error here
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("GET /report", reports.Handler(report))
	mux.Handle("/", lim.Handler(app))
	prometheus.MustRegister(middlewaremetrics.New(lim, "api")) // lim's Stats, reports' included
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", mux))
}

// ha.md: the client behind Redis Sentinel, on rlserver and on Redis or Valkey.
func Example_sentinel() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "rl",
		SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
		Password:      "S3CRET",
	})
	limiter, err := client.New(rdb, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = limiter
}

func Example_sentinelLua() {
	addrs := []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: addrs})
	limiter, err := client.NewLua(rdb)
	if err != nil {
		log.Fatal(err)
	}
	_ = limiter
}

// scaling.md: the client on a cluster of rlserver nodes.
func Example_cluster() {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6380", "10.0.0.2:6380", "10.0.0.3:6380"},
	})
	rl, err := client.New(cc)
	if err != nil {
		log.Fatal(err)
	}
	_ = rl
}
