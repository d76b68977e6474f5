package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// overheadResult is overhead.json.
type overheadResult struct {
	Requests int           `json:"max_requests"`
	Rows     []overheadRow `json:"rows"`
}

// overheadRow is one endpoint's latency, and its p50 above the bare endpoint's.
type overheadRow struct {
	Endpoint   string  `json:"endpoint"`
	Requests   int     `json:"requests"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	AddedP50Ms float64 `json:"added_p50_ms"`
	Lesson     string  `json:"lesson"`
}

// runOverhead times an HTTP endpoint on loopback bare, then behind the middleware
// on each side (one per-IP token bucket no run exhausts, so every request is
// checked and served), one request at a time on a kept-alive connection, at most
// -requests requests or -cell-time each.
func runOverhead(ctx context.Context, cfg config, e *env, w io.Writer) (any, error) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	res := overheadResult{Requests: cfg.requests}
	bare, err := timeEndpoint(ctx, cfg, hello)
	if err != nil {
		return nil, fmt.Errorf("bare: %w", err)
	}
	res.Rows = append(res.Rows, overheadRow{"bare", int(bare.total), bare.quantile(0.5), bare.quantile(0.95), bare.quantile(0.99), 0, "-"})
	for _, tg := range e.targets {
		h, err := behindMiddleware(ctx, cfg, tg, hello)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tg.name, err)
		}
		row := overheadRow{"middleware, " + tg.name, int(h.total), h.quantile(0.5), h.quantile(0.95), h.quantile(0.99), 0, "+0.04"}
		if !tg.script {
			row.Lesson = "-"
		}
		row.AddedP50Ms = row.P50Ms - res.Rows[0].P50Ms
		res.Rows = append(res.Rows, row)
	}
	fmt.Fprintf(w, "HTTP GET on loopback, one at a time, at most %d requests or %v per endpoint:\n", cfg.requests, cfg.cellTime)
	t := newTable("endpoint", "requests", "p50 ms", "p95 ms", "p99 ms", "added p50 ms", "lesson added p50")
	for _, r := range res.Rows {
		t.row(r.Endpoint, strconv.Itoa(r.Requests), ms(r.P50Ms), ms(r.P95Ms), ms(r.P99Ms), ms(r.AddedP50Ms), r.Lesson)
	}
	t.write(w)
	return res, nil
}

// behindMiddleware times next behind the middleware deciding on tg.
func behindMiddleware(ctx context.Context, cfg config, tg target, next http.Handler) (*histogram, error) {
	// Deadlines honoured by go-redis too: a stalled server's connection is given up.
	rdb := redis.NewClient(&redis.Options{Addr: tg.addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	c, err := client.New(rdb)
	if tg.script {
		c, err = client.NewLua(rdb)
	}
	if err != nil {
		return nil, err
	}
	lim, err := middleware.New(middleware.Config{
		Client:     c,
		Dimensions: []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Token(1_000_000_000, time.Second)}},
		Prefix:     fmt.Sprintf("overhead:%d:", time.Now().UnixNano()),
		FailClosed: true, // a failing limiter answers 429, which timeEndpoint reports
	})
	if err != nil {
		return nil, err
	}
	return timeEndpoint(ctx, cfg, lim.Handler(next))
}

// timeEndpoint serves h on loopback and times GETs to it until the count or the
// time is spent; any answer but 200 is an error.
func timeEndpoint(ctx context.Context, cfg config, h http.Handler) (*histogram, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	var hist histogram
	for deadline := time.Now().Add(cfg.cellTime); int(hist.total) < cfg.requests && time.Now().Before(deadline); {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		hist.record(time.Since(start), 1)
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New("endpoint answered " + resp.Status)
		}
	}
	return &hist, nil
}
