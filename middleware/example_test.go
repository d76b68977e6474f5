package middleware_test

import (
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// A Go service limited by the policy its gateway asks /check about
// (/check?domain=edge&descriptor=remote_address): the snippet of docs/gateway.md.
func ExampleConfig_policy() {
	rl, err := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	if err != nil {
		log.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{
		Client:         rl,
		TrustedProxies: []string{"10.0.0.0/8"},
		Policy:         &middleware.Policy{Domain: "edge", Descriptors: []string{"remote_address"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	log.Fatal(http.ListenAndServe(":8000", lim.Handler(app)))
}

// frozen is a clock that never moves, so that the examples' output is repeatable.
// Leave EmbeddedOptions.Clock nil for the real time.
func frozen() time.Time { return time.Unix(1_750_000_020, 0) }

// A route's own limit on the one Limiter: /report is limited by the user's, the IP's
// and its own limit, decided in one call, and a refusal shows the refusing limit's
// figures only. An embedded client, for the example to run; client.Open on rlserver.
func ExampleLimiter_With() {
	rl, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{
		Client: rl,
		User:   func(r *http.Request) string { return r.Header.Get("X-User") },
		Dimensions: []middleware.Dimension{
			{Name: "user", By: middleware.ByUser, Limit: client.Token(5, 10*time.Second)},
			{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(20, time.Minute)},
			{Name: "report", By: middleware.ByUser, Limit: client.Fixed(1, 30*time.Second), Optional: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	report, err := lim.With("report") // a name that is no Optional dimension: an error here
	if err != nil {
		log.Fatal(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux := http.NewServeMux()
	mux.Handle("GET /report", report.Handler(app))
	mux.Handle("/", lim.Handler(app))

	for _, path := range []string{"/report", "/report", "/home"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("X-User", "alice")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		// The refusal's Retry-After is 30 s spread by up to a second: 30 or 31.
		fmt.Printf("%s %d RateLimit: %s\n", path, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// /report 200 RateLimit: "user";r=4;t=2, "ip";r=19;t=60, "report";r=0;t=30
	// /report 429 RateLimit: "report";r=0;t=30
	// /home 200 RateLimit: "user";r=3;t=4, "ip";r=18;t=60
}

// The fallback modes, with the limiter down (its address refuses connections). Open
// serves, closed refuses with a wait of a second, local goes on limiting in-process at
// this replica's share (here 1 of 2 replicas: 2 of the limit's 4). In every mode a
// circuit breaker stops calling the dead limiter after a few failures, so that the
// outage costs one timeout per pause, not one per request.
func ExampleFallback() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	down := "redis://" + ln.Addr().String() + "/"
	ln.Close()

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	for _, mode := range []middleware.Fallback{middleware.FallbackOpen, middleware.FallbackClosed, middleware.FallbackLocal} {
		var opts client.Options
		if mode == middleware.FallbackLocal {
			opts.Fallback = &client.Fallback{Replicas: 2} // what deciding locally needs
		}
		rl, err := client.Open(down, opts)
		if err != nil {
			log.Fatal(err)
		}
		lim, err := middleware.New(middleware.Config{
			Client:     rl,
			Fallback:   mode,
			Logger:     slog.New(slog.DiscardHandler), // a line per LogInterval, else
			Dimensions: []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Token(4, time.Hour)}},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(mode, ":")
		for range 3 {
			rec := httptest.NewRecorder()
			lim.Handler(app).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			// A 429's Retry-After: closed, a second; local, the 1,800 s until this
			// replica's share has a token again; each spread by up to a tenth (at
			// most a second), so not printed here.
			fmt.Print(" ", rec.Code)
		}
		fmt.Println()
		rl.Close()
	}
	// Output:
	// open: 200 200 200
	// closed: 429 429 429
	// local: 200 200 429
}
