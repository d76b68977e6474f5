// Command httpapp is the app of the Redis + Lua rate-limiting lab that
// docs/experiments.md reproduces (the README's "lesson"): /fast answers at once, /limited answers
// behind the rate limiter, 500 requests a second per user (?user=) and twice that per
// client IP, so that its 429s and headers can be watched with curl:
//
//	go run ./cmd/rlserver &                              # rlserver on 127.0.0.1:6380
//	go run ./examples/httpapp -limiter 127.0.0.1:6380
//	curl -si "localhost:3001/limited?user=drain2"
//
// /report is a slow route (-report-delay) with limits of its own on top of those, from
// the same Limiter (Limiter.With): -report-rate a minute per user, and at most 2 in
// flight at once, their places renewed while they run so that a refused client is
// told when a place will really free. /healthz bypasses the limiter and shows its
// counts.
//
// -backend redis runs the same limits on plain Redis or Valkey through the Lua scripts
// (-limiter 127.0.0.1:6379; several comma-separated addresses for a Redis Cluster),
// -backend embedded in-process, with no server at all (limits then hold per process).
//
// When the limiter fails, -fallback says what to do: open (serve), closed (429), or
// local: go on limiting in-process at this replica's share, the limits divided by
// -replicas, the number of app replicas sharing them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// config is what the flags set.
type config struct {
	addr       string
	backend    string
	limiter    string
	rate       int
	timeout    time.Duration
	failClosed bool
	fallback   string
	replicas   int
	trusted    string
	reportRate int           // /report's requests a minute per user
	delay      time.Duration // how long /report works
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:3001", "address to serve HTTP on")
	flag.StringVar(&cfg.backend, "backend", "rlserver", "where limits are decided: rlserver, redis (Lua scripts) or embedded")
	flag.StringVar(&cfg.limiter, "limiter", "127.0.0.1:6380", "the backend's address; comma-separated addresses for a Redis Cluster")
	flag.IntVar(&cfg.rate, "rate", 500, "requests per second per user on /limited (per IP: twice that)")
	flag.DurationVar(&cfg.timeout, "timeout", middleware.DefaultTimeout, "limiter budget per request")
	flag.BoolVar(&cfg.failClosed, "fail-closed", false, "refuse requests (429) when the limiter fails: -fallback closed")
	flag.StringVar(&cfg.fallback, "fallback", "open", "when the limiter fails: open (serve), closed (429) or local (limit in-process at 1/-replicas)")
	flag.IntVar(&cfg.replicas, "replicas", 1, "app replicas sharing the limits: -fallback local limits each to its share")
	flag.StringVar(&cfg.trusted, "trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed")
	flag.IntVar(&cfg.reportRate, "report-rate", 10, "requests a minute per user on /report, besides the per-user and per-IP limits")
	flag.DurationVar(&cfg.delay, "report-delay", 2*time.Second, "how long a /report request works (at most 2 at once)")
	flag.Parse()

	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "httpapp:", err)
		os.Exit(1)
	}
}

// fallbacks are -fallback's words.
var fallbacks = map[string]middleware.Fallback{"open": middleware.FallbackOpen, "closed": middleware.FallbackClosed,
	"local": middleware.FallbackLocal}

func run(cfg config) error {
	c, closeBackend, err := newClient(cfg)
	if err != nil {
		return err
	}
	defer closeBackend()
	app, _, err := newApp(c, cfg, slowReport(cfg.delay))
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: cfg.addr, Handler: app, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	slog.Info("httpapp listening", "addr", cfg.addr, "backend", cfg.backend, "limiter", cfg.limiter, "rate", cfg.rate)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newClient connects to the backend; the returned func closes the connection.
func newClient(cfg config) (*client.Client, func(), error) {
	backend, addrs := cfg.backend, cfg.limiter
	if _, ok := fallbacks[cfg.fallback]; !ok {
		return nil, nil, fmt.Errorf("-fallback %q: want open, closed or local", cfg.fallback)
	}
	if cfg.replicas < 1 {
		return nil, nil, fmt.Errorf("-replicas %d: want at least 1", cfg.replicas)
	}
	if backend == "embedded" {
		if cfg.fallback == "local" {
			return nil, nil, errors.New("-fallback local is for a server backend: -backend embedded decides in-process already")
		}
		c, err := client.NewEmbedded(client.EmbeddedOptions{})
		return c, func() {}, err
	}
	if backend != "rlserver" && backend != "redis" {
		return nil, nil, fmt.Errorf("-backend %q: want rlserver, redis or embedded", backend)
	}
	var opts client.Options
	if cfg.fallback == "local" {
		opts.Fallback = &client.Fallback{Replicas: cfg.replicas}
	}
	// Several addresses make a cluster client.
	first, more, _ := strings.Cut(addrs, ",")
	if backend == "rlserver" {
		url := "redis://" + first + "/"
		if more != "" {
			url = "redis://" + first + "?addr=" + strings.ReplaceAll(more, ",", "&addr=")
		}
		c, err := client.Open(url, opts)
		if err != nil {
			return nil, nil, err
		}
		return c, func() { c.Close() }, nil
	}
	// go-redis's defaults: the Client keeps its calls within the middleware's budget
	// and never lets go-redis re-send one.
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addrs, ",")})
	c, err := client.NewLua(rdb, client.LuaOptions{Options: opts})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return c, func() { rdb.Close() }, nil
}

// newApp is the lab's app: /fast without a limiter, /limited behind one, /report
// behind the same one with its own limits added, and /healthz. The Limiter is
// returned for its Stats.
func newApp(c *client.Client, cfg config, report http.Handler) (http.Handler, *middleware.Limiter, error) {
	var trusted []string
	if cfg.trusted != "" {
		trusted = strings.Split(cfg.trusted, ",")
	}
	lim, err := middleware.New(middleware.Config{
		Client: c,
		Dimensions: []middleware.Dimension{
			{Name: "user", By: middleware.ByUser, Limit: client.Token(cfg.rate, time.Second)},
			{Name: "ip", By: middleware.ByIP, Limit: client.Token(2*cfg.rate, time.Second)},
			{Name: "report", By: middleware.ByUser, Limit: client.Token(cfg.reportRate, time.Minute), Optional: true},
		},
		Concurrency: &middleware.Concurrency{Name: "report-inflight", By: middleware.ByRoute, Limit: 2,
			Lease: 5 * time.Second, Optional: true}, // renewed every second while a /report runs
		User:           func(r *http.Request) string { return r.URL.Query().Get("user") },
		TrustedProxies: trusted,
		Timeout:        cfg.timeout,
		FailClosed:     cfg.failClosed,
		Fallback:       fallbacks[cfg.fallback],
	})
	if err != nil {
		return nil, nil, err
	}
	reports, err := lim.With("report", "report-inflight")
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /fast", hello)
	mux.Handle("GET /limited", lim.Handler(hello))
	mux.Handle("GET /report", reports.Handler(report))
	// Behind the Limiter, and yet never limited: /healthz is one of its HealthPaths.
	mux.Handle("GET /healthz", lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := lim.Stats()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"allowed":%d,"limited":%d,"busy":%d,"failed":%d,"degraded":%d}`,
			st.Allowed, st.Limited, st.Busy, st.Failed, st.Degraded)
	})))
	return mux, lim, nil
}

// hello answers {"ok":true}.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
})

// slowReport is /report: hello, after working for delay (or until the client leaves).
func slowReport(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
			hello.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}
